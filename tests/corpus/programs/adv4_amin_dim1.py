"""See _adv4.py."""
from _adv4 import make_build

build = make_build('amin', 'dim1')
