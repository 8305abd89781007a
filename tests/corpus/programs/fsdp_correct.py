"""See _fsdp.py."""
from _fsdp import make_build

build = make_build()
