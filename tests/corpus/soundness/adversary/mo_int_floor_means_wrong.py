"""WRONG: integer counts split along the rows; each rank's FLOOR mean of its rows (an int), the
ranks' floor means all-reduced and floor-divided by the world size: the floor of floors is not
the floor mean over the batch."""
import torch

from _mean_programs import program, world_sum


def floor_mean(x):
    """The floor of the mean of x's rows (an int)."""
    return torch.div(x.sum(0), x.shape[0], rounding_mode="floor")


build = program(floor_mean,
                lambda x, s: torch.div(world_sum(floor_mean(x)), s.ws, rounding_mode="floor"), rows=8, ints=True)     # BUG
