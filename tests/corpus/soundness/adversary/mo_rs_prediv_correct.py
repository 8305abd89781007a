"""CORRECT: the ranks' [F, F] means divided by the world size, then reduce-scattered."""
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from _mean_programs import program


build = program(lambda x: x.t() @ x / x.shape[0],
                lambda x, s: funcol.reduce_scatter_tensor(x.t() @ x / x.shape[0] / s.ws, "sum", 0, dist.group.WORLD),
                rows=8, cols=4)
