"""See _grad_accum.py."""
from _grad_accum import make_build

build = make_build()
