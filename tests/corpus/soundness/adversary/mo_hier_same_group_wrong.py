"""WRONG twin of mo_hier_mean_correct: the second average is over the same pair again (the mean of
a pair's equal means is that pair's mean: the other pair's rows never enter)."""
from _adv_groups import group
from _mean_programs import program, world_sum


def pairs(rank):
    """(the pair {0, 1} or {2, 3} of rank, the pair across them {0, 2} or {1, 3})."""
    return [group([0, 1]), group([2, 3])][rank // 2], [group([0, 2]), group([1, 3])][rank % 2]


# BUG: the same group twice
build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(world_sum(x.mean(0), s.groups[0]) / 2, s.groups[0]) / 2, groups=pairs)
