"""The package shows the pipeline and its imports only go down it (ARCHITECTURE.md).

Every import of an entangle_py module, at the top of a file or inside a function, or by name
(``importlib.import_module("entangle_py....")``, an f-string's constant head), is read with ast: a
module may import only modules of its own layer or a lower one, and there is no cycle."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "entangle_py"

# lower layers first; a module may import its own layer or lower ones
LAYERS = [
    {"errors", "config", "lazy", "executor"},
    {"ir", "plugins"},
    {"frontend", "semantics"},
    {"engine"},
    {"check", "lemmas"},      # the lemma library: data on the engine's Lemma, loaded for the checker
    {"oracle"},
    {"report"},
    {"pipeline"},
    {"check_many", "stages"},
    {"testing", "cli", "__main__", "__init__"},
]


def _layer(module: str) -> int:
    head = module.split(".")[1] if module.count(".") else "__init__"
    for i, names in enumerate(LAYERS):
        if head in names:
            return i
    raise AssertionError(f"{module} is in no layer of tests/test_architecture.py")


def _modules():
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1 and parts[-2] != "entangle_py":
            parts = parts[:-1]
        yield ".".join(parts), p


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("entangle_py"):
            assert node.level == 0, f"{path}: relative import"
            yield node.module
            for alias in node.names:    # from entangle_py.ir import graph
                if (PKG / node.module.replace("entangle_py", "").strip(".").replace(".", "/") / f"{alias.name}.py").exists():
                    yield f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("entangle_py"):
                    yield alias.name
        elif isinstance(node, ast.Call) and _imports_by_name(node) and node.args:
            name = _constant_head(node.args[0])
            if name.startswith("entangle_py.") and name.endswith("."):     # some module of a package
                yield from (m for m, _ in _modules() if m.startswith(name))
            elif name.startswith("entangle_py"):
                yield name


def _imports_by_name(call: ast.Call) -> bool:
    """``importlib.import_module(...)`` / ``import_module(...)`` / ``__import__(...)``."""
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or \
        (isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))


def _constant_head(arg) -> str:
    """A module name's text known before running: a string, or an f-string's leading constant
    (``f"entangle_py.lemmas.{family}"`` -> ``entangle_py.lemmas.``); "" otherwise."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return arg.values[0].value
    return ""


def test_imports_only_go_down_the_pipeline():
    bad = []
    for mod, path in _modules():
        for imp in _imports(path):
            if imp == "entangle_py":
                continue
            if _layer(imp) > _layer(mod):
                bad.append(f"{mod} imports {imp}")
    assert not bad, bad


def test_no_import_cycle():
    graph = {mod: {i for i in _imports(path) if i != "entangle_py"} for mod, path in _modules()}
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for n in graph.get(m, ()):
            if state.get(n) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack + [m, n]))
            if n not in state:
                visit(n, stack + [m])
        state[m] = "done"
    for m in graph:
        if m not in state:
            visit(m, [])


# An op literal names one op by its target ("aten.mm.default", "_c10d_functional.all_reduce").
_OP_LITERAL = __import__("re").compile(
    r"^(aten|prims|_c10d_functional|c10d_functional|_c10d_functional_autograd|_dtensor|higher_order|tg|apex|_C|megatron)"
    r"\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
# where facts about ops live: their facts (and the classes torch gives them, generated from torch)
# and their lowering (the mutant writer, which names the ops it writes, is test tooling under
# tests/tooling/)
OP_REGISTRIES = {"entangle_py.ir.ops", "entangle_py.ir.op_classes", "entangle_py.semantics.lower",
                 "entangle_py.plugins.vllm", "entangle_py.plugins.megatron"}


def _registry(mod: str) -> bool:
    """The registries, and the lowering's modules (one per op class, entangle_py/semantics/lower/)."""
    return mod in OP_REGISTRIES or mod.startswith("entangle_py.semantics.lower.")


def test_op_literals_only_in_the_registries():
    """Adding an op touches its registry entry: no other module names an op (ARCHITECTURE.md)."""
    bad = []
    for mod, path in _modules():
        if _registry(mod):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _OP_LITERAL.match(node.value):
                bad.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {node.value!r}")
    assert not bad, "op literals outside ir/ops.py and semantics/lower/:\n" + "\n".join(bad)


def test_op_literal_check_sees_a_literal():
    """The check above can fail: it finds the literal in a module that names an op."""
    tree = ast.parse('if n.target == "aten.mm.default": pass')
    assert any(isinstance(x, ast.Constant) and _OP_LITERAL.match(str(x.value)) for x in ast.walk(tree))


def test_every_lowering_names_a_real_op():
    """The lowering registry answers "is this op supported?": each key is an op torch has."""
    import torch

    from entangle_py.ir import ops
    from entangle_py.semantics import lower
    missing = []
    for target in lower.LOWERINGS:
        if target in ops.BUILTIN_TARGETS:
            continue
        ns, name, *ov = target.split(".")
        ov = ov[0] if ov else "default"
        if ns in ("tg", "apex", "higher_order") or ns in ops.PLUGIN_NAMESPACES:   # other libraries' ops
            continue
        packet = getattr(getattr(torch.ops, ns), name, None)
        if packet is None or ov not in packet.overloads():
            missing.append(target)
    assert not missing, missing


def test_imports_by_name_are_seen():
    """The lemma library is imported by family name: the architecture sees that import (from the
    library's loader, one layer with the checker), and the engine imports no module of it."""
    seen = set(_imports(PKG / "lemmas" / "__init__.py"))
    assert {"entangle_py.lemmas.reduction", "entangle_py.lemmas.movement"} <= seen, seen
    engine = {i for mod, path in _modules() if mod.startswith("entangle_py.engine") for i in _imports(path)}
    assert not {i for i in engine if i.startswith("entangle_py.lemmas")}, engine


MAX_MODULE_LINES = 700
TESTS = PKG.parent / "tests"


def test_no_module_over_700_lines():
    """A module past 700 lines does more than one job: split it by job (issue 27)."""
    lines = {str(p.relative_to(PKG.parent)): len(p.read_text().splitlines()) for _, p in _modules()}
    long = {p: n for p, n in lines.items() if n > MAX_MODULE_LINES}
    assert not long, long


def _test_tooling_names() -> set[str]:
    """Top-level names importable from tests/ (tests/ is on sys.path under pytest): its packages and modules."""
    return {p.stem for p in TESTS.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()} | {"tests"}


def test_package_imports_no_test_tooling():
    """The installed package holds no test tooling and imports none (lemma instances, mutants, the
    test-suite's helpers live under tests/): an import of one would fail for a stranger's install."""
    tooling = _test_tooling_names()
    assert {"lemma_instances", "tooling", "conftest"} <= tooling, tooling
    bad = []
    for mod, path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            bad += [f"{mod} imports {n}" for n in names if n.split(".")[0] in tooling]
    assert not bad, bad
    assert not list(PKG.rglob("_instances")), "instance generators belong in tests/lemma_instances/"
