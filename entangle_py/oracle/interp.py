"""Numeric interpreter over graph bundles: run G_s and every rank of G_d with real torch ops on CPU.

Used for capture-faithfulness tests and for failure evidence (DESIGN §6): run both programs
(possibly only up to some nodes, ``upto``) on inputs from ``placement`` and compare.

* Op targets resolve only against the whitelisted namespaces (``ir.ops.NAMESPACES``) with
  ``getattr`` on ``torch.ops`` -- nothing from a graph file is ever evaluated.
* Device constants (meta, cuda, ...) become ``cpu``; ``pin_memory`` is dropped.  With
  ``float_dtype`` every floating-point dtype constant is replaced (run a float32/bf16 capture in
  float64).
* Symbolic sizes in arguments are evaluated with the symbols bound by unifying each placeholder's
  shape with the actual input's shape (SymInt placeholders get their value from that binding).
* Collectives are simulated across ranks in one process: each rank's interpretation is a generator
  that issues every collective without blocking into its communicator's queue (a communicator is
  a process group: its name and members; two groups with the same members are two), and waits
  for a collective's value where a later node reads it; the k-th collectives of the members on
  one communicator are matched and computed together, as c10d orders them.  A rank whose collective does not match its peers' raises
  ``CollectiveMismatch`` naming both ranks, nodes and ops.
"""
from __future__ import annotations

from collections import deque
from typing import Any

from entangle_py.lazy import sympy, torch
from entangle_py.ir import graph as G
from entangle_py.ir import ops
from entangle_py.oracle.collectives import Request, check_match, collective_results, positional_args
from entangle_py.oracle.graph_values import (CollectiveMismatch, InterpError, ShapeMismatch, UnsupportedOp, eval_condition,
                                             eval_size, resolve_op, split_target, torch_const, try_eval, unify_shape)


# ----------------------------------------------------------------------------- the interpreter

_PARK = object()   # yielded by a rank whose ``upto`` nodes are all computed


