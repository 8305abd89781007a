"""See _mesh.py."""
from _mesh import make_build

build = make_build(bug='dp_group')
