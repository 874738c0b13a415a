"""Classes defined in the project's other files: `from model import Net` in train.py.

Real training scripts keep the model in one file and the loop in another, so whether `Net`
is an Equinox module (and which of its leaves are not arrays) is decided in model.py. An
imported name that no library table knows is looked up as a Python file: beside the linted
file, then under the project root (the nearest folder above it with a pyproject.toml,
setup.py, setup.cfg or .git) and its `src/`. Each such file is parsed once per process and
kept while its size and modification time stay the same; its facts answer for its classes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odelint.analysis.facts import Facts

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_MAX_FILE_BYTES = 2_000_000
# Top-level packages never looked up among the project's files.
NEVER_PROJECT = frozenset({"jax", "jaxlib", "equinox", "optax", "diffrax", "lineax", "optimistix", "numpy",
                           "scipy", "typing", "collections", "functools", "dataclasses", "abc", "math", "os",
                           "sys", "jaxtyping", "flax", "torch", "haiku"})
_parsed: dict[str, tuple[tuple[int, int], Facts | None]] = {}
_recording: list[dict[str, list[int]]] = []


@contextlib.contextmanager
def recording() -> Iterator[dict[str, list[int]]]:
    """Collect the project files whose classes answered while linting one file, each with its
    (modification time, size): a cached result for that file holds only while they do."""
    files: dict[str, list[int]] = {}
    _recording.append(files)
    try:
        yield files
    finally:
        _recording.pop()


def stamp(path: str) -> list[int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return [status.st_mtime_ns, status.st_size]


def project_root(path: str) -> str | None:
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in _ROOT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def module_file(qualname_module: str, importer: str) -> str | None:
    """The file that `import <module>` means for the file `importer` (relative imports
    start with dots), or None when no file of the project defines it."""
    here = os.path.dirname(os.path.abspath(importer))
    dots = len(qualname_module) - len(qualname_module.lstrip("."))
    parts = [part for part in qualname_module.lstrip(".").split(".") if part]
    if dots:
        base = here
        for _ in range(dots - 1):
            base = os.path.dirname(base)
        bases = [base]
    else:
        root = project_root(importer)
        bases = [here] + ([root, os.path.join(root, "src")] if root else [])
    for base in bases:
        stem = os.path.join(base, *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if parts and os.path.isfile(candidate):
                return candidate
    return None


def facts_of(path: str, seen: frozenset[str]) -> Facts | None:
    """The facts of another file of the project (None when it cannot be read or parsed)."""
    current = stamp(path)
    if current is None:
        return None
    if _recording:
        _recording[-1][os.path.abspath(path)] = current
    cached = _parsed.get(path)
    if cached is not None and list(cached[0]) == current:
        return cached[1]
    facts = _build(path, current[1], seen)
    _parsed[path] = ((current[0], current[1]), facts)
    return facts


def _build(path: str, size: int, seen: frozenset[str]) -> Facts | None:
    import libcst as cst
    from odelint.analysis.facts import Facts, model_node_types
    from odelint.analysis.scopes import build_scope_index

    if size > _MAX_FILE_BYTES:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        module = cst.parse_module(source)
        index = build_scope_index(module, model_node_types())
    except (OSError, UnicodeDecodeError, cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    return Facts(index, path, seen | {os.path.abspath(path)})
