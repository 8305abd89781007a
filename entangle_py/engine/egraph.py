"""The e-graph engine: one egglog e-graph, reused across the operator-by-operator loop.

Facts are egglog commands in text (parsed in small chunks: parsing one huge program is slow).
A G_d tensor is the leaf ``(Gd "r<rank>.<node>")``; every tensor the checker inserts is an e-class
bound to a global ``$v<k>``.  ``prove_clean`` runs the lemmas step by step until the target's e-class holds a clean
term (early stop) or a limit is hit; ``extract`` returns the best term, clean or not.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace

from entangle_py.semantics import terms
from entangle_py.engine.dims import DimSolver
from entangle_py.config import Limits
from entangle_py.engine.lemma import Lemma, Library


def _egglog_bindings():
    """egglog's compiled core (``egglog.bindings``), loaded without the egglog package's Python
    front end, which the engine does not use and which costs most of a check's start-up (it
    imports a code formatter, among others).  Once loaded it is the package's own submodule."""
    import importlib.machinery
    import importlib.util
    import sys
    if "egglog.bindings" in sys.modules:
        return sys.modules["egglog.bindings"]
    package = importlib.util.find_spec("egglog")     # locates the package without running it
    for where in package.submodule_search_locations or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(where, "bindings" + suffix)
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location("egglog.bindings", path)
                module = importlib.util.module_from_spec(spec)
                sys.modules["egglog.bindings"] = module
                spec.loader.exec_module(module)
                return module
    from egglog import bindings       # another layout: the ordinary import
    return bindings


bindings = _egglog_bindings()

# One lemma step: every lemma once, then list walks and shape facts to a fixpoint, then which
# concat parts line up (ruleset zips: read by lemmas only, so once per step, not inside the
# shapes loop, where its rules were a few percent of a check's time), then cleanliness.
STEP = ("(run-schedule (run lemmas) (saturate (seq (run walks) (saturate (run shapes))))"
        " (saturate (run zips)) (saturate (run cleanliness)))")

CERTIFY = "(run-schedule (saturate (run shapes)) (saturate (run certify)))"
_UNREACHABLE = 10 ** 15   # extraction cost of a term a certificate may not contain

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

# egglog 13.2's Python bindings report a rule's search time as a timedelta whose microseconds are
# the time's milliseconds (4.01 s reads as 4012 us); tests/test_engine_work.py checks the scale
EGGLOG_TIME_SCALE = 1000

# Facts about a G_d leaf loaded in bulk (Engine._bulk_load): relation -> (its egglog declaration
# and loading rule, the groups of _LEAF_FACT that are its row)
BULK = {
    "bulk_dim": ("(relation bulk_dim (String i64 i64))\n"
                 "(rule ((bulk_dim n i v)) ((set (dim (Gd n) i) (DLit v))) :ruleset load)", ("dn", "di", "dv")),
    "bulk_ndim": ("(relation bulk_ndim (String i64))\n"
                  "(rule ((bulk_ndim n k)) ((set (ndim (Gd n)) k)) :ruleset load)", ("nn", "nk")),
    "bulk_dtype": ("(relation bulk_dtype (String String))\n"
                   "(rule ((bulk_dtype n t)) ((set (dtype (Gd n)) t)) :ruleset load)", ("tn", "tt")),
    "bulk_peer": ("(relation bulk_peer (String String))\n"
                  "(rule ((bulk_peer a b)) ((peer (Gd a) (Gd b))) :ruleset load)", ("pa", "pb")),
    "bulk_certleaf": ("(relation bulk_certleaf (String))\n"
                      "(rule ((bulk_certleaf n)) ((certleaf (Gd n))) :ruleset load)", ("cn",)),
}


def _name(group: str) -> str:
    """A G_d leaf's name in a command, as a regex group (no quote, backslash, tab or line break)."""
    return rf'"(?P<{group}>[^"\\\t\n\r]*)"'


_LEAF_FACT = re.compile("|".join((
    rf'\(set \(dim \(Gd {_name("dn")}\) (?P<di>\d+)\) \(DLit (?P<dv>-?\d+)\)\)(?P<bulk_dim>)',
    rf'\(set \(ndim \(Gd {_name("nn")}\)\) (?P<nk>\d+)\)(?P<bulk_ndim>)',
    rf'\(set \(dtype \(Gd {_name("tn")}\)\) "(?P<tt>[A-Za-z0-9_]+)"\)(?P<bulk_dtype>)',
    rf'\(peer \(Gd {_name("pa")}\) \(Gd {_name("pb")}\)\)(?P<bulk_peer>)',
    rf'\(certleaf \(Gd {_name("cn")}\)\)(?P<bulk_certleaf>)')))

