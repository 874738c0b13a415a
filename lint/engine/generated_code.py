"""The compiled code of the methods class generators write at import, kept across runs like `__pycache__`.

`dataclasses` (before Python 3.13: each method alone) and `attrs` compile every generated method
(`__init__`, `__repr__`, `__eq__`, a frozen class's `__setattr__`...) from source text when a
class is defined. LibCST's node classes are dataclasses (978 compilations) and lsprotocol's 554
message classes are attrs classes: compiling is most of their import. On a slow core LibCST's
import took 0.32 s, 0.13 s with this cache, and lsprotocol's 0.62 s, 0.27 s. An editor waits
for both before its first diagnostics, and flake8's main process loads LibCST before it forks.

While `kept(origin, ...)` is open, each generator named finds in its own namespace an `exec`
(`dataclasses`) or `compile` (`attrs`) that looks the source text up among the code compiled
for it before and compiles only what is new, with the flags the generator's own call would
have used: the classes come out the same. The code is kept in the user's cache folder, never
in a project (a project's files may come from anyone): one file per imported package
installation and interpreter, written only when something was compiled and Python may write
bytecode (not under `PYTHONDONTWRITEBYTECODE`), read only when the current user owns it and
no one else may write it. Anything unreadable is ignored: the code is then compiled as usual.
"""

from __future__ import annotations
import __future__ as future

import builtins
import contextlib
import dataclasses
import importlib
import importlib.util
import marshal
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from types import CodeType

from odelint.files.digest import hexdigest

DATACLASSES = "dataclasses"
ATTRS = "attr._make"

_FOLDER = "generated-code"
_LARGEST = 64 * 1024 * 1024  # a larger file is not one this module wrote
_MOST_ENTRIES = 20_000  # past this, a file keeps only what the last window used (old versions' code goes)
# What a call of `exec` or `compile` with a text passes on of its caller's `__future__` imports.
_FUTURE_FLAGS = 0
for _feature in future.all_feature_names:
    _FUTURE_FLAGS |= getattr(future, _feature).compiler_flag
_lock = threading.RLock()  # a window replaces names in shared modules: one thread's windows at a time

Key = tuple[str, str, int]  # (source text, file name, future flags)


@dataclasses.dataclass
class Tally:
    """What one window did: source texts whose code was kept, and texts compiled anew."""

    found: int = 0
    compiled: int = 0


@contextlib.contextmanager
def kept(origin: str, *generators: str) -> Iterator[Tally]:
    """Classes the `generators` (DATACLASSES, ATTRS) define while this is open reuse the code
    kept for `origin` (the file of the package being imported: each installation has its own);
    what they compiled anew is kept for the next run. A generator that cannot be imported, or
    no longer calls the name it is given, is left alone."""
    from odelint.files.user_cache import user_cache_dir

    folder = user_cache_dir()
    # A relative folder (no home directory to expand `~` in) would put the cache in the project.
    path = os.path.join(folder, _FOLDER, _file_name(origin)) if os.path.isabs(folder) else None
    known = _read(path) if path is not None else {}
    used: dict[Key, CodeType] = {}
    tally = Tally()

    def code_for(source: str, filename: str, flags: int) -> CodeType:
        key = (source, filename, flags)
        code = used.get(key) or known.get(key)
        if code is None:
            code = compile(source, filename, "exec", flags, dont_inherit=True)
            tally.compiled += 1
        else:
            tally.found += 1
        used[key] = code
        return code

    def exec_kept(source: object, *args: object, **kwargs: object) -> None:
        if type(source) is not str or kwargs:
            return builtins.exec(source, *args, **kwargs)  # type: ignore[arg-type]
        return builtins.exec(code_for(source, "<string>", _caller_flags()), *args)  # type: ignore[arg-type]

    def compile_kept(source: object, filename: object, mode: object, *args: object, **kwargs: object) -> object:
        if type(source) is not str or type(filename) is not str or mode != "exec" or args or kwargs:
            return builtins.compile(source, filename, mode, *args, **kwargs)  # type: ignore[call-overload]
        return code_for(source, filename, _caller_flags())

    replacements: dict[str, Callable[..., object]] = {"exec": exec_kept, "compile": compile_kept}
    with _lock, contextlib.ExitStack() as restore:
        for generator in generators:
            module = _imported(generator)
            if module is not None:
                name = "exec" if generator == DATACLASSES else "compile"
                restore.enter_context(_replaced(module, name, replacements[name]))
        yield tally
    if tally.compiled and path is not None and not sys.dont_write_bytecode:
        # Other windows with the same origin may define other classes (each face imports its own
        # part of odelint first): what they kept stays, unless the file grew past all use.
        _write(path, {**known, **used} if len(known) + len(used) <= _MOST_ENTRIES else used)


def origin_of(package: str) -> str:
    """The file a package is imported from (its name where it cannot be found): the key of its code."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    return spec.origin if spec is not None and spec.origin else package


def _caller_flags() -> int:
    """The `__future__` flags of the code calling the replaced builtin (two frames up), which
    `exec` or `compile` given a text would have compiled it with."""
    return sys._getframe(2).f_code.co_flags & _FUTURE_FLAGS


def _imported(name: str) -> object | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


@contextlib.contextmanager
def _replaced(module: object, name: str, replacement: Callable[..., object]) -> Iterator[None]:
    namespace = vars(module)
    missing = object()
    before = namespace.get(name, missing)
    namespace[name] = replacement
    try:
        yield
    finally:
        if before is missing:
            del namespace[name]
        else:
            namespace[name] = before


def _file_name(origin: str) -> str:
    """One file per package installation and interpreter (the code's format is the interpreter's)."""
    key = "\0".join((os.path.abspath(origin), sys.version, importlib.util.MAGIC_NUMBER.hex()))
    return f"{hexdigest(key.encode())[:24]}.marshal"


def _read(path: str) -> dict[Key, CodeType]:
    try:
        with open(path, "rb") as handle:
            if not _trusted(os.fstat(handle.fileno())):
                return {}
            loaded = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(loaded, dict) or not all(_is_entry(key, code) for key, code in loaded.items()):
        return {}
    return loaded


def _is_entry(key: object, code: object) -> bool:
    return (type(key) is tuple and len(key) == 3 and type(key[0]) is str and type(key[1]) is str
            and type(key[2]) is int and type(code) is CodeType)


def _trusted(status: os.stat_result) -> bool:
    """A regular file of a sensible size that only its owner, the current user, may write."""
    if not stat.S_ISREG(status.st_mode) or status.st_size > _LARGEST:
        return False
    if hasattr(os, "getuid") and (status.st_uid != os.getuid() or status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        return False
    return True


def _write(path: str, used: dict[Key, CodeType]) -> None:
    """Atomically (another process may read or write it at the same time); failures are ignored."""
    import tempfile

    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".writing-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(marshal.dumps(used))
        os.replace(temporary, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(temporary)
