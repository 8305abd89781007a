"""See _swiglu.py."""
from _swiglu import _fused_part, make_build

build = make_build('fused')
GLOO_DERIVE = {"param:w_gate_up": _fused_part}
