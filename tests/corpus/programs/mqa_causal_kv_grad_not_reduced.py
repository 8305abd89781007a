"""See _attn.py."""
from _attn import make_build

build = make_build('mqa', bug='kv_grad_not_reduced')
