"""Command line: ``entangle capture | show | check | check-many | explain | import-fx``.

Each subcommand lives in the module that does the job; this file only parses arguments and turns
errors a user can act on into one line on stderr and exit code 2 (no traceback).
"""
from __future__ import annotations

import argparse
import sys

from entangle_py.errors import InputError

EXIT_BAD_INPUT = 2


def _add_capture(sub):
    p = sub.add_parser("capture", help="capture a sequential or multi-rank program into a graph bundle",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TARGETS)
    p.add_argument("script", metavar="TARGET",
                   help="the program: SCRIPT.py (defines build(rank, world_size)), SCRIPT.py:FUNCTION or "
                        "MODULE:FUNCTION (a build function by name; see docs/capture.md)")
    p.add_argument("--world-size", type=int, default=1, help="number of ranks to simulate (1 = sequential)")
    p.add_argument("--joint", action="store_true", help="capture the joint forward+backward graph")
    p.add_argument("--dynamic", action="store_true", help="capture with dynamic (symbolic) sizes")
    p.add_argument("-v", "--verbose", action="store_true", help="per-rank progress on stderr (default: when a terminal)")
    p.add_argument("-o", "--output", required=True, help="bundle to write (.pt, .json, .json.gz)")

    def run(args):
        from entangle_py.frontend.capture import cli_capture
        return cli_capture(args)
    p.set_defaults(run=run)


def _add_show(sub):
    p = sub.add_parser("show", help="summarise a graph bundle")
    p.add_argument("file")
    p.add_argument("--node", help="print one node (with its source line)")
    p.add_argument("--rank", type=int, default=None, help="only this rank")

    def run(args):
        from entangle_py.frontend.show import cli_show
        return cli_show(args)
    p.set_defaults(run=run)


