"""Process groups the 4-rank adversary programs share: a row-major [2, 2] mesh's groups."""
import torch.distributed as dist

_GROUPS = {}


def group(ranks):
    """The process group of ``ranks``; every rank asks for the same groups in the same order
    (dist.new_group is collective).  Keyed by the WORLD group object (capture makes one per rank)."""
    k = (dist.group.WORLD, dist.get_world_size(), tuple(ranks))
    if k not in _GROUPS:
        _GROUPS[k] = dist.new_group(list(ranks))
    return _GROUPS[k]


def mesh_groups(rank):
    """(dp group, tp group) of ``rank`` on a row-major [dp=2, tp=2] mesh (rank = 2 * dp + tp)."""
    tp_groups = [group([2 * d + t for t in range(2)]) for d in range(2)]
    dp_groups = [group([2 * d + t for d in range(2)]) for t in range(2)]
    return dp_groups[rank % 2], tp_groups[rank // 2]
