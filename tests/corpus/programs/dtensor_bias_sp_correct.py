"""See _dtensor.py."""
from _dtensor import make_build

build = make_build("sp", bias=True)
