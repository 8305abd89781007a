"""Shared primitives of the program corpus: Megatron-style regions as autograd.Functions over
functional collectives, parameterised by the process group (None = WORLD)."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

_GROUPS = {}


def group(ranks=None):
    """The process group of ``ranks`` (None: WORLD).  Every rank must ask for the same groups in
    the same order (dist.new_group is collective)."""
    if ranks is None:
        return dist.group.WORLD
    key = tuple(ranks)
    ws = dist.get_world_size()
    # keyed by the WORLD group object itself (held here, so never freed): an id() of a destroyed
    # one is reused by the next capture's, which then got another rank's groups
    k = (dist.group.WORLD, ws, key)
    if k not in _GROUPS:
        _GROUPS[k] = dist.new_group(list(key))
    return _GROUPS[k]


def mesh_groups(rank, dp, tp):
    """Row-major mesh [dp, tp]: (dp group of rank, tp group of rank).  Creates all groups on
    every rank in the same order."""
    tp_groups = [group([d * tp + t for t in range(tp)]) for d in range(dp)]
    dp_groups = [group([d * tp + t for d in range(dp)]) for t in range(tp)]
    return dp_groups[rank % tp], tp_groups[rank // tp]


class _Copy(torch.autograd.Function):          # identity fwd, all-reduce bwd
    @staticmethod
    def forward(ctx, x, g):
        ctx.g = g
        return x

    @staticmethod
    def backward(ctx, grad):
        return funcol.all_reduce(grad, "sum", ctx.g), None


class _Reduce(torch.autograd.Function):        # all-reduce fwd, identity bwd
    @staticmethod
    def forward(ctx, x, g):
        return funcol.all_reduce(x, "sum", g)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _AllReduce(torch.autograd.Function):     # all-reduce fwd, all-reduce bwd (the ranks use different parts)
    @staticmethod
    def forward(ctx, x, g):
        ctx.g = g
        return funcol.all_reduce(x, "sum", g)

    @staticmethod
    def backward(ctx, grad):
        return funcol.all_reduce(grad, "sum", ctx.g), None


class _ReduceMax(torch.autograd.Function):     # all-reduce max fwd, no grad (used under detach)
    @staticmethod
    def forward(ctx, x, g):
        return funcol.all_reduce(x, "max", g)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _Gather(torch.autograd.Function):        # all-gather fwd, reduce-scatter bwd
    @staticmethod
    def forward(ctx, x, dim, g):
        ctx.dim, ctx.g = dim, g
        if dim == 0:
            return funcol.all_gather_tensor(x, 0, g)
        return funcol.all_gather_tensor(x.movedim(dim, 0).contiguous(), 0, g).movedim(0, dim).contiguous()

    @staticmethod
    def backward(ctx, grad):
        if ctx.dim == 0:
            return funcol.reduce_scatter_tensor(grad.contiguous(), "sum", 0, ctx.g), None, None
        out = funcol.reduce_scatter_tensor(grad.movedim(ctx.dim, 0).contiguous(), "sum", 0, ctx.g)
        return out.movedim(0, ctx.dim).contiguous(), None, None


class _GatherSplit(torch.autograd.Function):   # all-gather fwd, take own slice bwd (Megatron gather_from_tp)
    @staticmethod
    def forward(ctx, x, dim, g, rank, world):
        ctx.dim, ctx.rank, ctx.n = dim, rank, x.shape[dim]
        return funcol.all_gather_tensor(x.movedim(dim, 0).contiguous(), 0, g).movedim(0, dim).contiguous()

    @staticmethod
    def backward(ctx, grad):
        return grad.narrow(ctx.dim, ctx.rank * ctx.n, ctx.n).contiguous(), None, None, None, None


class _ReduceScatter(torch.autograd.Function):  # reduce-scatter fwd (dim 0), all-gather bwd
    @staticmethod
    def forward(ctx, x, g):
        ctx.g = g
        return funcol.reduce_scatter_tensor(x.contiguous(), "sum", 0, g)

    @staticmethod
    def backward(ctx, grad):
        return funcol.all_gather_tensor(grad.contiguous(), 0, ctx.g), None


def copy_to(x, ws, g=None):
    return x if ws == 1 else _Copy.apply(x, g if g is not None else dist.group.WORLD)


def reduce_from(x, ws, g=None):
    return x if ws == 1 else _Reduce.apply(x, g if g is not None else dist.group.WORLD)


def all_reduce(x, ws, g=None):
    """A sum over ranks whose ranks go on with different parts of it: the gradient of every
    rank's input is the sum of the ranks' gradients (reduce_from's identity backward assumes they
    all go on with the same tensor)."""
    return x if ws == 1 else _AllReduce.apply(x, g if g is not None else dist.group.WORLD)


def reduce_max(x, ws, g=None):
    return x if ws == 1 else _ReduceMax.apply(x, g if g is not None else dist.group.WORLD)


def gather(x, dim, ws, g=None):
    return x if ws == 1 else _Gather.apply(x, dim, g if g is not None else dist.group.WORLD)


def gather_split(x, dim, rank, ws, g=None):
    return x if ws == 1 else _GatherSplit.apply(x, dim, g if g is not None else dist.group.WORLD, rank, ws)


def reduce_scatter(x, ws, g=None):
    return x if ws == 1 else _ReduceScatter.apply(x, g if g is not None else dist.group.WORLD)


def all_reduce_grad(p, ws, g=None, op="sum"):
    """A gradient hook-free all-reduce of a value (forward use: DP gradient averaging done inside
    the program on an explicit gradient tensor)."""
    return p if ws == 1 else funcol.all_reduce(p, op, g if g is not None else dist.group.WORLD)
