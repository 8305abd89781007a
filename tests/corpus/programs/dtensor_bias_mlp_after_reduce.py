"""See _dtensor.py."""
from _dtensor import make_build

build = make_build("mlp", bug="bias_after_reduce", bias=True, local=True)
