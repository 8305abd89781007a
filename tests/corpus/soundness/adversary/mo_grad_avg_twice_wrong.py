"""WRONG: the loss already divided by the world size on each rank (a gradient scaled by 1 / W),
then averaged again by DDP: scaled by 1 / W twice."""
from _mean_programs import least_squares, world_sum


build = least_squares(lambda g, s: world_sum(g / s.ws) / s.ws)     # BUG: pre-scaled for a sum, then averaged
