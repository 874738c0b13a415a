"""Which values of a variable a comparison with a constant selects: `x > 0` is true on
(0, inf) and false on (-inf, 0]. Rules ask whether a guard deselects some input where a
function misbehaves (`jnp.sqrt` at x <= 0)."""

from __future__ import annotations

import dataclasses
import math

import libcst as cst
from odelint.analysis.literals import number
from odelint.analysis.scopes import dotted_name

INF = math.inf


@dataclasses.dataclass(frozen=True)
class Interval:
    low: float
    high: float
    low_closed: bool = True
    high_closed: bool = True

    def meets(self, low: float, high: float) -> bool:
        """Does this interval share a point with the closed interval [low, high]?"""
        start, end = max(self.low, low), min(self.high, high)
        if start < end:
            return True
        if start > end:
            return False
        return ((start > self.low or self.low_closed) and (start < self.high or self.high_closed))


# comparison operator (LibCST's class name) -> (where it is true, where it is false), for `x OP c`
_REGIONS = {
    "GreaterThan": (lambda c: [Interval(c, INF, False)], lambda c: [Interval(-INF, c)]),
    "GreaterThanEqual": (lambda c: [Interval(c, INF)], lambda c: [Interval(-INF, c, True, False)]),
    "LessThan": (lambda c: [Interval(-INF, c, True, False)], lambda c: [Interval(c, INF)]),
    "LessThanEqual": (lambda c: [Interval(-INF, c)], lambda c: [Interval(c, INF, False)]),
    "Equal": (lambda c: [Interval(c, c)], lambda c: [Interval(-INF, c, True, False), Interval(c, INF, False)]),
    "NotEqual": (lambda c: [Interval(-INF, c, True, False), Interval(c, INF, False)], lambda c: [Interval(c, c)]),
}
_MIRRORED = {"GreaterThan": "LessThan", "GreaterThanEqual": "LessThanEqual", "LessThan": "GreaterThan",
             "LessThanEqual": "GreaterThanEqual", "Equal": "Equal", "NotEqual": "NotEqual"}


def guard(test: cst.BaseExpression) -> tuple[str, cst.BaseExpression, list[Interval], list[Interval]] | None:
    """For `x OP c` (or `c OP x`) with a variable `x` (a name or attribute chain) and a
    number `c`: `x`'s dotted name, its node, where the test is true, where it is false."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    operator = type(target.operator).__name__
    if operator not in _REGIONS:
        return None
    variable, constant = test.left, number(target.comparator)
    if constant is None:
        variable, constant = target.comparator, number(test.left)
        operator = _MIRRORED[operator]
    name = dotted_name(variable) if constant is not None else None
    if name is None:
        return None
    true, false = _REGIONS[operator]
    return name, variable, true(constant), false(constant)
