"""See _loss_pad.py."""
from _loss_pad import make_build

build = make_build()
