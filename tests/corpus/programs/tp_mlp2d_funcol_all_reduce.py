"""See _tp_mlp.py."""
from _tp_mlp import make_build

build = make_build((5,), 6, 8, bug='funcol_all_reduce')
