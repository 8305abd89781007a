"""CORRECT twin: the ranks' column maxima all-reduced with max."""
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from _mean_programs import program


build = program(lambda x: x.amax(0),
                lambda x, s: funcol.all_reduce(x.amax(0), "max", dist.group.WORLD))
