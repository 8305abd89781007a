"""See _attn.py: MQA on 4 ranks, one query head per rank; the KV gradient is never all-reduced."""
from _attn import make_build

build = make_build('mqa', bug='kv_grad_not_reduced')
