"""See _attn.py."""
from _attn import make_build

build = make_build('mqa')
