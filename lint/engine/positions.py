"""Positions of reported nodes without generating positions for the whole file.

LibCST's PositionProvider renders the whole module and records a range for every node:
about twice the cost of parsing. A finding needs only its own node. So each top-level
statement that holds a finding is rendered alone, and its lines are shifted to where the
statement's text starts: known exactly from an editor document's incremental parser, else
from CPython's `ast` (ten times faster than LibCST). When anything does not line up, the
whole-module provider answers instead, so the result is always exact.

An editor re-lints after every keystroke, and its incremental parser hands back unchanged
statements as the same objects: `StatementPositions` keeps their relative ranges across
edits, so only an edited statement that holds a finding is rendered again.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis.scopes import children_of

if TYPE_CHECKING:
    from libcst.metadata import CodeRange

Ranges = dict[cst.CSTNode, "CodeRange"]


class StatementPositions:
    """Ranges of the nodes of top-level statements, relative to each statement's own text
    (its leading comment and blank lines included), for one document across edits."""

    def __init__(self) -> None:
        self._ranges: dict[int, tuple[cst.CSTNode, Ranges]] = {}

    def relative(self, module: cst.Module, statement: cst.CSTNode) -> Ranges:
        kept = self._ranges.get(id(statement))
        if kept is None or kept[0] is not statement:
            kept = (statement, _whole(module.with_changes(header=(), body=(statement,), footer=())))
            self._ranges[id(statement)] = kept
        return kept[1]

    def keep_only(self, module: cst.Module) -> None:
        """Forget the statements an edit replaced."""
        current = {id(statement) for statement in module.body}
        for key in [key for key in self._ranges if key not in current]:
            del self._ranges[key]


def _whole(module: cst.Module) -> Ranges:
    """Every node's range, from LibCST's PositionProvider run on its own: resolving it through
    a MetadataWrapper would also walk the whole tree once more for batchable providers, of
    which there are none here (half the cost)."""
    from libcst.metadata import PositionProvider  # imported when first needed

    provider = PositionProvider()
    provider._gen_impl(module)  # what MetadataWrapper.resolve runs for a non-batchable provider
    return dict(provider._computed)


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


def _top_holding(module: cst.Module, node: cst.CSTNode) -> int | None:
    """The index of the top-level statement whose subtree holds `node` (a search: used only
    for nodes whose statement the engine could not tell)."""
    for top, statement in enumerate(module.body):
        stack: list[cst.CSTNode] = [statement]
        while stack:
            current = stack.pop()
            if current is node:
                return top
            stack.extend(children_of(current))
    return None


def locate(module: cst.Module, source: str, nodes: Iterable[tuple[cst.CSTNode, int | None]], *,
           text_lines: Sequence[int] | None = None, memo: StatementPositions | None = None) -> Ranges:
    """Ranges for `nodes`, each given with the index of the top-level statement that holds
    it (None when unknown: then it is searched for). `text_lines`, when known, gives the line
    where each statement's text (leading lines included) starts; `memo` keeps relative
    ranges across an editor's edits. Nodes outside their statement fall back to the whole module."""
    wanted = [(node, top if top is not None else _top_holding(module, node)) for node, top in nodes]
    tops = {top for _, top in wanted}
    if None in tops:
        return _whole(module)
    ast_lines = None if text_lines is not None else _statement_lines(module, source)
    if text_lines is None and ast_lines is None:
        return _whole(module)
    memo = memo if memo is not None else StatementPositions()
    found: Ranges = {}
    for top in sorted(t for t in tops if t is not None):
        statement = module.body[top]
        ranges = memo.relative(module, statement)
        if text_lines is not None:
            shift = text_lines[top] - 1
        else:
            assert ast_lines is not None
            shift = ast_lines[top] - ranges[statement].start.line
        for node, node_top in wanted:
            where = ranges.get(node) if node_top == top else None
            if where is None:
                continue
            found[node] = type(where)((where.start.line + shift, where.start.column),
                                      (where.end.line + shift, where.end.column))
    if len(found) < len({id(node) for node, _ in wanted}):
        return _whole(module)
    return found
