"""WRONG: x is held as partial sums (the ranks' shares add up to it); the shares are AVERAGED over
the ranks (all-reduce, / world size): the mean of the shares is x / world size, not x."""
from _mean_programs import program, world_sum


# BUG: shares, not replicas
build = program(lambda x: x.tanh(),
                lambda x, s: (world_sum(x) / s.ws).tanh(), rows=3, cols=4, split=lambda ws: 1)
