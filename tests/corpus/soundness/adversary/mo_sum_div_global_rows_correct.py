"""CORRECT twin: the ranks' row sums all-reduced and divided by the global row count."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.sum(0)) / 24)
