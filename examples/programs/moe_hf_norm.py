"""See _moe_hf.py, bug ``norm``."""
from _moe_hf import make_build

build = make_build(bug="norm")
