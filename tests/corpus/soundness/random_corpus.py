"""The random-draw corpus (issue 23): wrong distributed programs that draw random numbers, each with
its correct twin, labels confirmed on 2 real gloo processes by ``run_gloo_random.py`` (which says
what "correct" means for a program with random draws: equal in distribution, by a coupling).

Programs in ``random_draws/``; ``Entry(name, mode, spec)``: the script is ``random_draws/<name>.py``,
its spec ``random_draws/<spec>.toml`` (``<spec>_joint.toml`` for joint mode).  ``entangle check``
must exit 1 on a wrong program, naming the draw, and 0 on a correct one: the checker couples the
draws from where capture records they come from (each rank's seed and position in its stream).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "random_draws"


@dataclass(frozen=True)
class Entry:
    name: str
    mode: str
    family: str       # the spec: random_draws/<family>.toml, or <family>_joint.toml

    @property
    def script(self) -> str:
        return str(HERE / f"{self.name}.py")

    @property
    def spec(self) -> str:
        return str(HERE / (f"{self.family}_joint.toml" if self.mode == "joint" else f"{self.family}.toml"))

    @property
    def label(self) -> str:
        return "wrong" if self.name.endswith("_wrong") else "correct"

    @property
    def id(self) -> str:
        return f"{self.name}[{self.mode}]"

    @property
    def world_size(self) -> int:
        return 2


def _both(name, family):
    return [Entry(name, "forward", family), Entry(name, "joint", family)]


CORPUS = [
    # 1. sequence-parallel dropout: one seed on every rank (the same mask on every shard), a seed per
    #    rank, and every rank drawing the whole sequence's mask from one seed and keeping its rows
    *_both("sp_dropout_same_seed_wrong", "sp"),
    *_both("sp_dropout_rank_seeds_correct", "sp"),
    *_both("sp_dropout_full_mask_correct", "sp"),
    Entry("sp_dropout_full_mask_rows_wrong", "forward", "sp"),
    # 2. a mask reused across the copies of a concat
    *_both("mask_reuse_wrong", "reuse"),
    *_both("mask_reuse_correct", "reuse"),
    # 3. dropout on a replicated activation (a tensor-parallel region)
    *_both("tp_dropout_same_seed_correct", "tp"),
    *_both("tp_dropout_rank_seeds_wrong", "tp"),
    Entry("tp_two_dropouts_same_seed_correct", "forward", "tp"),
    *_both("tp_dropout_unused_draw_wrong", "tp"),
    # 4. noise (randn_like) on sequence shards
    Entry("sp_noise_same_seed_wrong", "forward", "sp"),
    Entry("sp_noise_rank_seeds_correct", "forward", "sp"),
]

BY_ID = {e.id: e for e in CORPUS}