class Runner:
    def __init__(self, bundle: G.Bundle, inputs_per_rank, upto, float_dtype, check_shapes):
        if len(inputs_per_rank) != bundle.world_size:
            raise InterpError(f"{len(inputs_per_rank)} input dicts for a {bundle.world_size}-rank bundle")
        self.bundle = bundle
        self.W = bundle.world_size
        self.float_dtype = float_dtype
        self.check_shapes = check_shapes
        self.upto = upto
        self.envs: list[dict[str, Any]] = [dict() for _ in range(self.W)]
        self.bindings: list[dict[str, int]] = [dict() for _ in range(self.W)]
        self.mailbox: dict[tuple, deque] = {}
        for r in range(self.W):
            self._bind_inputs(r, inputs_per_rank[r])

    # -- inputs
    def _bind_inputs(self, r: int, given: dict):
        g = self.bundle.rank(r)
        env, binding = self.envs[r], self.bindings[r]
        by_node = {p.node: p.name for p in g.inputs}
        known = set(by_node.values()) | {n.name for n in g.nodes if n.is_placeholder}
        unknown = set(given) - known
        if unknown:
            raise InterpError(f"rank {r}: inputs {sorted(unknown)} are not inputs of the graph "
                              f"(inputs: {', '.join(p.name for p in g.inputs)})")
        placeholders = [n for n in g.nodes if n.is_placeholder]
        missing = []
        later = []
        for n in placeholders:
            port = by_node.get(n.name, n.name)
            key = port if port in given else (n.name if n.name in given else None)
            if isinstance(n.val, G.TensorMeta):
                if key is None:
                    missing.append(port)
                    continue
                t = given[key]
                if not isinstance(t, torch.Tensor):
                    raise InterpError(f"rank {r}: input {port!r} must be a tensor, got {type(t).__name__}")
                unify_shape(n.val.shape, t.shape, binding, f"rank {r} input {port!r}")
                env[n.name] = t.clone()    # in-place ops in the graph must not touch the caller's tensors
            else:
                later.append((n, port, key))
        if missing:
            raise InterpError(f"rank {r}: missing input(s) {', '.join(repr(m) for m in missing)}")
        for n, port, key in later:
            if key is not None:
                v = given[key]
                if isinstance(n.val, G.SymIntMeta):
                    v = int(v)
                    e = n.val.expr
                    if isinstance(e, sympy.Symbol) and e.name not in binding:
                        binding[e.name] = v
                    elif try_eval(e, binding) not in (v, e):
                        raise ShapeMismatch(f"rank {r} input {port!r}: given {v} but the shapes say {e} = {try_eval(e, binding)}")
                env[n.name] = v
            elif isinstance(n.val, G.SymIntMeta):
                env[n.name] = eval_size(n.val.expr, binding, f"rank {r} SymInt input {port!r}")
            else:
                raise InterpError(f"rank {r}: missing input {port!r} ({n.val!r})")

    # -- argument resolution
    def _arg(self, r, v, node):
        if isinstance(v, G.Ref):
            try:
                return self.envs[r][v.name]
            except KeyError:
                raise InterpError(f"rank {r} node {node.name!r}: argument {v.name!r} has not been computed") from None
        if isinstance(v, G.TorchConst):
            return torch_const(v, self.float_dtype)
        if isinstance(v, (list, tuple)):
            return [self._arg(r, x, node) for x in v]
        if isinstance(v, sympy.Basic):
            if v is sympy.true or v is sympy.false:
                return bool(v)
            if isinstance(v, (sympy.core.relational.Relational, sympy.logic.boolalg.BooleanFunction)):  # u0 <= 8
                return eval_condition(v, self.bindings[r], f"rank {r} node {node.name!r}")
            return eval_size(v, self.bindings[r], f"rank {r} node {node.name!r}")
        return v

    def _args(self, r, node):
        args = [self._arg(r, a, node) for a in node.args]
        kwargs = {k: self._arg(r, v, node) for k, v in node.kwargs.items() if k != "pin_memory"}
        return args, kwargs

    def _finish_collective(self, r, req: Request, name: str):
        """A collective's value replaces its request in the rank's environment."""
        self.envs[r][name] = req.value
        if self.check_shapes:
            self._check_val(r, req.node, req.node.val, req.value)

    def _comm_of(self, r, node) -> tuple:
        """The communicator a collective runs on: its group's name and members (two groups with
        the same members are two communicators, each with its own order of collectives)."""
        A = positional_args(node.target, *self._args(r, node))
        op = split_target(node.target)[1]
        idx = ops.GROUP_ARG.get(op.replace("_coalesced", ""))
        name = A[idx] if idx is not None and idx < len(A) else None
        members = tuple(self._group(r, node, name))
        return G.communicator(self.bundle.ranks, name, members)

    # -- group lookup
    def _group(self, r, node, name):
        g = self.bundle.rank(r)
        if isinstance(name, (list, tuple)):   # legacy c10d_functional: explicit rank list
            members = tuple(int(x) for x in name)
        elif name in g.groups:
            members = tuple(g.groups[name])
        elif not g.groups:
            members = tuple(range(self.W))    # no group table: the whole world
        else:
            raise InterpError(f"rank {r} node {node.name!r}: process group {name!r} is not in the rank's group "
                              f"table ({', '.join(sorted(g.groups))})")
        if r not in members:
            raise CollectiveMismatch(f"rank {r} node {node.name!r}: {node.target} on group {name!r} = ranks "
                                     f"{list(members)}, which does not include rank {r}")
        if any(not 0 <= m < self.W for m in members):
            raise InterpError(f"rank {r} node {node.name!r}: group {name!r} names ranks outside the world {list(members)}")
        return members

    def _collective(self, r, node, args, kwargs):
        ns, op, _ = split_target(node.target)
        if op == "wait_tensor":
            return None, args[0]
        legacy = ns == ops.LEGACY_COLLECTIVE_NAMESPACE
        A = positional_args(node.target, args, kwargs)

        def grp(i_name, i_ranks):
            return self._group(r, node, A[i_ranks] if legacy else A[i_name])

        def tens(x):
            return [x] if isinstance(x, torch.Tensor) else list(x)

        if op in ("all_reduce", "all_reduce_", "all_reduce_coalesced", "all_reduce_coalesced_"):
            kind = "all_reduce_coalesced" if "coalesced" in op else "all_reduce"
            return Request(r, node, kind, grp(2, 3), tens(A[0]), {"reduce_op": str(A[1]).lower()}), None
        if op in ("all_gather_into_tensor", "all_gather_into_tensor_coalesced"):
            members = grp(2, 2)
            size = int(A[3] if legacy else A[1])
            self._check_group_size(r, node, members, size)
            return Request(r, node, "all_gather_coalesced" if "coalesced" in op else "all_gather", members,
                            tens(A[0]), {"group_size": size}), None
        if op in ("reduce_scatter_tensor", "reduce_scatter_tensor_coalesced"):
            members = grp(3, 3)
            size = int(A[4] if legacy else A[2])
            self._check_group_size(r, node, members, size)
            return Request(r, node, "reduce_scatter_coalesced" if "coalesced" in op else "reduce_scatter", members,
                            tens(A[0]), {"reduce_op": str(A[1]).lower(), "group_size": size}), None
        if op == "all_to_all_single":
            members = grp(3, 4)
            return Request(r, node, "all_to_all", members, [A[0]],
                            {"output_split_sizes": A[1], "input_split_sizes": A[2]}), None
        if op in ("broadcast", "broadcast_"):
            # src is a GROUP rank (torch passes it to the process group as its root rank): on the
            # group [1, 0], src=0 sends global rank 1's tensor (tests/test_interp_gloo.py, on gloo).
            # dist.broadcast's src is global, but Dynamo does not remap it to this op.
            members = grp(2, 3)
            return Request(r, node, "broadcast", members, [A[0]], {"src": int(A[1])}), None
        if op == "shard_dim_alltoall":
            return Request(r, node, "shard_dim_alltoall", grp(3, 3), [A[0]],
                            {"gather_dim": int(A[1]), "shard_dim": int(A[2])}), None
        if op in ("isend", "irecv", "batch_p2p_ops"):
            return self._p2p(r, node, op, A), None
        raise UnsupportedOp(f"rank {r} node {node.name!r}: collective {node.target!r} is not supported by the interpreter")

    @staticmethod
    def _check_group_size(r, node, members, size):
        if size != len(members):
            raise CollectiveMismatch(f"rank {r} node {node.name!r}: {node.target} says group_size={size} but its "
                                     f"group has {len(members)} ranks {list(members)}")

    def _p2p(self, r, node, op, A):
        if op == "isend":       # a send's own output is an empty tensor (as torch's kernel returns)
            self._post(r, int(A[1]), int(A[2]), A[0])
            return ("value", A[0].new_empty(0))
        if op == "irecv":
            return Request(r, node, "recv", (int(A[1]), r), [A[0]], {"recvs": [(0, int(A[1]), int(A[2]), A[0])]})
        ops, peers, tags, tensors = A[0], A[1], A[2], A[3]
        recvs = []
        for i, (o, p, t, x) in enumerate(zip(ops, peers, tags, tensors)):
            if o == "isend":
                self._post(r, int(p), int(t), x)
            elif o == "irecv":
                recvs.append((i, int(p), int(t), x))
            else:
                raise UnsupportedOp(f"rank {r} node {node.name!r}: p2p op {o!r}")
        return Request(r, node, "batch_recv", tuple(sorted({p for _, p, _, _ in recvs} | {r})), list(tensors),
                        {"recvs": recvs})

    def _post(self, src, dst, tag, t):
        if not 0 <= dst < self.W:
            raise InterpError(f"rank {src}: send to rank {dst} outside the world")
        self.mailbox.setdefault((src, dst, tag), deque()).append(t.clone())

    def _try_recv(self, req: Request):
        recvs = req.params["recvs"]
        if not all(self.mailbox.get((p, req.rank, t)) for _, p, t, _ in recvs):
            return False, None
        got = {}
        for i, p, t, buf in recvs:
            msg = self.mailbox[(p, req.rank, t)].popleft()
            if msg.shape != buf.shape:
                raise CollectiveMismatch(f"rank {req.rank} node {req.node.name!r}: receives shape {list(buf.shape)} "
                                         f"from rank {p} but rank {p} sent {list(msg.shape)}")
            got[i] = msg.to(buf.dtype)
        if req.kind == "recv":
            return True, got[0]
        return True, [got[i] if i in got else x.new_empty(0) for i, x in enumerate(req.tensors)]

    # -- one rank
    def _program(self, r):
        g = self.bundle.rank(r)
        env = self.envs[r]
        goal = None
        if self.upto is not None:
            goal = set(self.upto.get(r, ()))
            unknown = [x for x in goal if not g.has(x)]
            if unknown:
                raise InterpError(f"rank {r}: upto names unknown node(s) {sorted(unknown)}")
            goal -= set(env)
        for node in g.nodes:
            if goal is not None and not goal:
                yield _PARK
            if node.is_placeholder:
                continue
            for ref in node.refs():
                held = env.get(ref)
                if isinstance(held, Request):
                    if not held.done:
                        yield ("wait", held)
                    self._finish_collective(r, held, ref)
            args, kwargs = self._args(r, node)
            target = node.target
            ns = node.namespace
            try:
                if target == "getitem":
                    v = args[0][args[1]]
                elif ns in ops.COLLECTIVE_NAMESPACES:
                    req, v = self._collective(r, node, args, kwargs)
                    if isinstance(req, tuple):      # isend: completes at once
                        v = req[1]
                    elif req is not None and req.kind in ("recv", "batch_recv"):
                        v = yield req
                    elif req is not None:
                        # issued without blocking, like c10d: the value is waited for by its first reader
                        req.comm = self._comm_of(r, node)
                        yield ("issue", req)
                        v = req
                elif ns == "tg" and ops.op_name(node.target) in ops.NAMING_OP_NAMES:
                    v = args[0] if node.val is not None else None
                elif node.op in ops.AUTO_FUNCTIONALIZED:
                    v = self._auto_functionalized(r, node, args, kwargs)
                else:
                    v = self._call(r, node, resolve_op(target), args, kwargs)
            except InterpError:
                raise
            except Exception as e:   # a torch error: name the node
                raise InterpError(f"rank {r} node {node.name!r} ({target}) failed: {type(e).__name__}: "
                                  f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}") from e
            if self.check_shapes and not isinstance(v, Request):
                self._check_val(r, node, node.val, v)
            env[node.name] = v
            if goal is not None and not isinstance(v, Request):
                goal.discard(node.name)
        for name, held in list(env.items()):     # collectives nobody read: wait for them too
            if isinstance(held, Request):
                if not held.done:
                    yield ("wait", held)
                self._finish_collective(r, held, name)
                if goal is not None:
                    goal.discard(name)
        if goal:
            raise InterpError(f"rank {r}: upto node(s) {sorted(goal)} were not computed")

    def _call(self, r, node, fn, args, kwargs):
        """Run one op (a subclass may give an op another meaning: recheck.py's random draws)."""
        return fn(*args, **kwargs)

    def _auto_functionalized(self, r, node, args, kwargs):
        if not args or not isinstance(node.args[0], str):
            raise UnsupportedOp(f"rank {r} node {node.name!r}: auto_functionalized needs the op target as its first "
                                f"argument (a string), got {node.args[:1]!r}")
        inner = node.args[0]
        if ops.namespace(inner) == "tg" and ops.op_name(inner) in ops.NAMING_OP_NAMES:
            mutated = [kwargs[a] for a in kwargs if isinstance(kwargs[a], torch.Tensor)]
            return (None, *mutated)
        if node.op != ops.AUTO_FUNCTIONALIZED_V1:
            raise UnsupportedOp(f"rank {r} node {node.name!r}: {node.op} of {inner} (only naming ops)")
        fn = resolve_op(inner)
        kw = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
        out = fn(*args[1:], **kw)
        written = [a.name for a in fn._schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        return (out, *[kw[name] for name in written if name in kw])

    def _check_val(self, r, node, meta, v):
        if isinstance(meta, G.TensorMeta):
            if not isinstance(v, torch.Tensor):
                raise ShapeMismatch(f"rank {r} node {node.name!r} ({node.target}): expected a tensor, got {type(v).__name__}")
            unify_shape(meta.shape, v.shape, self.bindings[r], f"rank {r} node {node.name!r} ({node.target})")
            want = getattr(torch, meta.dtype, None)
            if isinstance(want, torch.dtype) and v.dtype != want and not (
                    self.float_dtype is not None and want.is_floating_point and v.dtype == self.float_dtype):
                raise ShapeMismatch(f"rank {r} node {node.name!r} ({node.target}): expected dtype {meta.dtype}, got "
                                    f"{str(v.dtype).replace('torch.', '')}")
        elif isinstance(meta, tuple) and isinstance(v, (tuple, list)):
            if len(meta) == len(v):
                for m, x in zip(meta, v):
                    self._check_val(r, node, m, x)
        elif isinstance(meta, G.SymIntMeta) and isinstance(v, int):
            e = meta.expr
            if isinstance(e, sympy.Symbol) and e.name not in self.bindings[r]:
                self.bindings[r][e.name] = v

    # -- scheduler
    def run(self):
        """Every rank runs until it needs a value it does not have.  Collectives are issued
        without blocking into their communicator's queue; the k-th collectives of the members
        on one communicator are matched and computed together (as c10d orders them)."""
        W = self.W
        gens = [self._program(r) for r in range(W)]
        state = ["run"] * W        # run | recv | wait | parked | done
        blocked: list[Any] = [None] * W       # what a rank waits for
        send: list[Any] = [None] * W
        queues: dict[tuple, dict[int, deque]] = {}

        def needed(r):
            return any(not req.done and r in req.members and r not in queues.get(req.comm, {})
                       for q in range(W) if state[q] == "wait" for req in [blocked[q]]) or \
                any(state[q] == "recv" for q in range(W) if q != r)

        def complete(comm) -> bool:
            per = queues.get(comm, {})
            members = comm[1]
            done = False
            while all(per.get(m) for m in members):
                reqs = [per[m].popleft() for m in members]
                check_match(reqs)
                for req, val in zip(reqs, collective_results(reqs)):
                    req.value, req.done = val, True
                done = True
            return done

        def advance(r):
            try:
                y = gens[r].send(send[r])
                while isinstance(y, tuple) and y[0] == "issue":    # issuing never blocks
                    req = y[1]
                    queues.setdefault(req.comm, {}).setdefault(r, deque()).append(req)
                    complete(req.comm)
                    y = gens[r].send(None)
            except StopIteration:
                state[r] = "done"
                return
            send[r] = None
            if y is _PARK:
                state[r] = "parked"
            elif isinstance(y, tuple) and y[0] == "wait":
                state[r], blocked[r] = "wait", y[1]
            else:
                state[r], blocked[r] = "recv", y

        while True:
            progressed = False
            for r in range(W):
                while state[r] == "run" or (state[r] == "parked" and needed(r)):
                    advance(r)
                    progressed = True
            for r in range(W):
                if state[r] == "wait" and blocked[r].done:
                    state[r], blocked[r] = "run", None
                    progressed = True
                elif state[r] == "recv":
                    ok, val = self._try_recv(blocked[r])
                    if ok:
                        send[r], blocked[r], state[r] = val, None, "run"
                        progressed = True
            if not progressed:
                break
        stuck = [r for r in range(W) if state[r] in ("wait", "recv")]
        if stuck:
            raise self._deadlock(stuck, state, blocked, queues)
        for env in self.envs:       # a rank stopped early (upto): its finished collectives' values
            for name, held in list(env.items()):
                if isinstance(held, Request):
                    if held.done:
                        env[name] = held.value
                    else:
                        del env[name]
        return self.envs

    def _deadlock(self, stuck, state, blocked, queues):
        r = stuck[0]
        req = blocked[r]
        if state[r] == "recv":
            srcs = [p for _, p, _, _ in req.params["recvs"]]
            return CollectiveMismatch(f"rank {r} is at node {req.node.name!r} ({req.node.target}) waiting for a "
                                      f"message from rank(s) {srcs} that is never sent")
        per = queues.get(req.comm, {})
        for m in req.members:
            if m == r or per.get(m):
                continue
            if state[m] == "done":
                return CollectiveMismatch(
                    f"rank {r} is at node {req.node.name!r} ({req.describe()}) but rank {m} finished its graph "
                    f"without issuing a matching collective")
            if state[m] == "parked":
                return CollectiveMismatch(f"rank {r} is at node {req.node.name!r} ({req.describe()}); rank {m} stopped")
            if state[m] == "wait":
                other = blocked[m]
                return CollectiveMismatch(
                    f"collective order mismatch: rank {r} is at node {req.node.name!r} ({req.describe()}) "
                    f"but rank {m} is at node {other.node.name!r} ({other.describe()})")
        return CollectiveMismatch(f"ranks {stuck} are deadlocked at " +
                                  "; ".join(f"rank {q}: {blocked[q].node.name!r} ({blocked[q].describe()})" for q in stuck))


def run_bundle(bundle: G.Bundle, inputs_per_rank: list[dict[str, Any]],
               upto: dict[int, set[str]] | None = None, *,
               float_dtype: torch.dtype | None = None, check_shapes: bool = True) -> list[dict[str, Any]]:
    """Run every rank of ``bundle``; return each rank's environment (node name -> value).

    ``inputs_per_rank[r]`` maps rank r's input port names (or placeholder node names) to tensors
    (SymInt inputs may be omitted: they are taken from the shapes).  With ``upto``, rank r stops as
    soon as the nodes ``upto[r]`` are computed (a rank missing from ``upto`` computes nothing of
    its own) -- but a stopped rank still runs on to the collectives its peers wait for.
    ``float_dtype`` replaces every floating dtype constant of the graph (e.g. run a float32
    capture in float64).  ``check_shapes`` compares every value with the node's recorded
    shape/dtype and raises ``ShapeMismatch``.
    """
    return Runner(bundle, inputs_per_rank, upto, float_dtype, check_shapes).run()


def output_values(bundle: G.Bundle, envs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rank: output port name -> value (ports whose node was not computed are left out)."""
    out = []
    for g, env in zip(bundle.ranks, envs):
        out.append({p.name: env[p.node] for p in g.outputs if p.node in env})
    return out


def named_values(bundle: G.Bundle, envs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rank: every value by node name, input port name and output port name (ports win)."""
    out = []
    for g, env in zip(bundle.ranks, envs):
        d = dict(env)
        d.update({p.name: env[p.node] for p in g.inputs if p.node in env})
        d.update({p.name: env[p.node] for p in g.outputs if p.node in env})
        out.append(d)
    return out
