"""CORRECT: data-parallel gradient averaging (DDP): each rank's gradient of its rows' mean loss,
all-reduced and divided by the world size."""
from _mean_programs import least_squares, world_sum


build = least_squares(lambda g, s: world_sum(g) / s.ws)
