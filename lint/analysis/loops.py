"""Loops over configurations: a Python loop whose iterations are different programs on
purpose (`for tile in (128, 256)`, `itertools.product(blocks, tiles)`). Which code runs once per
iteration is the scope index's (`Facts.loop_at`)."""

from __future__ import annotations

import libcst as cst
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.scopes import Site, target_names

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
    return frozenset(target_names(loop.target))


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
