"""WRONG under [expect] out = partial(avg): each rank returns the SUM of its own rows; the mean over
the ranks of those is not the sequential mean of all rows (it is N / W times it)."""
from _mean_programs import program


build = program(lambda x: x.mean(0),
                lambda x, s: x.sum(0))     # BUG: the rows' sum where their mean was needed
