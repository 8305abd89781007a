"""CORRECT: every rank holds the same x (replicated) and computes the same tanh(x); averaging the
replicas over the ranks (all-reduce, / world size) gives that value back."""
from _mean_programs import program, world_sum


build = program(lambda x: x.tanh(),
                lambda x, s: world_sum(x.tanh()) / s.ws, rows=3, cols=4, split=lambda ws: 1)
