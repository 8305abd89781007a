"""WRONG ([dp=2, tp=2] mesh, the batch split over both dims): the ranks' means averaged over the
dp group only; the tp ranks' results differ (each the mean of half the batch).  The spec expects
out = "replicate@dp" and names no tp placement: is the tp dim then left to a certificate?"""
from _adv_groups import mesh_groups
from _mean_programs import program, world_sum


# BUG: the tp group's halves never averaged
build = program(lambda x: x.mean(0),
                lambda x, s: world_sum(x.mean(0), s.groups[0]) / 2, groups=mesh_groups)
