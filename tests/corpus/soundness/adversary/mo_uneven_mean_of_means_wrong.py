"""WRONG: uneven data-parallel shards (rank 0 holds 4 rows, rank 1 holds 2); each rank takes the
mean of its own rows, and the means are averaged over the ranks (all-reduce, / world size).  The
mean of the means weighs rank 1's rows twice: it is not the mean over the 6 rows."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0)) / s.ws, rows=[4, 2])     # BUG: uneven shards
