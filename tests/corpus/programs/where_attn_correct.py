"""See _where.py."""
from _where import make_build

build = make_build("attn")
