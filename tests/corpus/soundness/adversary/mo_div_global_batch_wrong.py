"""WRONG: the ranks' MEANS all-reduced and divided by the global batch size (the count of the
rows, where the ranks' sums would need it)."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0)) / 24)     # BUG: means, not sums
