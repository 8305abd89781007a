"""WRONG: integer counts; each rank's FLOOR mean of its rows (an int), then the floor means
true-divided over the ranks (all-reduce, / world size): the rows' fractions are lost."""
import torch

from _mean_programs import program, world_sum


def floor_mean(x):
    """The floor of the mean of x's rows (an int)."""
    return torch.div(x.sum(0), x.shape[0], rounding_mode="floor")


build = program(lambda x: x.sum(0) / 8,
                lambda x, s: world_sum(floor_mean(x)) / s.ws, rows=8, ints=True)     # BUG: an int mean
