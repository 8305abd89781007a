"""See _dtensor.py."""
from _dtensor import make_build

build = make_build("sp", bug="bias_every_rank", bias=True, local=True)
