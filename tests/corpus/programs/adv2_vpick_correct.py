"""See _adv2.py."""
from _adv2 import make_build

build = make_build('vpick')
