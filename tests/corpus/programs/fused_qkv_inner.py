"""See _fused_qkv.py."""
from _fused_qkv import make_build

build = make_build("inner")
