"""Pipeline parallelism: each rank holds only its own stage's parameters (so the ranks' graphs take
different inputs; the spec names the rank that holds each tensor, ``"param:fc2" = "r1.param:fc2"``).
Transfers are autograd Functions (``_SendFn`` / ``_RecvFn`` / ``_BcastFn`` ...) whose backward
sends each activation's gradient back to the stage that produced it, so the stages' parameter
gradients are the model's (joint mode; the joint specs give the last stage the model's tangent).

* ``two_stage`` (broadcast): rank 0 runs stage 1 (fc1, relu) and hands the activation to rank 1
  with a broadcast from 0; rank 1 runs stage 2 (fc2) and broadcasts the result back, so both ranks
  return the output.  Bug ``wrong_peer``: the activation is broadcast from rank 1, i.e. rank 1's
  own zero buffer.
* ``p2p`` (send/recv): the batch goes through in two micro-batches; rank 0 sends each stage-1
  activation to rank 1 (``dist.batch_isend_irecv``, as Megatron's p2p_communication does), rank 1
  returns the concatenated stage-2 outputs and sends them back to rank 0.  Bug ``reordered``: the
  sender's schedule sends micro-batch 1 before micro-batch 0 while the receiver takes them in
  order (transfers pair by peer and issue order: a checker pairing them by shape would accept it).
* ``skip`` (send/recv, 3 stages): rank 0 computes h1 = relu(fc1 x) and sends it to rank 1 and, for
  a skip connection, to rank 2; rank 1 sends h2 = relu(fc2 h1) to rank 2; rank 2 returns
  fc3(h2) + h1.  Bug ``swapped_peers``: rank 2 takes the tensor from rank 0 as h2 and the one
  from rank 1 as the skip (two receives of the same shape from the wrong peers; the receives are
  issued in the same order, so only pairing by peer tells them apart).
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

IN, HID, OUT = 4, 7, 3


def _send(t, dst):
    for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, t, dst)]):
        req.wait()


def _recv(shape, src, dtype):
    buf = torch.empty(shape, dtype=dtype)
    for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, src)]):
        req.wait()
    return buf


class _SendFn(torch.autograd.Function):
    """A stage's output handed to the next stages: forward sends ``t`` to every rank of ``dsts``
    and returns it; backward receives the gradient of ``t`` from each of them, in the same order,
    and sums them (the gradient of the returned handle itself is not the model's and is ignored)."""
    @staticmethod
    def forward(ctx, t, dsts):
        for d in dsts:
            _send(t, d)
        ctx.dsts, ctx.shape, ctx.dtype = dsts, tuple(t.shape), t.dtype
        return t.clone()

    @staticmethod
    def backward(ctx, grad):
        bufs = [torch.empty(ctx.shape, dtype=ctx.dtype) for _ in ctx.dsts]
        # one batch: the peers' sends may come in any order
        for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, b, d) for b, d in zip(bufs, ctx.dsts)]):
            req.wait()
        total = bufs[0]
        for b in bufs[1:]:
            total = total + b
        return total, None


class _SendOwnGradFn(torch.autograd.Function):
    """A copy of ``t`` sent to ``dst`` for it to return too: the gradient of ``t`` is the
    gradient of the returned tensor (the copy's receiver sends none back)."""
    @staticmethod
    def forward(ctx, t, dst):
        _send(t, dst)
        return t.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _RecvOutFn(torch.autograd.Function):
    """The model's output received from ``src`` to return it too; ``handles`` (the tensors this
    stage sent, ``_SendFn`` outputs) are passed so that their backward runs: they get a zero
    gradient, and the gradient of the returned tensor goes nowhere (``src`` returns it too)."""
    @staticmethod
    def forward(ctx, shape, src, a, b):     # the two micro-batches' handles (no *args: Dynamo)
        ctx.save_for_backward(a, b)
        return _recv(shape, src, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return None, None, torch.zeros_like(a), torch.zeros_like(b)


class _RecvFn(torch.autograd.Function):
    """A stage's input taken from rank ``src``: forward receives it; backward sends its gradient
    back to ``src``.  ``anchor`` (a parameter of the stage) only makes autograd run the backward:
    it gets no gradient."""
    @staticmethod
    def forward(ctx, anchor, shape, src):
        ctx.src = src
        return _recv(shape, src, anchor.dtype)

    @staticmethod
    def backward(ctx, grad):
        _send(grad.contiguous(), ctx.src)
        return None, None, None


class _BcastFn(torch.autograd.Function):
    """An activation broadcast from ``src`` to the next stage, which the source itself does not
    read (its copy is a handle): backward sends every other rank's gradient of it to ``src``, which
    sums them into the gradient of its input.  ``anchor`` (a tensor requiring grad on every rank)
    makes autograd run the backward on the ranks that broadcast a tensor without one."""
    @staticmethod
    def forward(ctx, t, anchor, src):
        ctx.src, ctx.rank, ctx.ws = src, dist.get_rank(), dist.get_world_size()
        return funcol.broadcast(t, src, dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad):
        if ctx.rank != ctx.src:
            _send(grad.contiguous(), ctx.src)
            return None, None, None
        peers = [r for r in range(ctx.ws) if r != ctx.src]
        bufs = [torch.empty(grad.shape, dtype=grad.dtype) for _ in peers]
        for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, b, r) for b, r in zip(bufs, peers)]):
            req.wait()
        total = bufs[0]
        for b in bufs[1:]:
            total = total + b
        return total, None, None


