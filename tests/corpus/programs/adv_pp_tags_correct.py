"""See _adv_pp.py."""
from _adv_pp import make_build

build = make_build('tags')
