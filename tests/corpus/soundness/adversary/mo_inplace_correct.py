"""CORRECT: the ranks' means all-reduced in place (dist.all_reduce), then divided in place by the
world size."""
import torch.distributed as dist

from _mean_programs import program


def ranks(x, s):
    m = x.mean(0).clone()
    dist.all_reduce(m)
    m.div_(s.ws)
    return m


build = program(lambda x: x.mean(0), ranks)
