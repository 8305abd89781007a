"""The shared gloo harness (tests/corpus/soundness/gloo_ranks.py): results come back per rank, a rank killed by
a signal is run again once, and a second crash is raised rather than read as a result."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "corpus"))
from soundness import gloo_ranks  # noqa: E402


def _worker(rank, world, port, out_dir, crash_marker, crashes):
    gloo_ranks.init(rank, world, port, timeout_s=30)
    import torch.distributed as dist
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    # rank 1 dies by SIGABRT on the first `crashes` attempts (counted in a file beside the run)
    if rank == 1:
        n = int(Path(crash_marker).read_text()) if os.path.exists(crash_marker) else 0
        if n < crashes:
            Path(crash_marker).write_text(str(n + 1))
            os.kill(os.getpid(), signal.SIGABRT)
    gloo_ranks.finish(out_dir, rank, {"sum": t.item(), "rank": rank})


def test_results_per_rank(tmp_path):
    got = gloo_ranks.spawn(_worker, 2, (str(tmp_path / "n"), 0))
    assert got == [{"sum": 3.0, "rank": 0}, {"sum": 3.0, "rank": 1}]


def test_one_crash_is_run_again(tmp_path, capfd):
    got = gloo_ranks.spawn(_worker, 2, (str(tmp_path / "n"), 1))
    assert [g["rank"] for g in got] == [0, 1]
    assert "running again" in capfd.readouterr().err


def test_two_crashes_are_raised(tmp_path):
    import torch.multiprocessing as mp
    with pytest.raises(mp.ProcessExitedException, match="SIGABRT"):
        gloo_ranks.spawn(_worker, 2, (str(tmp_path / "n"), 2))


def _out_of_step_worker(rank, world, port, out_dir, names):
    """Entry "split": rank 0 raises before the all-reduce rank 1 enters (a vocab lookup out of range on
    one rank only), so the ranks fall out of step; the entries after it must still run."""
    gloo_ranks.init(rank, world, port, timeout_s=10)
    import torch.distributed as dist

    def one(name):
        if name == "split" and rank == 0:
            raise IndexError("index out of range in self")
        t = torch.full((30,), float(rank + 1))
        dist.all_reduce(t)
        return {"sum": t[0].item()}
    gloo_ranks.run_each(out_dir, rank, names, lambda n: n, one)


def test_entries_after_ranks_fall_out_of_step_still_run():
    names = ["before", "split", "after", "last"]
    runs = []
    got = gloo_ranks.run_all(names, lambda n: n,
                             lambda todo: runs.append(todo) or gloo_ranks.spawn(_out_of_step_worker, 2, (todo,)))
    assert runs == [names, ["after", "last"]]      # the rest in a fresh spawn
    assert set(got) == set(names)
    for n in ("before", "after", "last"):
        assert got[n] == [{"sum": 3.0}, {"sum": 3.0}], (n, got[n])
    assert all("error" in r for r in got["split"]), got["split"]