class _BcastOutFn(torch.autograd.Function):
    """The model's output broadcast from ``src``, which every rank returns: its gradient is the
    source's own tangent (the copies' are not the model's); ``anchor`` gets a zero gradient so
    that the backward of what this rank broadcast before runs."""
    @staticmethod
    def forward(ctx, t, anchor, src):
        ctx.save_for_backward(anchor)
        ctx.own = dist.get_rank() == src
        return funcol.broadcast(t, src, dist.group.WORLD)

    @staticmethod
    def backward(ctx, grad):
        if ctx.own:
            return grad, None, None
        (anchor,) = ctx.saved_tensors
        return None, torch.zeros_like(anchor), None


class TwoStage(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        if ws == 1 or rank == 0:
            self.fc1 = nn.Parameter(torch.empty(HID, IN))
        if ws == 1 or rank == 1:
            self.fc2 = nn.Parameter(torch.empty(OUT, HID))

    def forward(self, x):
        if self.ws == 1:
            return F.linear(F.relu(F.linear(x, self.fc1)), self.fc2)
        if self.rank == 0:
            h = F.relu(F.linear(x, self.fc1))
        else:
            h = x.new_zeros(x.shape[0], HID)
        src = 1 if self.bug == "wrong_peer" else 0  # BUG (wrong_peer): the activation comes from rank 1
        own = self.fc1 if self.rank == 0 else self.fc2
        h = _BcastFn.apply(h, own, src)
        if self.rank == 1:
            y = F.linear(h, self.fc2)
        else:
            y = x.new_zeros(x.shape[0], OUT)
        return _BcastOutFn.apply(y, h, 1)


class P2P(nn.Module):
    MICRO = 2

    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        if ws == 1 or rank == 0:
            self.fc1 = nn.Parameter(torch.empty(HID, IN))
        if ws == 1 or rank == 1:
            self.fc2 = nn.Parameter(torch.empty(OUT, HID))

    def forward(self, x):
        if self.ws == 1:
            return F.linear(F.relu(F.linear(x, self.fc1)), self.fc2)
        if self.rank == 0:
            hs = [F.relu(F.linear(mb, self.fc1)) for mb in x.chunk(self.MICRO)]
            if self.bug == "reordered":
                hs = hs[::-1]  # BUG (reordered): the schedule sends micro-batch 1 before micro-batch 0
            sent = [_SendFn.apply(h, (1,)) for h in hs]
            return _RecvOutFn.apply((x.shape[0], OUT), 1, *sent)
        ys = [F.linear(_RecvFn.apply(self.fc2, (BATCH // self.MICRO, HID), 0), self.fc2) for _ in range(self.MICRO)]
        y = torch.cat(ys)
        return _SendOwnGradFn.apply(y, 0)


class Skip(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        if ws == 1 or rank == 0:
            self.fc1 = nn.Parameter(torch.empty(HID, IN))
        if ws == 1 or rank == 1:
            self.fc2 = nn.Parameter(torch.empty(HID, HID))
        if ws == 1 or rank == 2:
            self.fc3 = nn.Parameter(torch.empty(HID, HID))

    def forward(self, x):
        if self.ws == 1:
            h1 = F.relu(F.linear(x, self.fc1))
            return F.linear(F.relu(F.linear(h1, self.fc2)), self.fc3) + h1
        if self.rank == 0:
            h1 = F.relu(F.linear(x, self.fc1))
            return _SendFn.apply(h1, (1, 2))
        if self.rank == 1:
            h2 = F.relu(F.linear(_RecvFn.apply(self.fc2, (BATCH, HID), 0), self.fc2))
            return _SendFn.apply(h2, (2,))
        first, second = (0, 1) if self.bug == "swapped_peers" else (1, 0)  # BUG (swapped_peers): h2 taken from rank 0
        h2 = _RecvFn.apply(self.fc3, (BATCH, HID), first)
        skip = _RecvFn.apply(self.fc3, (BATCH, HID), second)
        return F.linear(h2, self.fc3) + skip


BATCH = 6


def make_build(kind="two_stage", bug=None):
    def build(rank, world_size):
        cls = {"two_stage": TwoStage, "p2p": P2P, "skip": Skip}[kind]
        return cls(rank, world_size, bug), {"x": torch.randn(BATCH, IN)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_pp.py:<name>`, and `entangle capture tests/corpus/programs/_pp.py:<name>` captures one).
pp_p2p_correct = make_build('p2p')
pp_p2p_reordered = make_build('p2p', bug='reordered')
pp_skip_correct = make_build('skip')
pp_skip_swapped_peers = make_build('skip', bug='swapped_peers')
pp_two_stage_correct = make_build()
pp_two_stage_wrong_peer = make_build(bug='wrong_peer')
