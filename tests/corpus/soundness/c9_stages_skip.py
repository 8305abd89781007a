"""_pp.py's three-stage ``skip`` (rank 0: h1 = relu(fc1 x), sent to rank 1 and, as a skip
connection, to rank 2; rank 1: h2 = relu(fc2 h1), sent to rank 2; rank 2 returns fc3(h2) + h1), and
a twin whose backward is WRONG on rank 0: of the two gradients of h1 it receives (from rank 1 and,
through the skip, from rank 2) it keeps only the first, so grad:fc1 misses the skip's share while
every forward value is right.  A check by [stages] whose boundaries are forward activations must
still catch it (tests/test_stages_adversary.py).  Builders (capture targets ``c9_stages_skip.py:<name>``):
``skip_correct`` and ``skip_grad_dropped``, at 3 ranks; labels confirmed on gloo with
tests/corpus/programs/run_gloo.py (joint mode, pp_skip_joint.toml)."""
import importlib.util
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

_PATH = Path(__file__).resolve().parents[1] / "programs" / "_pp.py"
_spec = importlib.util.spec_from_file_location("_c9_pp", _PATH)
_pp = sys.modules.get("_c9_pp") or importlib.util.module_from_spec(_spec)
if "_c9_pp" not in sys.modules:
    sys.modules["_c9_pp"] = _pp
    _spec.loader.exec_module(_pp)


class _SendKeepFirstGradFn(_pp._SendFn):
    """_pp._SendFn, whose backward receives every peer's gradient but keeps only the first."""
    @staticmethod
    def backward(ctx, grad):
        bufs = [torch.empty(ctx.shape, dtype=ctx.dtype) for _ in ctx.dsts]
        for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, b, d) for b, d in zip(bufs, ctx.dsts)]):
            req.wait()
        return bufs[0], None        # BUG (grad_dropped): the skip's gradient from rank 2 is dropped


class SkipGradDropped(_pp.Skip):
    def forward(self, x):
        if self.ws > 1 and self.rank == 0:
            return _SendKeepFirstGradFn.apply(F.relu(F.linear(x, self.fc1)), (1, 2))
        return super().forward(x)


def skip_correct(rank, world_size):
    return _pp.Skip(rank, world_size, None), {"x": torch.randn(_pp.BATCH, _pp.IN)}


def skip_grad_dropped(rank, world_size):
    return SkipGradDropped(rank, world_size, None), {"x": torch.randn(_pp.BATCH, _pp.IN)}
