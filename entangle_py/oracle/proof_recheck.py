"""The re-check after "refines": every certificate, per-operator relation and expectation the proof
found is evaluated on random draws; a disagreement is an internal soundness error (exit 4) naming
the first G_s operator whose relation is numerically false (see ``recheck.py``)."""
from __future__ import annotations

import time

from entangle_py.lazy import torch
from entangle_py.oracle import graph_values
from entangle_py.oracle import placement
from entangle_py.check import spec as S
from entangle_py.check.checker import OpFailure
from entangle_py.semantics.terms import EvalError, parse_sexpr
from entangle_py.oracle.numeric_runs import DEFAULT_BUDGET, DEFAULT_DRAWS, Draw, Skip, compare, diff_text, prepare


# ----------------------------------------------------------------------------- re-check

def recheck(checker, result, draws: int = DEFAULT_DRAWS, budget_bytes: int = DEFAULT_BUDGET, seed: int = 0) -> dict:
    """Evaluate every certificate and expectation numerically; on a disagreement the result
    becomes an internal soundness error (exit 4) naming the first G_s operator whose relation
    disagrees."""
    out = {"kind": "recheck", "status": "skipped", "draws": 0, "checked": sorted(result.certificates)}
    t0 = time.perf_counter()
    try:
        sizes, need = prepare(checker, budget_bytes)
        out.update(sizes=sizes, estimated_bytes=need)
        for d in range(draws):
            run = Draw(checker, seed + d, sizes)
            out["draws"] = d + 1
            # every per-operator relation, then every certificate: a proof step that is false on
            # some values is a soundness error even where the output's certificate happens to hold
            culprit = first_wrong_op(checker, result, run)
            bad = recheck_draw(checker, result, run)
            if culprit or bad:
                out.update(status="disagrees", **(bad or {"output": None, "relation": None, "diff": culprit["diff"]}))
                out["operator"] = culprit
                mark_unsound(checker, result, bad, culprit)
                break
        else:
            out["status"] = "agrees"
    except Skip as e:
        out["reason"] = str(e)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def recheck_draw(checker, result, run: Draw) -> dict | None:
    for port, cert in result.certificates.items():
        expected = run.seq_value(port)
        try:
            got = run.eval(cert)
        except EvalError as e:
            raise Skip(f"cannot evaluate the certificate of {port}: {e}") from None
        c = compare(expected, got)
        if not c["equal"]:
            return {"output": port, "relation": result.relations.get(port, cert), "diff": c}
    W = checker.dist.world_size
    for name, rel in checker.expectations:
        if not any(ok and n == name and req == str(rel) for n, req, found, ok in result.expectations):
            continue
        req = str(rel)
        pname, node = checker._expect_target(name)
        expected = run.seq_env[node]
        ndim = expected.dim() if isinstance(expected, torch.Tensor) else None
        for t in S.relation_terms(rel, pname, W, checker.spec.mesh, ndim=ndim):
            try:
                got = placement.eval_term(t, run.named())
            except graph_values.InterpError as e:
                raise Skip(f"cannot evaluate expectation {name} = {req}: {e}") from None
            c = compare(expected, got)
            if not c["equal"]:
                return {"output": name, "relation": f"expect {req} ({t})", "diff": c}
    return None


def first_wrong_op(checker, result, run: Draw) -> dict | None:
    """The first G_s operator (topological order) whose own clean term disagrees numerically."""
    for n in checker.seq.nodes:
        text = result.op_relations.get(n.name)
        if text is None or n.name not in run.seq_env:
            continue
        try:
            got = run.eval(text)
        except EvalError:
            continue
        c = compare(run.seq_env[n.name], got)
        if not c["equal"]:
            return {"node": n.name, "target": n.target, "source": str(n.source) if n.source else None,
                    "relation": checker.show_term(parse_sexpr(text)), "diff": c}
    return None


def mark_unsound(checker, result, bad: dict, culprit: dict | None):
    if culprit is None:      # every operator's relation holds: the output step itself is wrong
        port = bad["output"]
        node = checker.seq_names.node(port) or port
        n = checker.seq.node(node)
        culprit_desc = {"node": node, "target": n.target, "source": str(n.source) if n.source else None,
                        "relation": bad["relation"], "diff": bad["diff"]}
        where = f"the output relation {port} = {bad['relation']}"
    else:
        culprit_desc = culprit
        where = f"the relation of {culprit['node']} = {culprit['relation']}"
    d = culprit_desc["diff"]
    result.status = "internal-error"
    result.failure = OpFailure(
        node=culprit_desc["node"], target=culprit_desc["target"], source=culprit_desc["source"], inputs={},
        best=str(culprit_desc["relation"]), considered=[],
        reason=f"internal soundness error: the proof says {where}, but the interpreter computes something "
               f"else ({diff_text(d)}); a lemma or lowering used for this operator is wrong")
