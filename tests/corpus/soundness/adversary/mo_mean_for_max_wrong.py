"""WRONG: the column maxima over the batch computed as the ranks' maxima AVERAGED over the ranks
(all-reduce, / world size) instead of their maximum."""
from _mean_programs import program, world_sum


build = program(lambda x: x.amax(0),
                lambda x, s: world_sum(x.amax(0)) / s.ws)     # BUG: mean, not max
