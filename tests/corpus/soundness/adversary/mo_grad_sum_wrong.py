"""WRONG: the ranks' gradients all-reduced and never divided by the world size (W times the
gradient)."""
from _mean_programs import least_squares, world_sum


build = least_squares(lambda g, s: world_sum(g))     # BUG: / world size missing
