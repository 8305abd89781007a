"""See _ddp.py."""
from _ddp import make_build

build = make_build(uneven=True)
