"""Each rank returns its own rows' mean shifted by +1 (rank 0) or -1 (rank 1): no rank's output is
the batch mean, but the shifts cancel in the ranks' mean -- the outputs are shares of it, as
partial(avg) says (correct with no [expect]: the mean over ranks is clean; wrong under
[expect] out = replicate, mo_cancel_wrong)."""
from _mean_programs import program


build = program(lambda x: x.mean(0),
                lambda x, s: x.mean(0) + (1.0 if s.rank == 0 else -1.0))
