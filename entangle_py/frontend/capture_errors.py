"""Capture errors a user can act on: what broke (graph break, unsupported construct, bad script)
and where in the user's script (the frame that is not torch's own)."""
from __future__ import annotations

import contextlib
import re
from pathlib import Path

from entangle_py.errors import InputError


class CaptureError(InputError):
    """The program cannot be captured as one graph (graph break, unsupported construct, bad script)."""


_NOTES: list | None = None    # the notes of the capture running, if any (capture(): collecting_notes)


@contextlib.contextmanager
def collecting_notes():
    """Collect capture_note()s made while capture runs (capture stores them in the bundle)."""
    global _NOTES
    saved, _NOTES = _NOTES, []
    try:
        yield _NOTES
    finally:
        _NOTES = saved


def capture_note(rank: int, text: str, frame) -> None:
    """Something capture modelled that the user should know, at ``frame`` (file, line, name, code)
    of the program: a warning now, and a note in the bundle that the check's report prints."""
    import warnings
    at = f" at {display_path(frame[0])}:{frame[1]}" if frame else ""
    warnings.warn(f"rank {rank}{at}: {text}", stacklevel=3)
    if _NOTES is not None:
        file, line, code = (display_path(frame[0]), frame[1], frame[3]) if frame else (None, None, None)
        _add_note(_NOTES, {"ranks": [rank], "text": text, "file": file, "line": line, "code": code})


def _add_note(notes: list, note: dict) -> None:
    """One note per (text, file, line): the ranks that made it, in the order they did."""
    for n in notes:
        if (n["text"], n["file"], n["line"]) == (note["text"], note["file"], note["line"]):
            n["ranks"] += [r for r in note["ranks"] if r not in n["ranks"]]
            return
    notes.append(dict(note, ranks=list(note["ranks"])))


def merge_notes(per_rank) -> list:
    """The notes of every rank's capture (each collected in the rank's own process), merged as
    one process collecting them rank after rank would have."""
    out: list = []
    for notes in per_rank:
        for note in notes:
            _add_note(out, note)
    return out


_INSTALLED = ("site-packages", "dist-packages")    # where pip puts a framework (a venv's, or the system's)
_TEST_RUNNERS = ("_pytest", "pytest", "pluggy", "unittest", "xdist", "execnet")   # installed, but never the program's code


def display_path(p) -> str:
    """Paths inside the working directory are shown (and stored) relative to it; a file of an
    installed package relative to the package's folder (``megatron/core/tensor_parallel/layers.py``),
    as its users know it, the same on every machine."""
    p = Path(p)
    parts = p.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in _INSTALLED:
            return Path(*parts[i + 1:]).as_posix()
    try:
        rp, cwd = p.resolve(), Path.cwd().resolve()
        return rp.relative_to(cwd).as_posix() if rp.is_relative_to(cwd) else p.as_posix()
    except (ValueError, OSError):
        return p.as_posix()


def first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[0][:300] if lines else type(e).__name__


def user_frame_suffix(e: BaseException, script_file: str | None) -> str:
    """' (at file:line)' of the script's frame an exception (in build, at import) went through,
    else of the innermost frame outside torch and the standard library."""
    import traceback
    frames = traceback.extract_tb(e.__traceback__)
    pick = pick_frame([(f.filename, f.lineno, f.name, f.line or "") for f in frames], script_file,
                      prefer_script=True)
    return f" (at {display_path(pick[0])}:{pick[1]})" if pick else ""


# ----------------------------------------------------------------------------- errors

