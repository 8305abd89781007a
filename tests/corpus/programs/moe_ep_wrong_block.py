"""See _moe.py."""
from _moe import make_build

build = make_build(bug='wrong_block')
