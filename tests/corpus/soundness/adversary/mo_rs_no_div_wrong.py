"""WRONG: the ranks' [F, F] means reduce-scattered, never divided by the world size."""
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from _mean_programs import program


# BUG: / world size missing
build = program(lambda x: x.t() @ x / x.shape[0],
                lambda x, s: funcol.reduce_scatter_tensor(x.t() @ x / x.shape[0], "sum", 0, dist.group.WORLD),
                rows=8, cols=4)