def capture_error(e: BaseException, script_file: str | None, rank: int) -> CaptureError:
    """Turn a Dynamo/AOTAutograd exception into one line: the construct and the user's file:line."""
    import torch._dynamo.exc as dexc
    inner = e
    while isinstance(inner, dexc.BackendCompilerFailed) and getattr(inner, "inner_exception", None) is not None:
        inner = inner.inner_exception
    if isinstance(inner, InputError):
        return inner if isinstance(inner, CaptureError) else CaptureError(str(inner))
    where = _exc_location(inner, script_file)
    x = inner.__cause__ or inner.__context__
    while not where and x is not None:
        where = _exc_location(x, script_file)
        x = x.__cause__ or x.__context__
    what = getattr(inner, "gb_type", None)
    text = getattr(inner, "msg", None) or str(inner)
    explanation = ""
    m = re.search(r"Explanation:\s*(.+)", text)
    if m:
        explanation = m.group(1).strip()
    raised = _user_visible_exception(inner)
    if raised is not None:   # the program raised (e.g. a collective given a bad group): torch's words
        head = f"capture failed: {raised}"
        detail = ""
    elif isinstance(inner, dexc.Unsupported):
        head = f"graph break: {what or first_line(inner)}"
        detail = explanation or ""
    elif "data-dependent" in text or "DATA_DEPENDENT" in str(getattr(inner, "error_type", "")):
        head = ("graph break: data-dependent value (a tensor's contents used as a Python number or "
                "condition: .item(), int(t), bool(t), a size computed from values)")
        m = re.search(r"data-dependent expression (.+?) \(", text)
        detail = f"the expression {m.group(1)} cannot be known at capture time" if m else ""
    elif isinstance(inner, dexc.UserError):
        head = f"unsupported construct: {first_line(inner)}"
        detail = ""
    else:
        m = re.search(r"got (\w+(?:Error|Exception))\((['\"])(.*?)\2\)", text)
        if m:      # an error raised while running an op on fake tensors (e.g. a shape mismatch)
            head = f"capture failed: {m.group(1)}: {m.group(3)}"
        else:
            head = f"capture failed: {type(inner).__name__}: {first_line(inner)}"
        detail = ""
    loc = f" at {where}" if where else ""
    tail = f" -- {detail}" if detail and detail not in head else ""
    return CaptureError(f"rank {rank}: {head}{loc}{tail}")


_OBSERVED = re.compile(r"raised exception (\w+)\((.*)\)\s*$", re.S)


def _user_visible_exception(e: BaseException) -> str | None:
    """``Type: message`` of an exception the traced program itself raised, as torch words it.

    Dynamo reports it wrapped: as an ``Observed exception`` graph break (the exception raised inside
    traced code) or as an ``InternalTorchDynamoError`` (raised while Dynamo ran a torch function).
    An exception without a message is named with the torch function that raised it.
    """
    import ast
    import torch._dynamo.exc as dexc
    chain, x = [], e
    while x is not None and x not in chain and len(chain) < 16:
        chain.append(x)
        x = x.__cause__ or x.__context__
    for x in chain:
        if isinstance(x, dexc.ObservedException):
            m = _OBSERVED.search(str(x))
            if not m:
                continue
            typ, arg = m.group(1), m.group(2).strip()
            with contextlib.suppress(ValueError, SyntaxError):
                arg = str(ast.literal_eval(arg)) if arg else ""
            frames = [(f.filename, f.lineno, f.name) for f in getattr(x, "real_stack", None) or []]
            return _exception_text(typ, arg, frames)
        if isinstance(x, Exception) and not isinstance(x, dexc.TorchDynamoException) and x is not e \
                and isinstance(e, dexc.InternalTorchDynamoError):
            import traceback
            msg = str(x).split("\n\nfrom user code:")[0].strip()
            frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(x.__traceback__)]
            return _exception_text(type(x).__name__, msg, frames)
    return None


def _exception_text(typ: str, msg: str, frames) -> str:
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    msg = " ".join(lines)[:400]
    if msg:
        text = f"{typ}: {msg}"
    else:
        lib = [f for f in frames if _is_library(f[0]) and "_dynamo" not in f[0]]
        where = ""
        if lib:
            f = lib[-1]
            path = Path(f[0])
            shown = next((path.relative_to(Path(d).parent).as_posix() for d in _torch_dirs()[:1]
                          if str(path.resolve()).startswith(d)), path.name)
            where = f" by {f[2]} ({shown}:{f[1]})"
        text = f"{typ} (torch gives no message) raised{where}"
    if re.search(r"\bgroup\b", msg) and re.search(r"-100\b", msg):
        text += (" [-100 is GroupMember.NON_GROUP_MEMBER: dist.new_group returns it on ranks outside "
                 "the group, so this rank calls a collective of a group it is not in]")
    return text