# A G_d definition ``(union (Gd "k") term)``: its term's leaves, strings and integers are a row's
# columns, the rest is the form; a definition with anything else (a global, an escape) is a command
_FORM_TOKEN = re.compile(r'\(Gd "([^"\\\t\n\r]*)"\)|"([^"\\\t\n\r]*)"|(?<=[ (])(-?\d{1,18})(?=[ )])|(["\\$])')
_FORM_SLOT = re.compile(r"(<S>|<I>)")
_DEFINED = re.compile(r'\(union \(Gd "([^"\\\t\n\r]*)"\) ')


def _form(command: str) -> tuple[str, list[str]] | None:
    """(form, [defined leaf, columns...]) of a G_d definition, or None."""
    head = _DEFINED.match(command)
    if head is None:
        return None
    term = command[head.end():-1]
    if "<" in term:
        return None
    pieces, columns, at = [], [head.group(1)], 0
    for m in _FORM_TOKEN.finditer(term):
        leaf, text, num, bad = m.groups()
        if bad is not None:
            return None
        pieces.append(term[at:m.start()])
        pieces.append("(Gd <S>)" if leaf is not None else "<S>" if text is not None else "<I>")
        columns.append(leaf if leaf is not None else text if text is not None else num)
        at = m.end()
    pieces.append(term[at:])
    return "".join(pieces), columns


CHUNK = 24   # commands per parse: parsing cost grows faster than linearly with program size


@dataclass
class Outcome:
    status: str                 # 'clean' / 'reached' | 'saturated' | 'limit'
    iterations: int
    seconds: float
    limit: str | None = None    # which limit was hit
    kind: str | None = None     # its unit: 'iterations' | 'enodes' | 'matches' | 'memory' | 'seconds'
    matches: int = 0            # rule matches in the attempt


class EngineError(RuntimeError):
    """egglog refused a command: a bug in lowering or a lemma (e.g. mismatched sizes)."""


