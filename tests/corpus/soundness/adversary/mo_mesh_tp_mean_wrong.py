"""WRONG ([dp=2, tp=2] mesh): the ranks' means averaged over the TP group (the replicas of one dp
shard: the mean of equal values is the shard's own mean) instead of the dp group."""
from _adv_groups import mesh_groups
from _mean_programs import program, world_sum


# BUG: the tp group, not dp
build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0), s.groups[1]) / 2,
                split=lambda ws: 2 if ws == 4 else 1, groups=mesh_groups)
