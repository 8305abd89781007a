"""The commands in README.md and docs/*.md still run, and their links still resolve.

How the docs mark commands (this test enforces it):

- A ```console block is run.  A line starting with ``$ `` is a command, run with bash in a
  scratch directory holding copies of the repository's examples/ and graphs/ (one directory per
  document, in order, so a command sees the files earlier ones wrote).  The lines after it, up to
  the next ``$ `` line, are what it prints (stdout and stderr together); if there are none, the
  output is not compared.  In them a line ``...`` stands for any number of lines, ``...`` inside a
  line for any text, and a duration (``3.9 s``) for any duration.  The command must exit 0, or N
  when it ends with the comment ``# exits N``.
- A ```sh block holds commands too long to run here (the test tiers, gloo runs): one per line,
  each checked without running it.  ``entangle ...`` must parse with the real argument parser and
  name repository files that exist; ``python -m pytest ...`` may use only registered markers (and
  ``-n`` only with pytest-xdist installed); ``python FILE`` names a file that exists;
  ``pip install -e '.[EXTRA]'`` an extra pyproject.toml declares.
- A ```toml block is a spec file and must load.  A ```python or ```toml block right after a
  ``<!-- from: PATH -->`` line must appear verbatim in PATH.
- No other block, fenced or indented, may hold a command (a line starting with ``entangle `` or
  ``$ ``): a command the test does not see could rot.
- Every relative link ``[text](path#anchor)`` names a file or directory that exists and, for a
  markdown file, a heading that has that anchor.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BIN = Path(sys.executable).parent          # the environment's `entangle` script


# ----------------------------------------------------------------------------- reading the docs

@dataclass
class Block:
    lang: str            # "console", "sh", "python", "toml", "" (unlabelled), "indented"
    text: str
    line: int            # 1-based line of the block's first content line
    source: str | None = None     # PATH of a `<!-- from: PATH -->` line right before the fence


def blocks(path: Path) -> list[Block]:
    out, lines = [], path.read_text().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if m:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i][len(m.group(1)):])
                i += 1
            prev = lines[start - 2].strip() if start >= 2 else ""
            src = re.match(r"^<!--\s*from:\s*(\S+)\s*-->$", prev)
            out.append(Block(m.group(2), "\n".join(body), start + 1, src.group(1) if src else None))
        elif lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            start, body = i, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            out.append(Block("indented", "\n".join(body), start + 1))
            continue
        i += 1
    return out


@dataclass
class Command:
    cmd: str
    exits: int
    expected: list[str] = field(default_factory=list)
    line: int = 0


def console_commands(block: Block) -> list[Command]:
    cmds = []
    for k, ln in enumerate(block.text.split("\n")):
        if ln.startswith("$ "):
            m = re.search(r"#\s*exits\s+(\d+)\s*$", ln)
            cmds.append(Command(ln[2:], int(m.group(1)) if m else 0, line=block.line + k))
        elif cmds:
            cmds[-1].expected.append(ln)
        elif ln.strip():
            raise AssertionError(f"line {block.line + k}: a console block starts with a `$ ` command")
    for c in cmds:
        while c.expected and not c.expected[-1].strip():
            c.expected.pop()
    return cmds


# ----------------------------------------------------------------------------- comparing output

_DURATION = re.compile(r"\b\d+(?:\.\d+)? m?s\b")


def _line_pattern(expected: str) -> re.Pattern:
    parts = [re.escape(_DURATION.sub("<duration>", p)).replace("<duration>", _DURATION.pattern)
             for p in expected.rstrip().split("...")]
    return re.compile(".*".join(parts))


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` (with ``...`` lines and ``...`` inside lines) matches all of ``actual``."""
    pats = [None if e.strip() == "..." else _line_pattern(e) for e in expected]
    actual = [a.rstrip() for a in actual]
    memo = {}

    def match(i, j):
        if (i, j) not in memo:
            if i == len(pats):
                memo[i, j] = j == len(actual)
            elif pats[i] is None:
                memo[i, j] = any(match(i + 1, k) for k in range(j, len(actual) + 1))
            else:
                memo[i, j] = j < len(actual) and bool(pats[i].fullmatch(actual[j])) and match(i + 1, j + 1)
        return memo[i, j]
    return match(0, 0)


