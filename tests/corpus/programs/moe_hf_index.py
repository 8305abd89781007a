"""See _moe_hf.py, bug ``index``."""
from _moe_hf import GLOO_TOL, make_build  # noqa: F401 - read by run_gloo.py

build = make_build(bug="index")
