"""WRONG: the ranks' means all-reduced and divided by world size + 1."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0)) / (s.ws + 1))     # BUG
