"""See _attn.py."""
from _attn import make_build

build = make_build('gqa', bug='x_grad_not_reduced')
