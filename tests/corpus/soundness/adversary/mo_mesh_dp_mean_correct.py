"""CORRECT ([dp=2, tp=2] mesh): the ranks' means averaged over the dp group (all-reduce over dp,
/ dp size)."""
from _adv_groups import mesh_groups
from _mean_programs import program, world_sum


build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0), s.groups[0]) / 2,
                split=lambda ws: 2 if ws == 4 else 1, groups=mesh_groups)
