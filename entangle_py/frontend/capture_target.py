"""What ``entangle capture`` captures: a target naming a program's ``build(rank, world_size)``.

    path/to/prog.py              the file's ``build`` (a capture script)
    path/to/prog.py:NAME         the file's attribute NAME (dotted: ``Family.tp2``), a build callable
    package.module:NAME          the module imported by name (the working directory is importable),
                                 its attribute NAME

A file of several programs names each one's builder (``prog.py:tp2_correct``,
``prog.py:tp2_missing_allreduce``) instead of a script per program.  The program is the file's
module with ``build`` set to the named callable: the module's other settings (``DYNAMIC_DIMS``)
apply, and source locations are the file's.  Importing a target runs the user's code: a graph
bundle never does (see ir/graph.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.util
import re
import sys
import types
from pathlib import Path

from entangle_py.errors import InputError
from entangle_py.frontend.capture_errors import CaptureError, display_path, first_line, user_frame_suffix

FORMS = "SCRIPT.py, SCRIPT.py:FUNCTION or MODULE:FUNCTION"
_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


@dataclasses.dataclass(frozen=True)
class Target:
    """A parsed target: a file (resolved path) or a module name, and the build's attribute path."""
    file: str | None
    module: str | None
    attr: str = "build"

    @property
    def name(self) -> str:
        """What the bundle records as its program: ``prog.py``, ``prog.py:NAME``, ``pkg.mod:NAME``."""
        where = Path(self.file).name if self.file else self.module
        return where if self.attr == "build" and self.file else f"{where}:{self.attr}"

    @property
    def text(self) -> str:
        """The target as a rank's process re-parses it (a file by its resolved path)."""
        return f"{self.file}:{self.attr}" if self.file else f"{self.module}:{self.attr}"


def parse_target(text) -> Target:
    """``SCRIPT.py`` / ``SCRIPT.py:FUNCTION`` / ``MODULE:FUNCTION`` -> Target (CaptureError if
    no such file; a module is looked up when it is imported)."""
    text = str(text)
    if Path(text).is_file():
        return Target(str(Path(text).resolve()), None)
    head, sep, attr = text.rpartition(":")
    if sep and head and _NAME.match(attr):
        if Path(head).is_file():
            return Target(str(Path(head).resolve()), None, attr)
        if head.endswith(".py"):
            raise CaptureError(f"{head}: no such script")
        if _NAME.match(head):
            return Target(None, head, attr)
    raise CaptureError(f"{text}: no such script (a target is {FORMS})")


def load_script(script) -> types.ModuleType:
    """The program a target names, as a module whose ``build`` is its build function (or an
    already imported module, as it is)."""
    if isinstance(script, types.ModuleType):
        if not hasattr(script, "build"):
            raise CaptureError(f"module {script.__name__} has no build(rank, world_size) function")
        return script
    target = script if isinstance(script, Target) else parse_target(script)
    if target.module is not None:
        return _import_module(target)
    path = Path(target.file)
    name = "_entangle_script_" + re.sub(r"\W", "_", path.stem) + "_" + hashlib.sha1(str(path).encode()).hexdigest()[:8]
    return _with_build(_import_file(path, name), target, display_path(path))


def _import_file(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CaptureError(f"{display_path(path)}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Like `python script.py`: the script's directory is importable (helper modules beside it).
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except InputError:
        raise
    except Exception as e:  # the user's script failed at import: say where
        sys.modules.pop(name, None)
        raise CaptureError(f"{display_path(path)}: importing the script failed: {type(e).__name__}: "
                           f"{first_line(e)}{user_frame_suffix(e, str(path))}") from e
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(path.parent))
    return module


def _import_module(target: Target) -> types.ModuleType:
    try:
        module = importlib.import_module(target.module)
    except InputError:
        raise
    except Exception as e:
        file = module_file(target.module)
        raise CaptureError(f"importing {target.module} failed: {type(e).__name__}: "
                           f"{first_line(e)}{user_frame_suffix(e, file)}") from e
    return _with_build(module, target, target.module)


def _with_build(module: types.ModuleType, target: Target, shown: str) -> types.ModuleType:
    """``module`` itself for its ``build``; else a copy of its namespace with ``build`` = the
    named attribute (the module's settings apply to every builder it names)."""
    obj = module
    for part in target.attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise CaptureError(f"{shown}: defines no {target.attr!r} (a target is {FORMS})")
    if not callable(obj):
        raise CaptureError(f"{shown}: {target.attr} is not a build(rank, world_size) function")
    if target.attr == "build":
        return module
    view = types.ModuleType(f"{module.__name__}:{target.attr}")
    view.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    view.__file__ = getattr(module, "__file__", None)
    view.build = obj
    return view


def module_file(name: str) -> str | None:
    """The file of module ``name``, found without importing it (None: not found, or no file)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return str(Path(origin).resolve()) if origin and Path(origin).is_file() else None
