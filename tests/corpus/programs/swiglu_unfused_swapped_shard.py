"""See _swiglu.py."""
from _swiglu import make_build

build = make_build('unfused', bug='swapped_up_shard')
