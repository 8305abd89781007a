"""WRONG: the ranks' row SUMS all-reduced with AVG (the mean over ranks of the sums is not the
mean over rows)."""
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from _mean_programs import program


build = program(lambda x: x.mean(0),
                lambda x, s: funcol.all_reduce(x.sum(0), "avg", dist.group.WORLD))     # BUG: sums, not means
