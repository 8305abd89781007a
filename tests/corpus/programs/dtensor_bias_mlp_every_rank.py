"""See _dtensor.py."""
from _dtensor import make_build

build = make_build("mlp", bug="bias_every_rank", bias=True, local=True)
