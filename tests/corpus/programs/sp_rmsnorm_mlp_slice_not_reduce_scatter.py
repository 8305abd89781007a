"""See _sp_norm.py."""
from _sp_norm import make_build

build = make_build('rmsnorm', bug='slice_not_reduce_scatter')
