"""Which nodes run once per iteration of a Python `for`/`while` loop of their own scope.

A loop body re-runs its statements, so a function object created there (a `lambda`, a
nested `def`, a `functools.partial`) is a new object every iteration. A `while` loop's test
and a `for` loop's target run per iteration too; a `for` loop's iterable and `else` block
run once. Bodies of functions defined inside the loop are not part of it: they run when
called, not per iteration. Built once per file, on first use.
"""

from __future__ import annotations

import weakref

import libcst as cst
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.scopes import Site


class Loops:
    def __init__(self, module: cst.Module) -> None:
        self._loop_of: dict[int, cst.For | cst.While] = {}
        stack: list[tuple[cst.CSTNode, cst.For | cst.While | None]] = [(module, None)]
        while stack:
            node, loop = stack.pop()
            if loop is not None:
                self._loop_of[id(node)] = loop
            if isinstance(node, (cst.For, cst.While)):
                again = (node.target, node.body) if isinstance(node, cst.For) else (node.test, node.body)
                stack.extend((child, node if any(child is part for part in again) else loop)
                             for child in node.children)
            elif isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                header = [c for c in node.children if c is not getattr(node, "body", None)]
                stack.extend((child, loop) for child in header)
                stack.append((node.body, None))
            else:
                stack.extend((child, loop) for child in node.children)

    def loop_of(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost loop of the same scope whose body runs `node` each iteration."""
        return self._loop_of.get(id(node))


_CACHE: "weakref.WeakKeyDictionary[Facts, Loops]" = weakref.WeakKeyDictionary()


def loops(facts: Facts) -> Loops:
    if facts not in _CACHE:
        _CACHE[facts] = Loops(facts.index.module)
    return _CACHE[facts]


_GRIDS = frozenset({"itertools.product", "itertools.combinations", "itertools.permutations"})


def over_configurations(facts: Facts, loop: cst.For | cst.While, site: Site) -> frozenset[str]:
    """The loop variables of a `for` loop over configurations, else an empty set: a literal
    tuple or list of values that are not arrays (`for block in (64, 128, 256)`,
    `for layer in [Dropout(0.1), Dropout(0.5)]`), a grid of options
    (`itertools.product(blocks, tiles)`), or `enumerate`/`zip` of one. Code that closes over
    such a variable is a different program for each case on purpose; a loop over arrays of
    one shape is not one."""
    if not isinstance(loop, cst.For) or not _configurations(facts, loop.iter, site):
        return frozenset()
    return frozenset(_target_names(loop.target))


def _configurations(facts: Facts, iterable: cst.BaseExpression, site: Site, depth: int = 0) -> bool:
    if isinstance(iterable, cst.Name) and depth < 3:  # `grid = itertools.product(...)`, `layers = [...]`
        bindings = facts.lookup(iterable.value, site.scope)
        return (len(bindings) == 1 and bindings[0].kind == "assign" and not bindings[0].path
                and bindings[0].value is not None
                and _configurations(facts, bindings[0].value, Site(bindings[0].scope, bindings[0].order), depth + 1))
    if isinstance(iterable, (cst.Tuple, cst.List, cst.Set)):
        return all(facts.kind(element.value, site) is not Kind.ARRAY for element in iterable.elements)
    if not isinstance(iterable, cst.Call):
        return False
    qualname = facts.qualname(iterable.func, site.scope)
    if qualname in _GRIDS:
        return True
    if isinstance(iterable.func, cst.Name) and iterable.func.value in ("enumerate", "zip") and qualname is None:
        return any(_configurations(facts, arg.value, site, depth) for arg in iterable.args)
    return False


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_names(element.value)]
    return []


def names_read(node: cst.CSTNode) -> frozenset[str]:
    """Every name a function (or any code) reads, nested code included."""
    found: set[str] = set()
    pending: list[cst.CSTNode] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        else:
            pending.extend(current.children)
    return frozenset(found)
