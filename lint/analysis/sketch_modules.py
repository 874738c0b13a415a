"""Whether an Equinox module may be in play in a sketched file, here or in a project file.

`Facts.module_class` finds modules through Equinox, the libraries of modules of
lint/analysis/data/library_modules.toml, and classes of the project's other files (`from model import
Net`, odelint.analysis.project). A file that refers to none of those packages and imports no
project file that may (itself or through its imports) holds no module.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from odelint.analysis import jax_api

if TYPE_CHECKING:
    from odelint.analysis.sketch import Sketch


def may_hold_modules(sketch: Sketch) -> bool:
    if sketch.refers_to("equinox", *_module_libraries()):
        return True
    if sketch.path is None:
        return False
    return any(_project_may_hold_modules(found, frozenset({os.path.abspath(sketch.path)}))
               for found in _project_files(sketch))


def _project_files(sketch: Sketch) -> Iterator[str]:
    from odelint.analysis import project

    imports = project.ImportsOf(sketch.path)  # type: ignore[arg-type]
    for module in sketch.imported_modules:
        if module.lstrip(".").split(".")[0] in project.NEVER_PROJECT:
            continue
        found = imports.file(module)
        if found is not None:
            yield found


@functools.cache
def _module_libraries() -> tuple[str, ...]:
    """Top-level packages that define Equinox modules (lint/analysis/data/library_modules.toml)."""
    return tuple(sorted({prefix.split(".")[0] for prefix in jax_api.library_prefixes()}))


_project_answers: dict[str, tuple[list[int] | None, bool]] = {}


def _project_may_hold_modules(path: str, seen: frozenset[str]) -> bool:
    """Does a project file refer to Equinox or a library of modules, itself or through its imports?"""
    from odelint.analysis import project

    path = os.path.abspath(path)
    if path in seen:
        return False
    stamp = project.noted(path)  # the linted file's result depends on this file's contents
    cached = _project_answers.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        tree = ast.parse(project.read_text(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # unreadable here, so the model cannot read it either; stay on the safe side
    from odelint.analysis.sketch import Sketch

    sketch = Sketch(tree, path)
    answer = sketch.refers_to("equinox", *_module_libraries()) or any(
        _project_may_hold_modules(found, seen | {path}) for found in _project_files(sketch))
    _project_answers[path] = (stamp, answer)
    return answer