def _exc_location(e: BaseException, script_file: str | None) -> str:
    frames = []
    for f in getattr(e, "real_stack", None) or []:
        frames.append((f.filename, f.lineno, f.name, f.line or ""))
    if not frames:
        import traceback
        frames = [(f.filename, f.lineno, f.name, f.line or "") for f in traceback.extract_tb(e.__traceback__)]
    pick = pick_frame(frames, script_file)
    if pick is None:
        f = getattr(e, "innermost_user_frame_summary", None)
        if f is not None and not _is_library(f.filename):
            pick = (f.filename, f.lineno, f.name, f.line or "")
    if pick is None:
        return ""
    code = (pick[3] or "").strip()
    return f"{display_path(pick[0])}:{pick[1]} in {pick[2]}" + (f": {code}" if code else "")


# ----------------------------------------------------------------------------- source frames

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\s*$')


def _torch_dirs() -> tuple[str, ...]:
    import torch
    dirs = [str(Path(torch.__file__).resolve().parent)]
    with contextlib.suppress(ImportError):
        import functorch
        dirs.append(str(Path(functorch.__file__).resolve().parent))
    dirs.append(str(Path(contextlib.__file__).resolve().parent))  # the standard library
    return tuple(dirs)


def _is_library(path: str) -> bool:
    """torch's own code, the standard library's (not the packages installed beside it: a framework
    in the interpreter's site-packages is a program's code) or this package's frontend."""
    if path.startswith("<"):
        return True
    try:
        p = str(Path(path).resolve())
    except OSError:
        p = path
    if p.startswith(_torch_dirs()[:-1]) or p.startswith(str(Path(__file__).resolve().parent)):
        return True
    if any(part in _TEST_RUNNERS for part in Path(p).parts):
        return True         # a test runner calling the program (assert_refines, cli.main in a test)
    return p.startswith(_torch_dirs()[-1]) and not any(part in _INSTALLED for part in Path(p).parts)


def pick_frame(frames, script_file: str | None, prefer_script: bool = False):
    """The innermost frame that is the script's or an installed package's outside torch (a
    framework's line when the script calls a framework's module; the script's line when it calls
    a helper of its own beside it); else the innermost frame outside torch and the standard
    library.  ``prefer_script``: the innermost frame in the script first, if any (a failure in
    build is shown at the script's line that led to it)."""
    def same(f):
        try:
            return script_file is not None and str(Path(f).resolve()) == script_file
        except OSError:
            return False

    def installed(f):
        return any(part in _INSTALLED for part in Path(f).parts) and not _is_library(f)
    if prefer_script:
        for f in reversed(frames):
            if same(f[0]):
                return f
    for f in reversed(frames):
        if same(f[0]) or installed(f[0]):
            return f
    for f in reversed(frames):
        if not _is_library(f[0]):
            return f
    return None


def parse_stack_trace(text: str | None):
    """FX ``stack_trace`` text -> [(file, line, fn, code)], outermost first."""
    if not text:
        return []
    frames, lines = [], text.splitlines()
    for i, ln in enumerate(lines):
        m = _FRAME.match(ln)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
            frames.append((m.group("file"), int(m.group("line")), m.group("fn"), code))
    return frames


@contextlib.contextmanager
def quiet_torch_logs():
    """Torch logs a traceback for a failing fake-tensor call; we report the error in one line."""
    import logging
    loggers = [logging.getLogger(n) for n in ("torch._subclasses.fake_tensor", "torch._dynamo",
                                               "torch.fx.experimental.symbolic_shapes")]
    old = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, lvl in zip(loggers, old):
            lg.setLevel(lvl)
