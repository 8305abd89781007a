"""The package shows the pipeline and its imports only go down it (ARCHITECTURE.md).

Every import of an entangle_py module, at the top of a file or inside a function, is read with
ast: a module may import only modules of its own layer or a lower one, and there is no cycle."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "entangle_py"

# lower layers first; a module may import its own layer or lower ones
LAYERS = [
    {"errors", "config"},
    {"ir"},
    {"frontend", "semantics"},
    {"engine"},
    {"check"},
    {"oracle"},
    {"report"},
    {"pipeline"},
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
