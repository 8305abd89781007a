"""See _adv3.py."""
from _adv3 import make_build

build = make_build('emb', bug='neg_off')
