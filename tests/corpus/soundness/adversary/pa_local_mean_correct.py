"""CORRECT under [expect] out = partial(avg): each rank returns the mean of its own (equal) rows;
the mean over the ranks of those is the sequential mean (no all-reduce needed: the expectation
says the ranks' outputs are averaged by whoever reads them)."""
from _mean_programs import program


build = program(lambda x: x.mean(0),
                lambda x, s: x.mean(0))
