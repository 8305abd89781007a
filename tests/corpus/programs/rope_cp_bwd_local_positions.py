"""See _rope.py."""
from _rope import make_build

build = make_build(bug='bwd_local_positions')
