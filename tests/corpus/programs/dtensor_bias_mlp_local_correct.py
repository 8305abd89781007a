"""See _dtensor.py."""
from _dtensor import make_build

build = make_build("mlp", bias=True, local=True)
