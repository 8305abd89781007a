"""WRONG under [expect] out = partial(avg): uneven shards (16 / 8 rows), each rank's own mean: the
mean of the two means weighs the 8 rows twice."""
from _mean_programs import program


build = program(lambda x: x.mean(0),
                lambda x, s: x.mean(0), rows=[16, 8])     # BUG: uneven shards averaged as if even
