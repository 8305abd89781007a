"""CORRECT: the ranks' means all-reduced, then multiplied by 1 / world size (0.5, 0.25: exact)."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0)) * (1.0 / s.ws))
