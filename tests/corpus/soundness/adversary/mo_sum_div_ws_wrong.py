"""WRONG: the ranks' row SUMS all-reduced and divided by the world size: the mean over ranks of
the sums is not the mean over rows."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.sum(0)) / s.ws)     # BUG: sums, not means
