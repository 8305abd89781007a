"""See _moe_hf.py, bug ``offset``."""
from _moe_hf import make_build

build = make_build(bug="offset")
