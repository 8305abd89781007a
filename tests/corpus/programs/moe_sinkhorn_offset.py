"""See _moe_sinkhorn.py."""
from _moe_sinkhorn import make_build

build = make_build(bug='offset')
