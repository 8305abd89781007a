"""See _adv_slice.py."""
from _adv_slice import tail_part, make_build

build = make_build('tail', bug='head_read')
GLOO_DERIVE = {"param:w_up": tail_part}
