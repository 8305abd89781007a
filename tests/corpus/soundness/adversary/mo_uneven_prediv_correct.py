"""CORRECT: uneven shards (4 and 2 rows); each rank divides its row sum by the global row count
before the all-reduce (the sequential mean's 1 / N carried into the ranks' sums)."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.sum(0) / 6), rows=[4, 2])
