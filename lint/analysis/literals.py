"""The one reader of literal values in LibCST trees: what `0x1`, `1_0`, `-1`, `(0, 2)`,
`"x"` or `1e-6` stand for, exactly as Python reads them.

Every analysis and rule that needs the value of `static_argnums=...`, `argnums=...`, an
index or a constant asks here, so `0x1` means 1 everywhere and nothing raises on it.
"""

from __future__ import annotations

import libcst as cst


def integer(node: cst.BaseExpression | None) -> int | None:
    """The value of an integer literal, signed (`-1`, `+2`, `0x1`, `1_0`), else None."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        inner = integer(node.expression)
        return None if inner is None else (-inner if isinstance(node.operator, cst.Minus) else inner)
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return None


def integers(node: cst.BaseExpression | None) -> frozenset[int] | None:
    """An integer literal or a tuple/list of them (`1`, `(0, 2)`, `[-1]`) as a set; None when
    any part is not an integer literal."""
    if node is None:
        return None
    elements = [e.value for e in node.elements] if isinstance(node, (cst.Tuple, cst.List)) else [node]
    found = [integer(element) for element in elements]
    return None if any(value is None for value in found) else frozenset(found)  # type: ignore[arg-type]


def positions(node: cst.BaseExpression | None, count: int) -> frozenset[int] | None:
    """`static_argnums=`/`argnums=` as positions among `count` parameters: jax counts a
    negative one from the end (`-1` is the last); None when not a literal."""
    found = integers(node)
    return None if found is None else frozenset(n + count if n < 0 else n for n in found)


def string(node: cst.BaseExpression | None) -> str | None:
    """The value of a plain string literal (implicitly concatenated too; not an f-string)."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def strings(node: cst.BaseExpression | None) -> frozenset[str] | None:
    """A string literal or a tuple/list of them as a set; None when any part is not one."""
    if node is None:
        return None
    elements = [e.value for e in node.elements] if isinstance(node, (cst.Tuple, cst.List)) else [node]
    found = [string(element) for element in elements]
    return None if any(value is None for value in found) else frozenset(found)  # type: ignore[arg-type]


def number(node: cst.BaseExpression | None) -> float | None:
    """The value of an int or float literal, signed (`1e-6`, `-1`, `0x10`), else None."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        inner = number(node.expression)
        return None if inner is None else (-inner if isinstance(node.operator, cst.Minus) else inner)
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.evaluated_value)
    return None


def is_none(node: cst.BaseExpression | None) -> bool:
    """Is `node` the literal `None`?"""
    return isinstance(node, cst.Name) and node.value == "None"
