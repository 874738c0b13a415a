"""The pytree structure a value visibly has: a `list`, `tuple` or `dict` display, or a JAX
array. Diffrax compares a vector field's output with `y0` leaf by leaf, so a list where an
array was given (or the reverse) is a structure mismatch the code shows on its face."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis.scopes import Site

if TYPE_CHECKING:
    from odelint.analysis.facts import Facts

LIST, TUPLE, DICT, ARRAY = "list", "tuple", "dict", "array"
_DISPLAYS: dict[type, str] = {cst.List: LIST, cst.Tuple: TUPLE, cst.Dict: DICT}


def structure(facts: Facts, node: cst.BaseExpression, site: Site, seen: frozenset[int] = frozenset()) -> str | None:
    """`list`, `tuple`, `dict` or `array` when the code fixes which, else None."""
    from odelint.analysis.facts import Kind

    for display, name in _DISPLAYS.items():
        if isinstance(node, display):
            return name
    if isinstance(node, cst.Name) and id(node) not in seen:
        bindings = facts.lookup(node.value, site.scope)
        if len(bindings) == 1 and bindings[0].kind == "assign" and not bindings[0].path and bindings[0].value:
            binding = bindings[0]
            return structure(facts, binding.value, Site(binding.scope, binding.order), seen | {id(node)})  # type: ignore[arg-type]
    if isinstance(node, cst.Call) and facts.kind(node, site) is Kind.ARRAY:
        return ARRAY
    # arithmetic with an array operand is an array (`-jnp.stack(...)`, `2.0 * jnp.sin(y)`)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return ARRAY if structure(facts, node.expression, site, seen) == ARRAY else None
    if isinstance(node, cst.BinaryOperation):
        sides = {structure(facts, node.left, site, seen), structure(facts, node.right, site, seen)}
        return ARRAY if ARRAY in sides else None
    return None


def returned_structure(facts: Facts, function: cst.FunctionDef | cst.Lambda,
                       values: list[cst.BaseExpression | None]) -> str | None:
    """The structure all returned `values` of `function` have, when they agree."""
    scope = facts.index.body_scope(function)
    if scope is None or not values:
        return None
    site = Site(scope, 10**9)
    found = {structure(facts, value, site) if value is not None else None for value in values}
    return found.pop() if len(found) == 1 else None
