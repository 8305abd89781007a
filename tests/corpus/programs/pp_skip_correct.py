"""See _pp.py."""
from _pp import make_build

build = make_build('skip')
