"""See _moe_sinkhorn.py: Megatron's nonzero dispatch, bug ``router_grad``."""
from _moe_sinkhorn import make_build

build = make_build(bug="router_grad", dispatch="nonzero")
