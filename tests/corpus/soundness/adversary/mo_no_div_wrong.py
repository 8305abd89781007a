"""WRONG: the ranks' means all-reduced, never divided (world size x the mean)."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0)))     # BUG: / world size missing
