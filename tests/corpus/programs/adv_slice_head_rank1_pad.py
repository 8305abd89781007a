"""See _adv_slice.py."""
from _adv_slice import head_part, make_build

build = make_build('head', bug='rank1_pad')
GLOO_DERIVE = {"param:w_up": head_part}
