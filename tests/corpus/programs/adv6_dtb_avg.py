"""See _adv6.py."""
from _adv6 import make_build

build = make_build('dtb', 'avg')
