"""See _uneven.py."""
from _uneven import make_build

build = make_build()
