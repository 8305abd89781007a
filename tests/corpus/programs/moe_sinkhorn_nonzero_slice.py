"""See _moe_sinkhorn.py: Megatron's nonzero dispatch, bug ``slice``."""
from _moe_sinkhorn import make_build

build = make_build(bug="slice", dispatch="nonzero")