class Engine:
    def __init__(self, library: Library, assume=(), dims: DimSolver | None = None):
        self.eg = bindings.EGraph()
        self.pending: list[str] = []
        self._bulk_dir = None       # where _bulk_load writes its rows
        self._forms: dict[str, str] = {}        # a definition's form -> its bulk relation
        self._declared_forms: set[str] = set()  # ... declared in the current e-graph
        self._base_forms: set[str] = set()      # ... declared under every reset (prepare)
        self.library = library
        # Z3 over the programs' symbolic sizes (their ranges and guards, given by the caller)
        self.dims = dims if dims is not None else DimSolver()
        self._dim_sizes = None
        self.assume = tuple(sorted(assume))     # assumptions whose lemmas are active
        self._run_commands(list(_split_commands(terms.declarations())))
        rules = library.egglog(self.assume)
        self._run_commands(["(ruleset load)"] + [c for decl, _ in BULK.values() for c in _split_commands(decl)])
        self._run_commands(list(_split_commands(rules)))
        # every size literal a rule names is in the e-graph: a condition such as (!= (dim x b)
        # (DLit 1)) matches (DLit 1) as an e-node, and would fail where no tensor has a size-1
        # dim (GPT at TP 8: the attention's bmm waited for the loss's size-1 dim to be proven)
        self._run_commands([f"(let $dlit_{k.replace('-', 'm')} (DLit {k}))"
                            for k in sorted(set(re.findall(r"\(DLit (-?\d+)\)", rules)))])
        self._asked_consts, self._folded = None, set()
        self.run1("(push)")      # the empty e-graph with its rules compiled: reset() comes back here
        # lemma name -> egglog matches of its rule, summed over every lemma step (explain / reports)
        self.matches: Counter = Counter()
        self.steps = 0              # lemma steps run (every saturation)
        self.peak_nodes = 0         # the e-graph's largest size after a lemma step
        self._rule_name = {_rule_key(part): lem.name for lem in library.lemmas
                           for part in lem.egglog(lem.ruleset).split("\n")}
        self._rule_family = {_rule_key(part): x.family for x in [*library.lemmas, *library.rules]
                             for part in (x.egglog(x.ruleset) if isinstance(x, Lemma) else x.text).split("\n")}
        self._seen_rules: dict[str, tuple] = {}
        # lemma family -> seconds egglog spent searching and applying its rules (lemmas and
        # shape rules) in lemma steps: where the time goes as the programs grow (benchmarks, CI)
        self.family_seconds: Counter = Counter()

    def reset(self):
        """Empty the e-graph, keeping declarations and rules (cheaper than a new one)."""
        self.pending = []
        self.run1("(pop)")
        self.run1("(push)")
        self._declared_forms = set(self._base_forms)     # those declared after the push are gone
        self.dims = self.dims.fresh()
        self._dim_sizes = None
        self._asked_consts, self._folded = None, set()

    # -- commands ------------------------------------------------------------------------
    def _run_commands(self, commands: list[str]):
        commands = self._bulk_load(commands)
        for i in range(0, len(commands), CHUNK):
            chunk = "\n".join(commands[i:i + CHUNK])
            try:
                self.eg.run_program(*self.eg.parse_program(chunk))
            except bindings.EggSmolError as e:
                raise EngineError(f"egglog: {e.context if hasattr(e, 'context') else e}\nin:\n{chunk[:2000]}") from None

    def _bulk_load(self, commands: list[str]) -> list[str]:
        """Load the facts about G_d leaves (sizes, dtype, peers, certificate leaves) and the
        definitions of G_d tensors -- most of what the checker inserts, and 30-170 us each as
        egglog commands -- as rows of relations read from files (egglog's ``input``), which the
        ``load`` rules turn into the same facts at once; returns the other commands.  A
        definition's relation is its term's form with the leaves' names, strings and integers
        as columns (``_form``).  A name with a quote, backslash, tab or line break stays a
        command (a row is raw text)."""
        rows: dict[str, list[str]] = {}
        rest = []
        for c in commands:
            if c.startswith("(union (Gd "):
                found = _form(c)
                if found is not None:
                    form, columns = found
                    rows.setdefault(self._form_relation(form), []).append("\t".join(columns))
                    continue
            m = _LEAF_FACT.fullmatch(c) if c.startswith(("(set (", "(peer ", "(certleaf ")) else None
            if m is None:
                rest.append(c)
                continue
            kind = next(k for k, v in m.groupdict().items() if v is not None and k in BULK)
            rows.setdefault(kind, []).append("\t".join(m.group(f) for f in BULK[kind][1]))
        if rows:
            if self._bulk_dir is None:     # in memory where the machine has it (a file system
                shm = "/dev/shm"            # on disk spends a millisecond of wall time per file)
                where = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
                self._bulk_dir = tempfile.TemporaryDirectory(prefix="entangle-egglog-", dir=where)
            loads = []
            for kind, lines in rows.items():
                path = os.path.join(self._bulk_dir.name, f"{kind}.tsv")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write("\n".join(lines) + "\n")
                loads.append(f"(input {kind} {terms.str_lit(path)})")
            self.run1("\n".join(loads) + "\n(run-schedule (run load))")
        return rest

    def prepare(self, commands):
        """Declare the bulk relations of the definitions in ``commands`` (every G_d tensor's) in
        the e-graph every reset() comes back to, before any fact is inserted: declared once, not
        again after each reset."""
        assert not self.pending, "prepare() comes before any fact"
        self.run1("(pop)")
        for c in commands:
            found = _form(c) if c.startswith("(union (Gd ") else None
            if found is not None:
                self._form_relation(found[0])
        self._base_forms = set(self._declared_forms)
        self.run1("(push)")

    def _form_relation(self, form: str) -> str:
        """The relation whose rows are definitions of this form, declared with its load rule the
        first time the form is seen in the current e-graph (reset() forgets what it declared)."""
        name = self._forms.setdefault(form, f"bulk_def{len(self._forms)}")
        if name not in self._declared_forms:
            self._declared_forms.add(name)
            types, term, k = [], [], 0
            for piece in _FORM_SLOT.split(form):
                if piece in ("<S>", "<I>"):
                    types.append("String" if piece == "<S>" else "i64")
                    term.append(f"b{k}")
                    k += 1
                else:
                    term.append(piece)
            cols = " ".join(f"b{i}" for i in range(k))
            self._run_commands([f"(relation {name} (String {' '.join(types)}))",
                                f"(rule (({name} bk {cols})) ((union (Gd bk) {''.join(term)})) :ruleset load)"])
        return name

    def add(self, *commands: str):
        self.pending.extend(commands)

    def flush(self):
        if self.pending:
            cmds, self.pending = self.pending, []
            self._run_commands(cmds)

    def run1(self, command: str):
        self.flush()
        try:
            return self.eg.run_program(*self.eg.parse_program(command))
        except bindings.EggSmolError as e:
            raise EngineError(f"egglog: {e}\nin: {command[:500]}") from None

    # -- queries -------------------------------------------------------------------------
    def is_clean(self, var: str) -> bool:
        return self.holds(f"(clean {var})")

    def holds(self, fact: str) -> bool:
        """Whether the e-graph proves an egglog fact, e.g. ``(cert $v3)``."""
        self.flush()
        try:
            self.eg.run_program(*self.eg.parse_program(f"(check {fact})"))
            return True
        except bindings.EggSmolError:
            return False

    def equal(self, a: str, b: str) -> bool:
        self.flush()
        try:
            self.eg.run_program(*self.eg.parse_program(f"(check (= {a} {b}))"))
            return True
        except bindings.EggSmolError:
            return False

    def extract(self, var: str):
        """(cost, term) with term a parsed s-expression."""
        out = self.run1(f"(extract {var})")[0]
        return out.cost, _term_from_dag(out.termdag, out.term)

    def variants(self, var: str, n: int) -> list:
        """Up to ``n`` terms of ``var``'s e-class (parsed), as egglog's extraction lists them."""
        out = self.run1(f"(extract {var} {n})")[0]
        return [_term_from_dag(out.termdag, tid) for tid in out.terms]

    def certificate(self, var: str, leaves: set[str]):
        """(term, cost) of the cheapest *clean* term of ``var`` whose G_d leaves are all in
        ``leaves`` (keys like ``r0.out``), or None when the e-graph holds none.  egglog's own
        extraction cannot restrict leaves, so this one runs a cost model that prices every other
        leaf, every compute op and every G_s tensor out of reach."""
        self.flush()
        eg = self.eg
        clean_cost = {c.name: c.cost for c in terms.CONSTRUCTORS if c.clean}

        def enode_cost(name, args):
            if name == "Gd":
                return 1 if eg.value_to_string(args[0]) in leaves else _UNREACHABLE
            return clean_cost.get(name, _UNREACHABLE)

        def fold(_name, head, kids):
            return min(_UNREACHABLE, head + sum(kids))

        model = bindings.CostModel(fold, enode_cost, lambda _tp, _v, kids: sum(kids), lambda _tp, _v: 0)
        _, value = eg.eval_expr(bindings.Var(bindings.PanicSpan(), var))
        dag = bindings.TermDag()
        cost, tid = bindings.Extractor(["T"], eg, model).extract_best(eg, dag, value, "T")
        if cost >= _UNREACHABLE:
            return None
        return _term_from_dag(dag, tid), cost

    def table(self, name: str, limit: int = 1_000_000) -> list:
        """Rows of a relation or function as parsed terms ``(name, args...)``."""
        out = self.run1(f"(print-function {name} {limit})")[0]
        return [_term_from_dag(out.termdag, row[0]) for row in out.terms]

    def size(self) -> int:
        """Rows of every function and relation of the e-graph (not the rows loaded in bulk,
        which are in it as the facts they load)."""
        out = self.run1("(print-size)")[0]
        return sum(n for name, n in out.sizes if not name.startswith("bulk_"))

    def sizes(self, names) -> tuple:
        out = dict(self.run1("(print-size)")[0].sizes)
        return tuple(out.get(n, 0) for n in names)

    # -- saturation ----------------------------------------------------------------------
    def settle(self):
        """Shape facts and the clean relation to a fixpoint (no lemma)."""
        for _ in range(8):   # symbolic sizes: Z3's answers can enable more shape facts
            self.run1("(run-schedule (saturate (run shapes)) (saturate (run zips)) (saturate (run cleanliness)))")
            if not self.side_step():
                break

    def side_step(self) -> bool:
        """Facts computed outside egglog for the questions rules asked: size comparisons and
        arithmetic (Z3, dims.py) and products of constants.  True if any was added."""
        return self._answer_dims() | self._fold_constants()

    def _answer_dims(self) -> bool:
        sizes = self.sizes(("dterm", "ask_le", "DSym"))
        if sizes == self._dim_sizes:        # nothing new asked or built: skip the table reads
            return False
        self._dim_sizes = sizes
        if not sizes[2]:    # no symbolic size: egglog decides sizes that are literals itself
            return False
        added = self.dims.answer(self.table("dterm"), self.table("ask_le"))
        self.add(*added)
        return bool(added)

    def _fold_constants(self) -> bool:
        """Answer (ask_cmul a b) with (cmul a b), (ask_cdiv a b) with (cdiv a b), where the product
        or quotient is a float exactly (terms.FOLDS)."""
        asked = self.sizes(tuple(f"ask_{f}" for f in terms.FOLDS))
        if asked == self._asked_consts:       # nothing new asked: skip the table read
            return False
        self._asked_consts = asked
        added = []
        for f, fold in terms.FOLDS.items():
            for row in self.table(f"ask_{f}"):
                a, b = row[1], row[2]
                if (f, a, b) in self._folded:
                    continue
                self._folded.add((f, a, b))
                try:
                    added.append(f"(set ({f} {terms.str_lit(a)} {terms.str_lit(b)}) {terms.str_lit(fold(a, b))})")
                except ValueError:
                    pass
        self.add(*added)
        return bool(added)

    def prove_clean(self, var: str, limits: Limits) -> Outcome:
        out = self.saturate(lambda: self.is_clean(var), limits)
        return replace(out, status="clean") if out.status == "reached" else out

    def _count(self, report) -> int:
        """Add one step's matches per lemma and search time per family (egglog reports both per
        rule text); returns the step's matches of every rule (lemmas, walks, shape rules)."""
        total = 0
        for text, n in report.num_matches_per_rule.items():
            total += n
            if n:
                name, _ = self._rule(text)
                if name is not None:
                    self.matches[name] += n
        for text, t in report.search_and_apply_time_per_rule.items():
            if t:
                self.family_seconds[self._rule(text)[1]] += t.total_seconds() * EGGLOG_TIME_SCALE
        return total

    def _rule(self, text: str) -> tuple:
        """(lemma name or None, family) of a rule as egglog reports it."""
        found = self._seen_rules.get(text)
        if found is None:
            key = _rule_key(text)
            found = self._seen_rules[text] = (self._rule_name.get(key), self._rule_family.get(key, "engine"))
        return found

    def saturate(self, goal, limits: Limits) -> Outcome:
        """Lemma steps until ``goal()`` holds ('reached'), nothing changes ('saturated') or a limit
        is hit ('limit', naming it).  Limits are checked after every step, in deterministic units
        first (steps, e-nodes, matches), then memory and wall time.  A step cannot be
        interrupted, so the next one is not started where repeating the last one's growth would
        cross the e-node or memory limit: a check ends at its limit, never by running out of
        memory."""
        start = time.perf_counter()
        matches, memory = 0, limits.memory_bytes()

        def outcome(status, it, limit=None, kind=None):
            return Outcome(status, it, time.perf_counter() - start, limit, kind, matches)
        self.settle()
        if goal():
            return outcome("reached", 0)
        size, rss = self.size(), resident_bytes()
        it = 0
        while it < limits.iterations:
            it += 1
            out = self.run1(STEP)
            self.steps += 1
            updated = out[0].report.updated if out else True
            if out:
                matches += self._count(out[0].report)
            if self.side_step():
                self.settle()
                updated = True
            last_size, last_rss = size, rss
            size, rss = self.size(), resident_bytes()
            self.peak_nodes = max(self.peak_nodes, size)
            if goal():
                return outcome("reached", it)
            if not updated:
                return outcome("saturated", it)
            if size > limits.nodes or size + (size - last_size) > limits.nodes:
                return outcome("limit", it, f"{limits.nodes} e-nodes", "enodes")
            if matches > limits.matches:
                return outcome("limit", it, f"{limits.matches} rule matches per operator", "matches")
            if rss > memory or rss + max(0, rss - last_rss) > memory:
                return outcome("limit", it, f"{memory_text(memory)} of memory (--max-memory)", "memory")
            if time.perf_counter() - start > limits.seconds:
                return outcome("limit", it, f"{limits.seconds:g} s per operator", "seconds")
        return outcome("limit", it, f"{limits.iterations} iterations per operator", "iterations")


