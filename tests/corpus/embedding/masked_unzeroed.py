"""See _masked.py."""
from _masked import make_build

build = make_build('unzeroed')
