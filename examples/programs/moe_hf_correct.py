"""See _moe_hf.py."""
from _moe_hf import make_build

build = make_build()
