"""What the rest of a file can see of each top-level statement, for analyses that keep answers
across an editor's edits (Facts.carried).

Code outside a `def` or `class` statement sees of it only the name it binds at module level
and, for a class, its bases and the names its body binds (with the decorators that make a
method static); a statement that binds more at module level (a `global` assigned inside) is
not followed. An edit that only replaces such
statements by others with the same outline changes nothing code elsewhere can look up: an
answer found there stays right, unless it names a function of a replaced statement (a new node
now) or reads the calls of a function that a replaced statement calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from odelint.analysis.scopes import ScopeIndex

MAX_REPLACED = 4  # more statements replaced at once (a paste, a whole-file parse): start afresh

Outline = tuple | None  # None: a statement whose outline is not followed (an import, an assignment, ...)


def outlines(index: ScopeIndex, module: cst.Module, known: dict[int, tuple[cst.CSTNode, Outline]]) -> list[Outline]:
    """Each top-level statement's outline, in order. An outline depends on its statement alone,
    so `known` keeps them by statement from one lint to the next (updated here)."""
    found: list[Outline] = []
    bound: dict[int, list[tuple[int, str, str]]] | None = None  # top-level statement -> (order, name, kind)
    for top, statement in enumerate(module.body):
        kept = known.get(id(statement))
        if kept is not None and kept[0] is statement:
            found.append(kept[1])
            continue
        if bound is None:
            bound = _module_bindings(index)
        names = [(name, kind) for _, name, kind in sorted(bound.get(top, ()))]
        # only the statement's own name: a `global` assigned inside could mean something else now
        shape: Outline = None
        if type(statement) is cst.FunctionDef and names == [(statement.name.value, "def")]:
            shape = ("def", statement.name.value)
        elif type(statement) is cst.ClassDef and names == [(statement.name.value, "class")]:
            shape = ("class", statement.name.value, _class_outline(index, module, statement))
        found.append(shape)
    known.clear()
    known.update((id(statement), (statement, shape)) for statement, shape in zip(module.body, found, strict=True))
    return found


def _module_bindings(index: ScopeIndex) -> dict[int, list[tuple[int, str, str]]]:
    bound: dict[int, list[tuple[int, str, str]]] = {}
    for name, bindings in index.module_scope.bindings.items():
        for binding in bindings:
            top = index.top_of(binding.order)
            if top is not None:
                bound.setdefault(top, []).append((binding.order, name, binding.kind))
    return bound


def _class_outline(index: ScopeIndex, module: cst.Module, cls: cst.ClassDef) -> tuple:
    scope = index.body_scope(cls)
    body = sorted((binding.order, name, binding.kind, _plain_decorators(binding.node) if binding.kind == "def" else ())
                  for name, bindings in (scope.bindings.items() if scope is not None else ())
                  for binding in bindings)
    return (tuple(module.code_for_node(arg) for arg in (*cls.bases, *cls.keywords)),
            tuple(entry[1:] for entry in body))


def _plain_decorators(node: cst.CSTNode) -> tuple[str, ...]:
    decorators = node.decorators if isinstance(node, cst.FunctionDef) else ()
    return tuple(d.decorator.value for d in decorators if isinstance(d.decorator, cst.Name))


def replaced(before: Sequence[cst.CSTNode], before_outlines: Sequence[Outline], module: cst.Module,
             now_outlines: Sequence[Outline]) -> list[int] | None:
    """The indices of the top-level statements an edit replaced, when each keeps its outline
    (a function or class whose body changed); None when code elsewhere may see a difference."""
    body = module.body
    if len(body) != len(before):
        return None
    changed = [top for top, statement in enumerate(body) if statement is not before[top]]
    if len(changed) > MAX_REPLACED:
        return None
    for top in changed:
        if now_outlines[top] is None or now_outlines[top] != before_outlines[top]:
            return None
    return changed
