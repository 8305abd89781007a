"""See _adv5.py."""
from _adv5 import make_build

build = make_build('inpl', 'narrow')
