"""Positions of reported nodes without generating positions for the whole file.

LibCST's PositionProvider renders the whole module and records a range for every node:
about twice the cost of parsing. A finding needs only its own node. So each top-level
statement that holds a finding is rendered alone, and its lines are shifted to where
CPython's `ast` (ten times faster than LibCST) says the statement starts. When anything
does not line up, the whole-module provider answers instead, so the result is always exact.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from libcst.metadata import CodeRange


def _whole(module: cst.Module) -> dict[cst.CSTNode, CodeRange]:
    from libcst.metadata import MetadataWrapper, PositionProvider  # imported when first needed

    return dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))


def _statement_lines(module: cst.Module, source: str) -> list[int] | None:
    """The line each top-level LibCST statement starts on, from `ast`; None if they disagree."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines: list[int] = []
    cursor = 0
    for statement in module.body:
        width = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        if cursor + width > len(tree.body):
            return None
        lines.append(tree.body[cursor].lineno)
        cursor += width
    return lines if cursor == len(tree.body) else None


def locate(module: cst.Module, source: str, nodes: Iterable[tuple[cst.CSTNode, int | None]]
           ) -> dict[cst.CSTNode, CodeRange]:
    """Ranges for `nodes`, each given with the index of the top-level statement that holds
    it (None when unknown). Nodes outside their statement fall back to the whole module."""
    wanted = list(nodes)
    tops = {top for _, top in wanted}
    lines = _statement_lines(module, source) if None not in tops else None
    if lines is None:
        return _whole(module)
    found: dict[cst.CSTNode, CodeRange] = {}
    for top in sorted(top for top in tops if top is not None):
        statement = module.body[top]
        alone = module.with_changes(header=(), body=(statement,), footer=())
        ranges = _whole(alone)
        shift = lines[top] - ranges[statement].start.line
        for node, node_top in wanted:
            where = ranges.get(node) if node_top == top else None
            if where is None:
                continue
            found[node] = type(where)((where.start.line + shift, where.start.column),
                                      (where.end.line + shift, where.end.column))
    if len(found) < len({id(node) for node, _ in wanted}):
        return _whole(module)
    return found
