"""CORRECT (4 ranks): a hierarchical mean: the ranks' means averaged within the pairs {0, 1},
{2, 3}, then the pairs' means averaged across them ({0, 2}, {1, 3}): the mean over all 4 shards."""
from _adv_groups import group
from _mean_programs import program, world_sum


def pairs(rank):
    """(the pair {0, 1} or {2, 3} of rank, the pair across them {0, 2} or {1, 3})."""
    return [group([0, 1]), group([2, 3])][rank // 2], [group([0, 2]), group([1, 3])][rank % 2]


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(world_sum(x.mean(0), s.groups[0]) / 2, s.groups[1]) / 2, groups=pairs)
