"""See _cp_attn.py."""
from _cp_attn import make_build

build = make_build(bug='local_mask')
