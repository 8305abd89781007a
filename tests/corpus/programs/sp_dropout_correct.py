"""See _sp_dropout.py."""
from _sp_dropout import make_build

build = make_build()
