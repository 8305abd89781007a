"""See _moe_sinkhorn.py: Megatron's nonzero dispatch, bug ``offset``."""
from _moe_sinkhorn import make_build

build = make_build(bug="offset", dispatch="nonzero")