def _add_check(sub):
    p = sub.add_parser("check", help="prove that DIST refines SEQ", epilog=WORKFLOW + "\n\n" + EXIT_CODES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("seq", help="sequential bundle (1 rank), or its FX text dump (.py)")
    p.add_argument("dist", help="distributed bundle (every rank), or a directory of per-rank FX text dumps")
    p.add_argument("--spec", help="spec file (TOML): input relation, outputs to check, expectations")
    p.add_argument("--write-spec", metavar="F", help="write the (inferred) spec to F")
    p.add_argument("--json", metavar="REPORT", help="write the report as JSON (schema: docs/report-schema.md)")
    p.add_argument("--html", metavar="FILE", help="write the report as one self-contained HTML page")
    p.add_argument("--sarif", metavar="FILE", help="write the failing source lines as SARIF 2.1.0 (CI annotations)")
    p.add_argument("-v", "--verbose", action="store_true", help="phase timings and details")
    p.add_argument("--lemmas", action="append", default=[], metavar="FILE.py",
                   help="extra lemma file (custom ops); may repeat")
    from entangle_py.config import ASSUMPTIONS, MEMORY_FRACTION, Limits
    p.add_argument("--assume", action="append", default=[], metavar="NAME",
                   help="an assumption, as [assume] NAME = true in the spec would say (printed with the verdict, "
                        f"never proven); may repeat: {', '.join(sorted(ASSUMPTIONS))}")
    d = Limits()
    p.add_argument("--max-iterations", type=int, default=d.iterations,
                   help=f"lemma iterations per attempt at an operator before giving up (exit 3; default {d.iterations})")
    p.add_argument("--max-enodes", type=int, default=d.nodes,
                   help=f"e-graph size before giving up (exit 3; default {d.nodes})")
    p.add_argument("--max-matches", type=int, default=d.matches,
                   help=f"rule matches per attempt at an operator before giving up (exit 3; default {d.matches})")
    p.add_argument("--max-seconds", type=float, default=d.seconds,
                   help=f"wall seconds per attempt at an operator before giving up, a last resort (exit 3; default {d.seconds:g})")
    p.add_argument("--max-memory", type=_bytes, default=d.memory, metavar="BYTES",
                   help=f"resident memory of the check before giving up, e.g. 4G (exit 3; default "
                        f"{MEMORY_FRACTION * 100:.0f}%% of the memory this process may use: the machine's, its container's or ulimit -v)")

    p.add_argument("--no-numeric", action="store_true",
                   help="skip the interpreter's re-check of a proof and the witness of a failure")
    p.add_argument("--no-memo", action="store_true",
                   help="prove every block of a repeated stack (no layer memoization; docs/memoization.md)")
    p.add_argument("--recheck-budget", type=int, default=2 << 30, metavar="BYTES",
                   help="memory the numeric re-check may use (estimated from the shapes; default 2 GB)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="with [stages] in the spec: stages checked at once (default: the cores; docs/scale-out.md)")
    p.add_argument("--ray", action="store_true", help="with [stages]: check the stages on a local Ray cluster")
    p.add_argument("--ray-address", metavar="ADDR", help="with [stages]: check the stages on the Ray cluster at ADDR")

    def run(args):
        from entangle_py.check.spec import load_spec
        spec = load_spec(args.spec) if args.spec else None
        if spec is not None and spec.stages:
            from entangle_py.stages import run_stages_cli
            return run_stages_cli(args, spec)
        given = [f for f, v in (("--workers", args.workers), ("--ray", args.ray), ("--ray-address", args.ray_address)) if v]
        if given:
            raise InputError(f"{', '.join(given)}: only a check by stages runs on workers (a spec with [stages]; "
                             f"docs/scale-out.md)")
        from entangle_py.pipeline import run_check_cli
        return run_check_cli(args)
    p.set_defaults(run=run)


def _bytes(text: str) -> int:
    """A byte count: digits with an optional K, M or G (powers of 1024)."""
    t = text.strip().upper().removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    try:
        n = float(t[:-1] if scale > 1 else t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a byte count: {text!r} (e.g. 4G, 512M)") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"not a positive byte count: {text!r}")
    return int(n)


def _add_check_many(sub):
    p = sub.add_parser("check-many", help="run the checks of a manifest on parallel workers (a process pool or Ray)",
                       epilog=EXIT_CODES_MANY, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("manifest", help="TOML: one [[check]] table per pair (seq, dist, spec; see docs/scale-out.md)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="checks at once (default: the cores); 1 runs them in this process")
    p.add_argument("--ray", action="store_true", help="run on a local Ray cluster started here (pip install -e '.[ray]')")
    p.add_argument("--ray-address", metavar="ADDR", help="run on the existing Ray cluster at ADDR")
    p.add_argument("--json", metavar="REPORT", help="write one entry per check (verdict, time, worker, its report)")
    p.add_argument("--max-memory", type=_bytes, default=0, metavar="BYTES",
                   help="resident memory of each check before it gives up (default: half the machine's, "
                        "split between the workers)")

    def run(args):
        from entangle_py.check_many import run_check_many_cli
        return run_check_many_cli(args)
    p.set_defaults(run=run)


def _add_explain(sub):
    p = sub.add_parser("explain", help="explain one operator of a JSON report (default: the failing one)")
    p.add_argument("report", help="a report written by `entangle check ... --json REPORT`")
    p.add_argument("--op", metavar="NAME", help="operator (G_s node or output name; default: the failing one)")
    p.add_argument("-k", type=int, default=5, help="candidate terms to show (default 5)")

    def run(args):
        from entangle_py.report.explain import cli_explain
        return cli_explain(args)
    p.set_defaults(run=run)


def _add_import_fx(sub):
    p = sub.add_parser("import-fx", help="import GraphModule.print_readable() text dumps (one per rank)")
    p.add_argument("files", nargs="+", help="one file per rank, in rank order")
    p.add_argument("-o", "--output", required=True, help="bundle to write (.pt, .json, .json.gz)")
    p.add_argument("--kind", default=None, help="forward | joint (default: from the signature)")

    def run(args):
        from entangle_py.frontend.fx_import import cli_import_fx
        return cli_import_fx(args)
    p.set_defaults(run=run)


TARGETS = """targets:
  entangle capture prog.py -o seq.pt                       # prog.py defines build(rank, world_size)
  entangle capture prog.py:tp2_correct --world-size 2 -o dist.pt   # a builder prog.py names
  entangle capture mypkg.models:build_mlp -o seq.pt        # a module's builder (from the working directory)"""

WORKFLOW = """workflow (examples/quickstart/: capture the program at world size 1 and at its world
size, say how the ranks hold the tensors in a spec, check):
  entangle capture examples/quickstart/tp_mlp.py -o seq.pt
  entangle capture examples/quickstart/tp_mlp.py --world-size 2 -o dist.pt
  entangle check seq.pt dist.pt --spec examples/quickstart/spec.toml
  entangle check seq.pt dist.pt --write-spec spec.toml   # no spec yet: infer one from the shapes"""

EXIT_CODES = """exit codes:
  0  refines: every checked output has a certificate over the distributed program's outputs
  1  refinement fails (the first operator without a clean mapping), or an expectation does not hold
  2  bad input, or an op / argument the checker cannot express (one line on stderr)
  3  unknown: a limit was hit (the operator and the limit are named)
  4  internal soundness error: a proof step is wrong (a lemma or a lowering); please report it"""


EXIT_CODES_MANY = """exit code: the largest of the checks' (0 when every check refines); a check whose worker
died on both attempts counts 3 (it could not finish), one whose checker raised counts 4."""


def build_parser() -> argparse.ArgumentParser:
    from entangle_py import __version__
    parser = argparse.ArgumentParser(
        prog="entangle", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Prove that a distributed PyTorch program refines its single-device specification.",
        epilog=WORKFLOW + "\n\n" + EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"entangle-py {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_capture, _add_show, _add_check, _add_check_many, _add_explain, _add_import_fx):
        add(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except InputError as e:
        print(f"entangle {args.command}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"entangle {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
