"""See _attn_bwd.py."""
from _attn_bwd import make_build

build = make_build()
