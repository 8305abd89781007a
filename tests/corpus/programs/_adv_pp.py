"""Adversarial pipeline programs (point-to-point pairing).

* ``tags``: rank 0 sends a = relu(fc1 x) with tag 1 and b = relu(fc1b x) with tag 2 in one batch;
  rank 1 posts its receives in the other order (tag 2 first) and returns fc2(a) - fc2(b).  Bug
  ``tag_order``: rank 1 takes its FIRST receive (tag 2, i.e. b) as a -- a checker that pairs by
  issue order only (ignoring tags) would accept it.
* ``stale``: rank 0 sends h after an in-place relu; bug ``before_relu``: the send is issued
  (and waited) before the in-place relu_, so rank 1 gets the pre-activation.
* ``read_before``: rank 1 receives into a zero buffer; bug ``clone_before``: it clones the buffer
  BEFORE the receive and computes on the clone.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

IN, HID, OUT, BATCH = 4, 7, 3, 6


def _batch(ops):
    for req in dist.batch_isend_irecv(ops):
        req.wait()


class WrongRank(nn.Module):
    """Both ranks hold a parameter named fc2 (rank 0's is a stale copy it never uses); stage 2 on
    rank 1 uses its own.  The spec ``adv_pp_wrong_rank`` says fc2 is rank 0's: relative to that
    spec, rank 1 computes with a tensor the spec does not define."""

    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        if ws == 1 or rank == 0:
            self.fc1 = nn.Parameter(torch.empty(HID, IN))
        self.fc2 = nn.Parameter(torch.empty(OUT, HID))

    def forward(self, x):
        if self.ws == 1:
            return F.linear(F.relu(F.linear(x, self.fc1)), self.fc2)
        if self.rank == 0:
            h = F.relu(F.linear(x, self.fc1))
            _batch([dist.P2POp(dist.isend, h, 1)])
            return F.linear(h, self.fc2)      # rank 0's own (unchecked) output reads its fc2
        buf = torch.empty(BATCH, HID, dtype=self.fc2.dtype)
        _batch([dist.P2POp(dist.irecv, buf, 0)])
        return F.linear(buf, self.fc2)


class Tags(nn.Module):
    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        if ws == 1 or rank == 0:
            self.fc1 = nn.Parameter(torch.empty(HID, IN))
            self.fc1b = nn.Parameter(torch.empty(HID, IN))
        if ws == 1 or rank == 1:
            self.fc2 = nn.Parameter(torch.empty(OUT, HID))

    def forward(self, x):
        if self.ws == 1:
            a, b = F.relu(F.linear(x, self.fc1)), F.relu(F.linear(x, self.fc1b))
            return F.linear(a, self.fc2) - F.linear(b, self.fc2)
        if self.rank == 0:
            a, b = F.relu(F.linear(x, self.fc1)), F.relu(F.linear(x, self.fc1b))
            _batch([dist.P2POp(dist.isend, a, 1, tag=1), dist.P2POp(dist.isend, b, 1, tag=2)])
            return a
        first = torch.empty(BATCH, HID, dtype=self.fc2.dtype)
        second = torch.empty(BATCH, HID, dtype=self.fc2.dtype)
        _batch([dist.P2POp(dist.irecv, first, 0, tag=2), dist.P2POp(dist.irecv, second, 0, tag=1)])
        a, b = (first, second) if self.bug == "tag_order" else (second, first)  # BUG (tag_order): the tag-2 receive taken as a
        return F.linear(a, self.fc2) - F.linear(b, self.fc2)


class Stale(nn.Module):
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
            h = F.linear(x, self.fc1)
            if self.bug == "before_relu":
                _batch([dist.P2POp(dist.isend, h, 1)])  # BUG (before_relu): sent before the in-place relu
                h.relu_()
            else:
                h.relu_()
                _batch([dist.P2POp(dist.isend, h, 1)])
            return h
        buf = torch.empty(BATCH, HID, dtype=self.fc2.dtype)
        _batch([dist.P2POp(dist.irecv, buf, 0)])
        return F.linear(buf, self.fc2)


class ReadBefore(nn.Module):
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
            _batch([dist.P2POp(dist.isend, h, 1)])
            return h
        buf = torch.zeros(BATCH, HID, dtype=self.fc2.dtype)
        early = buf.clone()
        _batch([dist.P2POp(dist.irecv, buf, 0)])
        h = early if self.bug == "clone_before" else buf.clone()  # BUG (clone_before): read before the receive
        return F.linear(h, self.fc2)


class Subgroup(nn.Module):
    """3 ranks: rank 0 sends a = relu(fc1 x) to ranks 1 and 2 (WORLD); rank 1 sends
    b = relu(fc2 a) to rank 2 over the group [1, 2] (global peers); rank 2 returns fc3(b) + a.
    Bug ``swapped_comm``: rank 2 takes the WORLD receive as b and the subgroup's as a."""

    def __init__(self, rank, ws, bug):
        super().__init__()
        self.rank, self.ws, self.bug = rank, ws, bug
        if ws == 1 or rank == 0:
            self.fc1 = nn.Parameter(torch.empty(HID, IN))
        if ws == 1 or rank == 1:
            self.fc2 = nn.Parameter(torch.empty(HID, HID))
        if ws == 1 or rank == 2:
            self.fc3 = nn.Parameter(torch.empty(HID, HID))
        if ws > 1:
            from _common import group
            self.g = group([1, 2])

    def forward(self, x):
        if self.ws == 1:
            a = F.relu(F.linear(x, self.fc1))
            return F.linear(F.relu(F.linear(a, self.fc2)), self.fc3) + a
        g = self.g
        if self.rank == 0:
            a = F.relu(F.linear(x, self.fc1))
            _batch([dist.P2POp(dist.isend, a, 1), dist.P2POp(dist.isend, a, 2)])
            return a
        if self.rank == 1:
            a = torch.empty(BATCH, HID, dtype=self.fc2.dtype)
            _batch([dist.P2POp(dist.irecv, a, 0)])
            b = F.relu(F.linear(a, self.fc2))
            _batch([dist.P2POp(dist.isend, b, 2, group=g)])
            return b
        r_world = torch.empty(BATCH, HID, dtype=self.fc3.dtype)
        r_sub = torch.empty(BATCH, HID, dtype=self.fc3.dtype)
        _batch([dist.P2POp(dist.irecv, r_world, 0)])
        _batch([dist.P2POp(dist.irecv, r_sub, 1, group=g)])
        a, b = (r_sub, r_world) if self.bug == "swapped_comm" else (r_world, r_sub)  # BUG (swapped_comm): the WORLD receive taken as b
        return F.linear(b, self.fc3) + a


def make_build(kind, bug=None):
    def build(rank, world_size):
        cls = {"tags": Tags, "stale": Stale, "read_before": ReadBefore, "subgroup": Subgroup, "wrong_rank": WrongRank}[kind]
        return cls(rank, world_size, bug), {"x": torch.randn(BATCH, IN)}
    return build


# The corpus's programs of this family, one builder each (the corpus table names them
# `_adv_pp.py:<name>`, and `entangle capture tests/corpus/programs/_adv_pp.py:<name>` captures one).
adv_pp_read_before_clone_before = make_build('read_before', bug='clone_before')
adv_pp_read_before_correct = make_build('read_before')
adv_pp_stale_before_relu = make_build('stale', bug='before_relu')
adv_pp_stale_correct = make_build('stale')
adv_pp_subgroup_correct = make_build("subgroup")
adv_pp_subgroup_swapped_comm = make_build("subgroup", bug="swapped_comm")
adv_pp_tags_correct = make_build('tags')
adv_pp_tags_tag_order = make_build('tags', bug='tag_order')
adv_pp_wrong_rank = make_build("wrong_rank")
adv_pp_wrong_rank_ok = make_build("wrong_rank")
