"""See _attn.py: MQA on 4 ranks, one query head per rank (the KV head expanded over one head)."""
from _attn import make_build

build = make_build('mqa')
