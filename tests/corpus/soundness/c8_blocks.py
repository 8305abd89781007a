"""Stacks of 8 Megatron MLP blocks for class 7 (layer memoization): the blocks the programs are made
of, each a class of its own so that a wrong block's operators have their own source lines.

Every block: column-parallel fc1 (w1 rows sharded, or replicated and sliced by the rank), gelu,
row-parallel fc2 (w2 columns sharded), all-reduce, replicated bias b2 added after it.  At
world_size 1 no collective runs (the sequential program).  Not a corpus entry: the c8_* scripts
import it.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
import torch.nn.functional as F

B, H, FFN, LAYERS = 3, 8, 12, 8     # pairwise distinct, also FFN / 2
WRONG = 5                           # the block a wrong program changes


def all_reduce(y, ws):
    return funcol.all_reduce(y, "sum", dist.group.WORLD) if ws > 1 else y


class Block(nn.Module):
    def __init__(self, rank, ws, bias=True):
        super().__init__()
        self.rank, self.ws = rank, ws
        self.w1 = nn.Parameter(torch.empty(FFN // ws, H))
        self.b1 = nn.Parameter(torch.empty(FFN // ws))
        self.w2 = nn.Parameter(torch.empty(H, FFN // ws))
        self.b2 = nn.Parameter(torch.empty(H)) if bias else None

    def forward(self, x):
        h = F.gelu(F.linear(x, self.w1, self.b1))
        return all_reduce(F.linear(h, self.w2), self.ws) + self.b2


class NoReduceBlock(Block):
    def forward(self, x):
        h = F.gelu(F.linear(x, self.w1, self.b1))
        return F.linear(h, self.w2) + self.b2          # BUG: no all-reduce of the partial sums


class TanhBlock(Block):
    """gelu's tanh approximation, in both programs: correct, but not block 0's operators."""
    def forward(self, x):
        h = F.gelu(F.linear(x, self.w1, self.b1), approximate="tanh")
        return all_reduce(F.linear(h, self.w2), self.ws) + self.b2


class PartialBlock(Block):
    """No bias, no all-reduce: its output is the sum of the ranks' results (a partial value)."""
    def __init__(self, rank, ws):
        super().__init__(rank, ws, bias=False)

    def forward(self, x):
        h = F.gelu(F.linear(x, self.w1, self.b1))
        return F.linear(h, self.w2)


class SlicedBlock(Block):
    """fc1's weight replicated; each rank slices its rows."""
    def __init__(self, rank, ws):
        super().__init__(rank, ws)
        self.w1 = nn.Parameter(torch.empty(FFN, H))

    def rows(self):
        return self.rank * (FFN // self.ws)

    def forward(self, x):
        w1 = self.w1.narrow(0, self.rows(), FFN // self.ws)
        h = F.gelu(F.linear(x, w1, self.b1))
        return all_reduce(F.linear(h, self.w2), self.ws) + self.b2


class ShiftedSliceBlock(SlicedBlock):
    def rows(self):
        return ((self.rank + 1) % self.ws) * (FFN // self.ws)    # BUG: the other rank's rows


class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.layers = nn.ModuleList(blocks)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build_stack(rank, ws, block, wrong=None):
    """A stack of LAYERS ``block``s, block WRONG a ``wrong`` one if given; its input x replicated."""
    blocks = [(wrong if i == WRONG and wrong else block)(rank, ws) for i in range(LAYERS)]
    return Stack(blocks), {"x": torch.randn(B, H)}


def spec_text(w1="shard(0)", b2=None, expect="replicate"):
    lines = ['[inputs]', '"input:x" = "replicate"']
    for i in range(LAYERS):
        lines += [f'"param:layers.{i}.w1" = "{w1}"', f'"param:layers.{i}.b1" = "shard(0)"',
                  f'"param:layers.{i}.w2" = "shard(1)"']
        if b2 is not None:
            lines.append(f'"param:layers.{i}.b2" = "{b2(i)}"')
    return "\n".join(lines + ['', '[outputs]', 'check = ["out"]', '', '[expect]', f'out = "{expect}"', ''])
