"""See _dp.py."""
from _dp import make_build

build = make_build(bug='grad_sum')
