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
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from odelint.analysis import jax_api, project

if TYPE_CHECKING:
    from odelint.analysis.sketch import Sketch


def may_hold_modules(sketch: Sketch) -> bool:
    if sketch.refers_to("equinox", *_module_libraries()):
        return True
    if sketch.path is None:
        return False
    return _imports_reach_a_package(sketch.path, sketch.imported_modules)


def _project_files(path: str, modules: list[str]) -> Iterator[str]:
    """The project's files among the modules a file imports."""
    imports = project.ImportsOf(path)
    for module in modules:
        if module.lstrip(".").split(".")[0] in project.NEVER_PROJECT:
            continue
        found = imports.file(module)
        if found is not None:
            yield found


@functools.cache
def _module_libraries() -> tuple[str, ...]:
    """Top-level packages that define Equinox modules (lint/analysis/data/library_modules.toml)."""
    return tuple(sorted({prefix.split(".")[0] for prefix in jax_api.library_prefixes()}))


# a project file's own part of the answer, by its path: its stamp, whether it imports one of
# the packages, and the modules it imports (found again in the project at every question, so
# that a file created since, or one edited further down the imports, is seen)
_own_parts: dict[str, tuple[list[int] | None, bool, list[str]]] = project.kept_of_other_files({})


def _imports_reach_a_package(path: str, modules: list[str]) -> bool:
    """Does a project file the file imports import Equinox or a library of modules, itself or
    through its own project imports? Asked breadth first, each file once: the nearest files
    mostly answer, so the files further down are seldom looked up."""
    seen = {os.path.abspath(path)}
    level = [(path, modules)]
    while level:
        below = []
        for importer, imported in level:
            for found in map(os.path.abspath, _project_files(importer, imported)):
                if found in seen:
                    continue
                seen.add(found)
                stamp = project.noted(found)  # the linted file's result depends on this file's contents
                own = _own_parts.get(found)
                if own is None or own[0] != stamp:
                    own = _own_parts[found] = (stamp, *_own_part(found))
                if own[1]:
                    return True
                below.append((found, own[2]))
        level = below
    return False


def _own_part(path: str) -> tuple[bool, list[str]]:
    """Whether the file imports one of the packages, else the modules it imports. A line
    importing one is enough to say "maybe" (`refers_to` would also ask for a use of the name it
    binds); an unreadable file may import anything (the model cannot read it either)."""
    try:
        text = project.read_text(path)
        if any(_outside_long_strings(text, found.start()) for found in _package_import().finditer(text)):
            return True, []
        modules = _scanned_imports(text)
        if modules is None:
            modules = _imported_modules(ast.parse(text))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return True, []
    packages = ("equinox", *_module_libraries())
    return any(module.split(".")[0] in packages for module in modules), modules


def _outside_long_strings(text: str, position: int) -> bool:
    """Is `position` after an even number of triple quotes (not in a docstring's usage example)?
    Only ever used to say "maybe", so a miscount costs a parse, never a finding."""
    before = text[:position]
    return (before.count('"""') + before.count("'''")) % 2 == 0


@functools.cache
def _package_import() -> re.Pattern[str]:
    """`import equinox ...` or `from diffrax ...` at the start of a line."""
    packages = "|".join(re.escape(package) for package in sorted({"equinox", *_module_libraries()}))
    return re.compile(rf"^[ \t]*(?:import|from)[ \t]+(?:{packages})\b", re.MULTILINE)


def _scanned_imports(text: str) -> list[str] | None:
    """The modules the file imports, read from its import statements alone: each line where
    the word `import` starts a statement of its own is parsed by itself (with the lines its
    brackets or backslashes carry on to). None where the word stands anywhere else (after `;`
    or `:`, in prose, in a docstring's usage example, which imports nothing): then the whole
    file is parsed. Parsing a whole project file to learn its imports was most of the time
    `may_hold_modules` took on users' code."""
    found: list[str] = []
    covered = 0  # where the last statement read ends
    quotes, counted = 0, 0  # triple quotes before `counted`
    for word in _import_word().finditer(text):
        if word.start() < covered or (word.start() and _is_name_character(text[word.start() - 1])):
            continue
        start = text.rfind("\n", 0, word.start()) + 1
        quotes += text.count('"""', counted, start) + text.count("'''", counted, start)
        counted = start
        if quotes % 2 or not _statement_start().match(text, start):
            return None
        covered = _logical_line_end(text, start)
        try:
            statement = ast.parse(text[start:covered].strip())
        except (SyntaxError, ValueError):
            return None
        found.extend(_imported_modules(statement))
    return found


def _logical_line_end(text: str, start: int) -> int:
    """Where the logical line starting at `start` ends: after the line that closes its
    brackets and ends without a backslash. (Brackets in strings or comments may miscount:
    then the text read does not parse, and the caller parses the file.)"""
    depth = 0
    end = start
    while end < len(text):
        newline = text.find("\n", end)
        stop = len(text) if newline < 0 else newline
        line = text[end:stop]
        depth += line.count("(") - line.count(")")
        end = stop + 1
        if depth <= 0 and not line.rstrip().endswith("\\"):
            break
    return min(end, len(text))


@functools.cache
def _import_word() -> re.Pattern[str]:
    """`import` ending a word; the caller checks where it starts (a pattern that starts with
    `\\b` has no literal prefix for `re` to search fast)."""
    return re.compile(r"import\b")


def _is_name_character(character: str) -> bool:
    return character.isalnum() or character == "_"


@functools.cache
def _statement_start() -> re.Pattern[str]:
    """A line that starts with `import` or `from` (what follows is parsed)."""
    return re.compile(r"[ \t]*(?:import|from)\b")


def _imported_modules(tree: ast.Module) -> list[str]:
    """`Sketch.imported_modules` without a Sketch: import statements are found among the
    statements alone, never inside an expression."""
    from odelint.analysis.sketch import imported

    found: list[str] = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.extend(module for module, _, _ in imported(node))
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                stack.extend(block)
    return found
