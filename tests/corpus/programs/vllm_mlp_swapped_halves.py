"""See _vllm.py."""
from _vllm import make_build

build = make_build("swapped_halves")
