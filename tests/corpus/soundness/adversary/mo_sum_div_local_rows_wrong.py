"""WRONG: the ranks' row SUMS all-reduced and divided by the local row count (a rank's batch,
not the global one)."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.sum(0)) / x.shape[0])     # BUG