def resident_bytes() -> int:
    """The process's resident memory now (Linux /proc; elsewhere its peak so far)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory_text(n: int) -> str:
    return f"{n / (1 << 30):.1f} GB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MB"


def _rule_key(text: str) -> str:
    """A rule's text as egglog prints it back and as a lemma writes it, made one: whitespace
    collapsed, strings in one quote style, no space inside parentheses."""
    text = re.sub(r"\s+", " ", text.replace('"', "'")).strip()
    return text.replace("( ", "(").replace(" )", ")")


def _split_commands(text: str):
    """Split egglog text into top-level commands (balanced parentheses, strings respected)."""
    depth, start, in_str, esc = 0, None, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == ";" and depth == 0:
            continue
        elif ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                yield text[start:i + 1]


def _term_from_dag(dag, tid):
    node = dag.get(tid)
    if isinstance(node, bindings.TermLit):
        v = node.value
        return _lit_value(v)
    if isinstance(node, bindings.TermVar):
        return terms.Var(node.name)
    return (terms.Var(node.name),) + tuple(_term_from_dag(dag, a) for a in node.args)


def _lit_value(lit):
    for attr in ("value",):
        v = getattr(lit, attr, lit)
        if isinstance(v, (int, float, str, bool)):
            return v
        lit = v
    return lit