def test_output_matching_rules():
    """The wildcard rules themselves: they must still tell a wrong output from a right one."""
    assert output_matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a", "...", "b"], ["a", "b"])
    assert not output_matches(["a", "d"], ["a", "b", "d"])
    assert output_matches(["x (...) y"], ["x (1, 2) y"])
    assert not output_matches(["x (...) y"], ["x (1, 2) z"])
    assert output_matches(["-> seq.pt (3.9 s)"], ["-> seq.pt (12.25 s)"])
    assert not output_matches(["refines: 6 operators related"], ["refines: 7 operators related"])
    assert not output_matches(["a"], ["a", "b"])


# ----------------------------------------------------------------------------- running console blocks

def _run_document(path: Path, scratch: Path) -> list[tuple[Command, int, str]]:
    """Run every console command of ``path`` in order; returns (command, exit code, output)."""
    cmds = [c for b in blocks(path) if b.lang == "console" for c in console_commands(b)]
    if not cmds:
        return []
    scratch.mkdir(parents=True)
    for d in ("examples", "graphs"):
        shutil.copytree(ROOT / d, scratch / d, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", COLUMNS="100")
    results = []
    for c in cmds:
        p = subprocess.run(["bash", "-c", c.cmd], cwd=scratch, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        results.append((c, p.returncode, p.stdout))
    return results


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Every document's console commands, two documents at a time (each document's in order)."""
    base = tmp_path_factory.mktemp("docs")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {p: pool.submit(_run_document, p, base / p.stem) for p in DOCS}
        return {p: f.result() for p, f in futures.items()}


def _doc_id(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_console_commands_run(doc, ran):
    for c, rc, out in ran[doc]:
        where = f"{_doc_id(doc)}:{c.line}: $ {c.cmd}"
        assert rc == c.exits, f"{where}\nexited {rc}, the doc says {c.exits}; it printed:\n{out}"
        if c.expected:
            assert output_matches(c.expected, out.rstrip("\n").split("\n")), (
                f"{where}\nprinted:\n{out}\nthe doc shows:\n" + "\n".join(c.expected))


def test_readme_runs_the_quick_start_and_the_ci_command():
    """The README's promises: the quick start captures, checks and shows a failing twin, and the
    main command of .ci/run is shown with its output."""
    cmds = [c for b in blocks(ROOT / "README.md") if b.lang == "console" for c in console_commands(b)]
    text = [c.cmd for c in cmds]
    assert any(t.startswith("entangle capture examples/quickstart/tp_mlp.py ") for t in text)
    assert any(t.startswith("entangle check seq.pt dist.pt --spec examples/quickstart/spec.toml") for t in text)
    assert any(c.exits == 1 and c.cmd.startswith("entangle check") for c in cmds)
    ci = (ROOT / ".ci" / "run").read_text()
    main = "entangle check graphs/mlp_tp2/seq.pt graphs/mlp_tp2/dist.pt --spec graphs/mlp_tp2/spec.toml"
    assert main in ci and main in text
    assert all(c.expected for c in cmds if c.cmd.startswith("entangle check")), "show what each check prints"
    sh = [ln for b in blocks(ROOT / "README.md") if b.lang == "sh" for ln in b.text.split("\n")]
    assert "python -m pytest -q" in sh and "python -m pytest -q" in ci
    assert (ROOT / "README.md").stat().st_size <= 10_000


# ----------------------------------------------------------------------------- checking sh blocks

def _markers() -> set[str]:
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    return {m.split(":")[0].strip() for m in ini.get("markers", [])}


def _repo_paths(args) -> list[str]:
    """Arguments (or --flag=values) that name a file of the repository: relative paths with a
    directory; absolute paths and ../ name data outside it, which a fresh clone need not have."""
    vals = [a.split("=", 1)[1] if a.startswith("--") and "=" in a else a for a in args]
    return [v for v in vals if "/" in v and not v.startswith(("/", "../", "-")) and not re.match(r"^[a-z]+:", v)]


def check_sh_command(line: str) -> str | None:
    """Why ``line`` would not run (None: it looks runnable)."""
    args = shlex.split(line, comments=True)
    if not args:
        return None
    missing = [p for p in _repo_paths(args) if not (ROOT / p).exists()]
    if missing and args[0] in ("entangle", "python"):
        return f"no such file: {', '.join(missing)}"
    if args[0] == "entangle":
        from entangle_py.cli import build_parser
        try:
            build_parser().parse_args(args[1:])
        except SystemExit:
            return "entangle's argument parser refuses it"
        return None
    if args[:3] == ["python", "-m", "pytest"]:
        rest = args[3:]
        for i, a in enumerate(rest):
            if a == "-m":
                names = set(re.findall(r"[A-Za-z_]\w*", rest[i + 1])) - {"and", "or", "not"}
                if names - _markers():
                    return f"unregistered marker(s) {sorted(names - _markers())}"
            if a == "-n" and importlib.util.find_spec("xdist") is None:
                return "-n needs pytest-xdist"
        return None
    if args[0] in ("python", "python3") and len(args) > 1 and args[1].endswith(".py"):
        return None if (ROOT / args[1]).is_file() else f"no such file: {args[1]}"
    if args[0] == "python3" and args[1:3] == ["-m", "venv"] and len(args) == 4:
        return None
    if args[0] == "source" and len(args) == 2 and args[1].endswith("/bin/activate"):
        return None
    if args[:3] == ["pip", "install", "-e"] and len(args) == 4:
        m = re.fullmatch(r"\.\[(\w+)\]", args[3])
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        return None if m and m.group(1) in extras else f"no extra {args[3]!r} in pyproject.toml"
    return f"a command tests/test_docs.py does not know how to check: {args[0]}"


def test_sh_checker_refuses_what_would_not_run():
    assert check_sh_command("entangle check graphs/mlp_tp2/seq.pt graphs/mlp_tp2/dist.pt") is None
    assert check_sh_command("entangle check graphs/mlp_tp2/seq.pt graphs/mlp_tp2/dist.pt --sepc x") is not None
    assert check_sh_command("entangle check graphs/nope/seq.pt graphs/mlp_tp2/dist.pt") is not None
    assert check_sh_command("python -m pytest -q -m 'corpus and not gloo'") is None
    assert check_sh_command("python -m pytest -q -m corpora") is not None
    assert check_sh_command("python benchmarks/no_such_bench.py") is not None
    assert check_sh_command("pip install -e '.[tests]'") is not None
    assert check_sh_command("make all") is not None


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_sh_commands_would_run(doc):
    for b in blocks(doc):
        if b.lang == "sh":
            for k, ln in enumerate(b.text.split("\n")):
                why = check_sh_command(ln)
                assert why is None, f"{_doc_id(doc)}:{b.line + k}: {ln}\n{why}"


# ----------------------------------------------------------------------------- other blocks, links

@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_other_blocks(doc):
    from entangle_py.check.spec import parse_spec
    for b in blocks(doc):
        where = f"{_doc_id(doc)}:{b.line}"
        if b.lang not in ("console", "sh"):
            hidden = [ln for ln in b.text.split("\n") if ln.startswith(("entangle ", "$ "))]
            assert not hidden, f"{where}: a command outside a console or sh block: {hidden[0]}"
        if b.lang == "toml":
            parse_spec(tomllib.loads(b.text), where)
        if b.source is not None:
            assert b.text.strip("\n") in (ROOT / b.source).read_text(), f"{where}: not as in {b.source}"


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a markdown file."""
    out, fenced = set(), False
    for ln in path.read_text().split("\n"):
        if ln.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*)$", ln)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_links_resolve(doc):
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        assert path.exists(), f"{_doc_id(doc)}: link to {target}: no such file"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{_doc_id(doc)}: link to {target}: no such heading"


def test_help_workflow_commands_would_run():
    """The workflow `entangle --help` shows names files that exist and flags the parser takes."""
    from entangle_py.cli import WORKFLOW
    lines = [ln.strip() for ln in WORKFLOW.split("\n") if ln.strip().startswith("entangle ")]
    assert len(lines) >= 3
    for ln in lines:
        assert check_sh_command(ln) is None, ln


def test_corpus_table_is_written_between_its_markers(tmp_path):
    """`benchmarks/program_table.py --write` regenerates docs/corpus-results.md's table and keeps
    the prose around it."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import program_table
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert program_table.DOC == ROOT / "docs" / "corpus-results.md"
    doc = tmp_path / "corpus-results.md"
    doc.write_text(program_table.DOC.read_text())
    program_table.write_doc(doc, "| new | table |")
    before, after = program_table.DOC.read_text(), doc.read_text()
    head = before.split(program_table.BEGIN)[0]
    tail = before.split(program_table.END)[1]
    assert after == f"{head}{program_table.BEGIN}\n| new | table |\n{program_table.END}{tail}"
    doc.write_text("no markers")
    with pytest.raises(SystemExit):
        program_table.write_doc(doc, "x")
