"""The one reader of literal values: what `0x1`, `1_0`, `-1`, `(0, 2)`, `"x"` or `1e-6`
stand for, exactly as Python reads them, in LibCST trees (the rules' model) and in CPython
`ast` trees (the Sketch that gates files) alike.

Every analysis and rule that needs the value of `static_argnums=...`, `argnums=...`, an
index or a constant asks here, so `0x1` means 1 everywhere and nothing raises on it. The
two trees differ only in how a sign and a literal are spelled: `_signed` reads numbers for
both, through one adapter per tree.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TypeVar, cast

import libcst as cst

Tree = TypeVar("Tree")


def _signed(node: Tree, sign: Callable[[Tree], tuple[int, Tree] | None],
            literal: Callable[[Tree], int | float | None]) -> int | float | None:
    """A number literal under any signs (`-1`, `+-2`, `-(0x10)`), as Python reads it; None for
    anything else (booleans, complex numbers, names, strings)."""
    factor = 1
    step = sign(node)
    while step is not None:
        flip, node = step
        factor *= flip
        step = sign(node)
    value = literal(node)
    return None if value is None else factor * value


def _cst_sign(node: cst.BaseExpression) -> tuple[int, cst.BaseExpression] | None:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return (-1 if isinstance(node.operator, cst.Minus) else 1), node.expression
    return None


def _cst_literal(node: cst.BaseExpression) -> int | float | None:
    kind = type(node)
    if kind is cst.Integer:
        return int(cast(cst.Integer, node).value, 0)  # `0x1F`, `0o7`, `1_000`: as Python reads them
    if kind is cst.Float:
        return float(cast(cst.Float, node).value)  # `1e-6`, `1_0.5`, `.5`: the same correctly rounded value
    return None


def _ast_sign(node: ast.expr) -> tuple[int, ast.expr] | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return (-1 if isinstance(node.op, ast.USub) else 1), node.operand
    return None


def _ast_literal(node: ast.expr) -> int | float | None:
    value = node.value if isinstance(node, ast.Constant) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def integer(node: cst.BaseExpression | None) -> int | None:
    """The value of an integer literal, signed (`-1`, `+2`, `0x1`, `1_0`), else None."""
    value = _signed(node, _cst_sign, _cst_literal) if node is not None else None
    return value if isinstance(value, int) else None


def ast_integer(node: ast.expr | None) -> int | None:
    """`integer` on CPython's `ast` (the Sketch's tree)."""
    value = _signed(node, _ast_sign, _ast_literal) if node is not None else None
    return value if isinstance(value, int) else None


def integers(node: cst.BaseExpression | None) -> frozenset[int] | None:
    """An integer literal or a tuple/list of them (`1`, `(0, 2)`, `[-1]`) as a set; None when
    any part is not an integer literal."""
    if node is None:
        return None
    elements = [e.value for e in node.elements] if isinstance(node, (cst.Tuple, cst.List)) else [node]
    found = [integer(element) for element in elements]
    return None if any(value is None for value in found) else frozenset(found)  # type: ignore[arg-type]


def ast_integers(node: ast.expr | None) -> frozenset[int] | None:
    """`integers` on CPython's `ast` (the Sketch's tree)."""
    if node is None:
        return None
    found = [ast_integer(element) for element in (node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node])]
    return None if any(value is None for value in found) else frozenset(found)  # type: ignore[arg-type]


def positions(node: cst.BaseExpression | None, count: int) -> frozenset[int] | None:
    """`static_argnums=`/`argnums=` as positions among `count` parameters: jax counts a
    negative one from the end (`-1` is the last); None when not a literal."""
    found = integers(node)
    return None if found is None else frozenset(n + count if n < 0 else n for n in found)


def string(node: cst.BaseExpression | None) -> str | None:
    """The value of a plain string literal (implicitly concatenated too; not an f-string)."""
    kind = type(node)
    value: str | bytes | None
    if kind is cst.SimpleString:
        value = _simple_string(cast(cst.SimpleString, node).value)
    elif kind is cst.ConcatenatedString:
        value = cast(cst.ConcatenatedString, node).evaluated_value
    else:
        return None
    return value if isinstance(value, str) else None


def _simple_string(text: str) -> str | bytes:
    """A string literal's value. LibCST's `evaluated_value` parses the text with
    `ast.literal_eval` (a compile per string, and closures left as cyclic garbage); most
    strings have no prefix, escape or line break, and are their text between the quotes."""
    quote = text[0]
    if quote in "'\"" and "\\" not in text and "\r" not in text:
        edge = 3 if len(text) >= 6 and text[1] == text[2] == quote else 1
        return text[edge:-edge]
    return ast.literal_eval(text)


def strings(node: cst.BaseExpression | None) -> frozenset[str] | None:
    """A string literal or a tuple/list of them as a set; None when any part is not one."""
    if node is None:
        return None
    elements = [e.value for e in node.elements] if isinstance(node, (cst.Tuple, cst.List)) else [node]
    found = [string(element) for element in elements]
    return None if any(value is None for value in found) else frozenset(found)  # type: ignore[arg-type]


def ast_strings(node: ast.expr | None) -> frozenset[str] | None:
    """`strings` on CPython's `ast`: a string constant or a tuple/list of them as a set."""
    if node is None:
        return None
    found = [element.value if isinstance(element, ast.Constant) and isinstance(element.value, str) else None
             for element in (node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node])]
    return None if any(value is None for value in found) else frozenset(found)  # type: ignore[arg-type]


def number(node: cst.BaseExpression | None) -> float | None:
    """The value of an int or float literal, signed (`1e-6`, `-1`, `0x10`), else None."""
    value = _signed(node, _cst_sign, _cst_literal) if node is not None else None
    return None if value is None else float(value)


def ast_number(node: ast.expr | None) -> float | None:
    """`number` on CPython's `ast` (the Sketch's tree)."""
    value = _signed(node, _ast_sign, _ast_literal) if node is not None else None
    return None if value is None else float(value)


def is_none(node: cst.BaseExpression | None) -> bool:
    """Is `node` the literal `None`?"""
    return isinstance(node, cst.Name) and node.value == "None"
