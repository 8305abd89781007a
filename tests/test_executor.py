"""The executor (entangle_py/executor.py) and `entangle check-many`: the local pool gives the
in-process verdicts and reports on shipped and corpus pairs, a killed worker is retried once, a
task that cannot finish is named with why, and --ray without Ray is a clear exit 2.  The same on a
real Ray cluster: tests/test_executor_ray.py (-m ray)."""
from __future__ import annotations

import json
import sys

import pytest

from entangle_py.executor import InProcessExecutor, ProcessPoolExecutor, Task, make_executor
from tooling import executor_tasks as T


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return T.corpus_manifest(tmp_path_factory.mktemp("check_many"))


def _check_many(entangle, manifest, tmp_path, *flags):
    out = tmp_path / f"report{len(flags)}{'-'.join(flags)}.json"
    p = entangle("check-many", manifest, "--json", out, "--max-memory", "3G", *flags)
    return p, json.loads(out.read_text())


def test_pool_gives_the_in_process_verdicts_and_reports(entangle, manifest, tmp_path):
    one, data1 = _check_many(entangle, manifest, tmp_path, "--workers", "1")
    two, data2 = _check_many(entangle, manifest, tmp_path, "--workers", "2")
    assert data1["executor"] == "in-process" and data2["executor"] == "process pool", (data1, data2)
    got = {e["name"]: e["exit_code"] for e in data1["tasks"]}
    assert got == T.EXPECTED, one.stdout + one.stderr
    assert one.returncode == two.returncode == 1           # the largest exit code: a wrong pair
    for a, b in zip(data1["tasks"], data2["tasks"]):
        assert (a["name"], a["status"], a["exit_code"]) == (b["name"], b["status"], b["exit_code"])
        assert T.without_timings(a["report"]) == T.without_timings(b["report"]), a["name"]
    # both pool workers took checks, and each task's line and table row name its worker
    assert {e["worker"].split(":")[1].split("/")[0] for e in data2["tasks"]} == {"pool-0", "pool-1"}
    for e in data2["tasks"]:
        assert f"{e['name']}: {e['status']} (exit {e['exit_code']})" in two.stdout
        assert e["worker"] in two.stdout and e["peak_rss"] > 0 and e["attempts"] == 1


def test_a_killed_worker_is_retried_once(tmp_path):
    tasks = [Task("square", T.square, (3,)), Task("killed once", T.die_once, (str(tmp_path / "marker"),)),
             Task("square again", T.square, (4,))]
    seen = []
    results = ProcessPoolExecutor(2).run(tasks, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == [0, 1, 2]
    assert [r.ok for r in results] == [True, True, True], [r.error for r in results]
    assert results[0].value[0] == 9 and results[2].value[0] == 16
    r = results[1]
    assert r.value == "survived" and r.attempts == 2
    assert len(r.deaths) == 1 and "killed by SIGKILL" in r.deaths[0], r.deaths


def test_a_task_whose_worker_always_dies_is_named_and_the_others_finish():
    tasks = [Task("doomed", T.die_always), Task("square", T.square, (5,))]
    doomed, fine = ProcessPoolExecutor(2).run(tasks)
    assert fine.ok and fine.value[0] == 25
    assert not doomed.ok and doomed.name == "doomed" and doomed.attempts == 2
    assert doomed.error.count("killed by SIGKILL") == 2, doomed.error


@pytest.mark.parametrize("executor", [InProcessExecutor(), ProcessPoolExecutor(2)], ids=["in-process", "pool"])
def test_a_task_that_raises_is_not_retried(executor):
    bad, good = executor.run([Task("raises", T.raise_error), Task("square", T.square, (2,))])
    assert good.ok and good.value[0] == 4
    assert not bad.ok and bad.attempts == 1 and not bad.deaths
    assert bad.error.startswith("ValueError: a task's own failure at ") and "executor_tasks.py" in bad.error


def test_check_many_names_a_check_that_cannot_finish(entangle, tmp_path):
    """A check whose graph file kills its reader is not something we can make without a bug; a
    worker killed under it is: the check is reported as died (exit 3), with both attempts."""
    from entangle_py.check_many import run_check_many, load_manifest, CheckTask
    d = T.ROOT / "graphs" / "mlp_tp2"
    (tmp_path / "m.toml").write_text(f'[[check]]\nseq = "{d / "seq.pt"}"\ndist = "{d / "dist.pt"}"\n')
    tasks = load_manifest(tmp_path / "m.toml")
    assert tasks == [CheckTask("mlp_tp2/dist.pt", str(d / "seq.pt"), str(d / "dist.pt"))]

    class KillingPool(ProcessPoolExecutor):     # the pool itself, with the check swapped for a killer
        def run(self, tasks, on_result=None):
            return super().run([Task(t.name, T.die_always) for t in tasks], on_result)
    [entry] = run_check_many(tasks, KillingPool(1))
    assert entry["status"] == "died" and entry["exit_code"] == 3 and entry["attempts"] == 2
    assert "worker died on every attempt" in entry["message"] and "SIGKILL" in entry["message"]


def test_ray_without_ray_installed_is_exit_2(tmp_path):
    """Ray made unimportable (as in the default install, which has none): a clear message, exit 2."""
    import subprocess
    d = T.ROOT / "graphs" / "mlp_tp2"
    (tmp_path / "m.toml").write_text(f'[[check]]\nseq = "{d / "seq.pt"}"\ndist = "{d / "dist.pt"}"\n')
    for flags in (["--ray"], ["--ray-address", "127.0.0.1:6379"]):
        code = ("import sys; sys.modules['ray'] = None\n"
                "from entangle_py.cli import main\n"
                f"raise SystemExit(main(['check-many', {str(tmp_path / 'm.toml')!r}, *{flags!r}]))")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=T.ROOT)
        assert p.returncode == 2, p.stdout + p.stderr
        assert "--ray needs Ray, which is not installed: pip install 'entangle-py[ray]'" in p.stderr
        assert "Traceback" not in p.stderr


@pytest.mark.parametrize("text, message", [
    ("", "expected one or more [[check]] tables"),
    ('[[check]]\nseq = "a.pt"\n', "'dist' (a graph file) is required"),
    ('[[check]]\nseq = "a.pt"\ndist = "b.pt"\nspecs = "x"\n', "unknown key(s) ['specs']"),
    ('[[check]]\nseq = "a.pt"\ndist = "b.pt"\n', "seq file not found"),
    ("[[check]\n", "cannot read manifest"),
])
def test_a_bad_manifest_is_exit_2(entangle, tmp_path, text, message):
    (tmp_path / "m.toml").write_text(text)
    p = entangle("check-many", tmp_path / "m.toml", "--workers", "1")
    assert p.returncode == 2 and message in p.stderr, p.stderr


def test_workers_must_be_positive():
    from entangle_py.errors import InputError
    with pytest.raises(InputError, match="--workers must be at least 1"):
        make_executor(0)
    assert isinstance(make_executor(1), InProcessExecutor)
    assert isinstance(make_executor(3), ProcessPoolExecutor) and make_executor(3).workers == 3
