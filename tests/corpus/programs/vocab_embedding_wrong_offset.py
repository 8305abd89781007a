"""See _vocab.py."""
from _vocab import make_build

build = make_build('embed', bug='wrong_offset')
