"""The number an expression always evaluates to, when the code says so: a literal (`0.0`,
`-1e-3`), a name assigned such a value exactly once, and `+ - * /` of those. Rules ask for
it where the value alone decides a failure (`dt0=0` in a solve)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis.intervals import number
from odelint.analysis.scopes import Scope

if TYPE_CHECKING:
    from odelint.analysis.facts import Facts

_OPERATORS: dict[type, Callable[[float, float], float]] = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul, cst.Divide: operator.truediv,
}


def constant_number(facts: Facts, node: cst.BaseExpression, scope: Scope,
                    seen: frozenset[int] = frozenset()) -> float | None:
    literal = number(node)
    if literal is not None:
        return literal
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = constant_number(facts, node.expression, scope, seen)
        return None if inner is None else -inner
    if isinstance(node, cst.BinaryOperation) and type(node.operator) in _OPERATORS:
        left = constant_number(facts, node.left, scope, seen)
        right = constant_number(facts, node.right, scope, seen)
        if left is None or right is None or (isinstance(node.operator, cst.Divide) and right == 0):
            return None
        return _OPERATORS[type(node.operator)](left, right)
    if isinstance(node, cst.Name) and id(node) not in seen:
        bindings = facts.lookup(node.value, scope)
        if len(bindings) == 1 and bindings[0].kind == "assign" and not bindings[0].path and bindings[0].value:
            return constant_number(facts, bindings[0].value, bindings[0].scope, seen | {id(node)})
    return None
