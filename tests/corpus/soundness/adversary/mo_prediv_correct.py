"""CORRECT: each rank's mean divided by the world size before the all-reduce (pre-division)."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0) / s.ws))
