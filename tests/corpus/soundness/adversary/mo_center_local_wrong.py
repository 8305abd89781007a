"""WRONG: each rank's rows centred by its own rows' mean (never averaged)."""
from _mean_programs import program


build = program(lambda x: x - x.mean(0, keepdim=True),
                lambda x, s: x - x.mean(0, keepdim=True))     # BUG: the local mean
