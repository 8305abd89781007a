"""The executor on a real local Ray cluster (``ray.init(num_cpus=2)``, no mock): its verdicts and
reports are the in-process ones on shipped and corpus pairs, `entangle check-many --ray-address`
joins a running cluster, and a Ray worker killed under a task is retried once.

Opt-in (``pytest -m ray``): needs ``pip install -e '.[ray]'``; .ci/run installs it and runs these."""
from __future__ import annotations

import json
import os

import pytest

from entangle_py.check_many import load_manifest, run_check_many
from entangle_py.executor import InProcessExecutor, RayExecutor, Task
from tooling import executor_tasks as T

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_cluster():
    # Ray workers import the tasks' modules by name: the tests' tooling must be on their path
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")   # this machine only: loopback (executor.RayExecutor)
    mp.setenv("PYTHONPATH", os.pathsep.join([str(T.ROOT), str(T.ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
    import ray     # after the environment above; not importorskip: under -m ray a missing Ray fails
    ctx = ray.init(num_cpus=2, object_store_memory=200 << 20, include_dashboard=False, log_to_driver=False)
    yield ctx.address_info["gcs_address"]
    ray.shutdown()
    mp.undo()


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return T.corpus_manifest(tmp_path_factory.mktemp("check_many_ray"))


def test_ray_gives_the_in_process_verdicts_and_reports(ray_cluster, manifest):
    tasks = load_manifest(manifest, max_memory=3 << 30)
    local = run_check_many(tasks, InProcessExecutor())
    on_ray = run_check_many(tasks, RayExecutor(2))
    assert {e["name"]: e["exit_code"] for e in local} == T.EXPECTED
    for a, b in zip(local, on_ray):
        assert (a["name"], a["status"], a["exit_code"]) == (b["name"], b["status"], b["exit_code"])
        assert T.without_timings(a["report"]) == T.without_timings(b["report"]), a["name"]
        assert b["worker"].startswith("ray:") and b["attempts"] == 1


def test_check_many_joins_a_running_cluster(ray_cluster, manifest, entangle, tmp_path):
    out = tmp_path / "ray.json"
    p = entangle("check-many", manifest, "--ray-address", ray_cluster, "--json", out, env=dict(os.environ))
    data = json.loads(out.read_text())
    assert p.returncode == 1, p.stdout + p.stderr
    assert data["executor"] == "ray"
    assert {e["name"]: e["exit_code"] for e in data["tasks"]} == T.EXPECTED
    assert all(e["worker"].startswith("ray:") for e in data["tasks"])


def test_a_killed_ray_worker_is_retried_once(ray_cluster, tmp_path):
    tasks = [Task("killed once", T.die_once, (str(tmp_path / "marker"),)), Task("doomed", T.die_always),
             Task("square", T.square, (6,))]
    once, doomed, fine = RayExecutor(2).run(tasks)
    assert once.ok and once.value == "survived" and once.attempts == 2 and len(once.deaths) == 1, once
    assert fine.ok and fine.value[0] == 36
    assert not doomed.ok and doomed.attempts == 2 and "worker died on every attempt" in doomed.error
    assert doomed.error.count("WorkerCrashedError") == 2, doomed.error


def test_stages_on_ray_are_the_in_process_stages(ray_cluster, tmp_path):
    """A check by [stages] (entangle_py/stages.py) on Ray: each stage's verdict and report are the
    in-process ones, correct and wrong."""
    from entangle_py.stages import run_stages
    from test_stages import BASE, EXPECT, STAGES, capture_skip
    paths = capture_skip(tmp_path)
    spec = tmp_path / "staged.toml"
    spec.write_text(BASE + STAGES + EXPECT)
    for dist, want in ((paths["dist"], [0, 0, 0]), (paths["swapped"], [0, 0, 1])):
        local = run_stages(paths["seq"], dist, str(spec), InProcessExecutor(), numeric=False)
        on_ray = run_stages(paths["seq"], dist, str(spec), RayExecutor(2), numeric=False)
        assert [e["exit_code"] for e in local] == [e["exit_code"] for e in on_ray] == want
        for a, b in zip(local, on_ray):
            assert T.without_timings(a["report"]) == T.without_timings(b["report"]), a["name"]
            assert b["worker"].startswith("ray:")
