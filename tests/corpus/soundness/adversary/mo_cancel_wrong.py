"""WRONG: each rank returns its own rows' mean shifted by +1 (rank 0) or -1 (rank 1): no rank's
output is the batch mean, nor a part of it, though the shifts cancel in the ranks' mean."""
from _mean_programs import program


build = program(lambda x: x.mean(0),
                lambda x, s: x.mean(0) + (1.0 if s.rank == 0 else -1.0))     # BUG: each rank off by its shift
