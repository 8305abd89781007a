"""See _swiglu.py."""
from _swiglu import _fused_t_part, make_build

build = make_build('fused_t', bug='swapped_halves')
GLOO_DERIVE = {"param:w_gate_up": _fused_t_part}
