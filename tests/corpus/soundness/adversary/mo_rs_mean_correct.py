"""CORRECT: the ranks' [F, F] means of the rows' outer products reduce-scattered (sum) along the
rows, then divided by the world size: each rank holds its rows of the batch mean (ZeRO-style)."""
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from _mean_programs import program


build = program(lambda x: x.t() @ x / x.shape[0],
                lambda x, s: funcol.reduce_scatter_tensor(x.t() @ x / x.shape[0], "sum", 0, dist.group.WORLD) / s.ws,
                rows=8, cols=4)
