"""WRONG: the ranks' means all-reduced and divided by twice the world size."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0)) / (2 * s.ws))     # BUG
