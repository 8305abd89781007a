"""See _row_parallel.py."""
from _row_parallel import make_build

build = make_build("gloo_group")
