"""WRONG: uneven shards (4 and 2 rows); each rank returns the mean of its own rows (no all-reduce).
Not even the mean of the ranks' outputs is the batch mean (rank 1's rows would weigh twice)."""
from _mean_programs import program


build = program(lambda x: x.mean(0),
                lambda x, s: x.mean(0), rows=[4, 2])     # BUG: no all-reduce
