"""WRONG: uneven shards (4 and 2 rows): the ranks' means all-reduced with AVG (a mean of means)."""
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from _mean_programs import program


build = program(lambda x: x.mean(0),
                lambda x, s: funcol.all_reduce(x.mean(0), "avg", dist.group.WORLD), rows=[4, 2])     # BUG: uneven
