"""WRONG: uneven shards (4 and 2 rows); each rank divides its row sum by its own row count times
the world size (8 on rank 0, 4 on rank 1) before the all-reduce, as if the shards were even."""
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.sum(0) / (x.shape[0] * s.ws)), rows=[4, 2])     # BUG
