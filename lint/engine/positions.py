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
from typing import TYPE_CHECKING, cast

import libcst as cst
from odelint.analysis.scopes import children_of

if TYPE_CHECKING:
    from libcst.metadata import CodeRange

Ranges = dict["cst.CSTNode", "CodeRange"]  # (strings: LibCST is loaded on first use, not on import)


class StatementPositions:
    """Ranges of the nodes of top-level statements, relative to each statement's own text
    (its leading comment and blank lines included), for one document across edits."""

    def __init__(self) -> None:
        self._ranges: dict[int, tuple[cst.CSTNode, Ranges]] = {}
        self._wanted: list[cst.CSTNode] = []  # statements that held findings when none was kept yet

    def want(self, statements: Iterable[cst.CSTNode]) -> None:
        """Statements the next edit's positions will likely need (they hold findings now): a
        document's first lint renders only the innermost statements around its findings."""
        self._wanted = list(statements)

    def warm(self, module: cst.Module) -> None:
        """Keep the ranges of the wanted statements still in `module` (while the editor idles)."""
        body = {id(statement) for statement in module.body}
        for statement in self._wanted:
            if id(statement) in body:
                self.relative(module, statement)
        self._wanted = []

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
    return cast(Ranges, dict(provider._computed))


def _first_ast_statements(body: Sequence[cst.CSTNode], ast_body: list[ast.stmt]) -> list[ast.stmt] | None:
    """The `ast` statement each LibCST statement of a block starts with (a line of `a; b` is
    one LibCST statement and two `ast` ones); None when the blocks do not line up."""
    found: list[ast.stmt] = []
    cursor = 0
    for statement in body:
        width = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        if cursor + width > len(ast_body):
            return None
        found.append(ast_body[cursor])
        cursor += width
    return found if cursor == len(ast_body) else None


def _ast_statements(module: cst.Module, source: str, tree: ast.Module | None = None) -> list[ast.stmt] | None:
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    return _first_ast_statements(module.body, tree.body)


Chain = list[tuple["cst.ClassDef | cst.FunctionDef", int]]  # (class or function, index in its body)


def _body(owner: cst.ClassDef | cst.FunctionDef) -> Sequence[cst.BaseStatement]:
    """The statements of a block `_innermost` descended into (always an indented one)."""
    return cast(cst.IndentedBlock, owner.body).body


def _innermost(statement: cst.CSTNode, nodes: set[int]) -> dict[int, Chain]:
    """For each node of `nodes` (ids) in `statement`: the classes and functions, from
    `statement` inwards, whose body statement (by index) holds it, the chain down to the
    smallest statement that needs rendering. One walk for all of them."""
    chains: dict[int, Chain] = {}
    stack: list[tuple[cst.CSTNode, Chain]] = [(statement, [])]
    while stack and len(chains) < len(nodes):
        current, chain = stack.pop()
        if id(current) in nodes:
            chains[id(current)] = chain
        block = current if isinstance(current, (cst.ClassDef, cst.FunctionDef)) else None
        body = block.body if block is not None else None
        for child in children_of(current):
            if block is not None and child is body and isinstance(body, cst.IndentedBlock):
                stack.extend((part, [*chain, (block, index)]) for index, part in enumerate(body.body))
            else:
                stack.append((child, chain))
    return chains


def _nested(module: cst.Module, top_ast: ast.stmt, chain: Chain
            ) -> tuple[Ranges, int] | None:
    """Ranges from rendering only the innermost statement of `chain` inside the headers of
    the classes and functions around it (so its indentation, and every column, is kept), and
    the line shift that puts them where they are in the file."""
    owner_ast: ast.stmt = top_ast
    for owner, index in chain:
        ast_body = getattr(owner_ast, "body", None)
        matched = _first_ast_statements(_body(owner), ast_body) if isinstance(ast_body, list) else None
        if matched is None:
            return None
        owner_ast = matched[index]
    owner, index = chain[-1]
    innermost: cst.CSTNode = _body(owner)[index]
    skeleton = innermost
    for owner, _ in reversed(chain):
        skeleton = owner.with_changes(body=owner.body.with_changes(body=(skeleton,)))
    ranges = _whole(module.with_changes(header=(), body=(skeleton,), footer=()))
    return ranges, owner_ast.lineno - ranges[innermost].start.line


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


def _rendered(module: cst.Module, statement: cst.CSTNode, statement_ast: ast.stmt, nodes: list[cst.CSTNode],
              memo: StatementPositions) -> dict[int, tuple[Ranges, int]]:
    """(ranges, line shift) for each node, rendering each innermost statement once."""
    chains = _innermost(statement, {id(node) for node in nodes})
    by_innermost: dict[int, tuple[Ranges, int] | None] = {}
    result: dict[int, tuple[Ranges, int]] = {}
    for node in nodes:
        chain = chains.get(id(node))
        nested = None
        if chain:
            key = id(_body(chain[-1][0])[chain[-1][1]])
            if key not in by_innermost:
                by_innermost[key] = _nested(module, statement_ast, chain)
            nested = by_innermost[key]
        if nested is None:
            ranges = memo.relative(module, statement)
            nested = ranges, statement_ast.lineno - ranges[statement].start.line
        result[id(node)] = nested
    return result


def locate(module: cst.Module, source: str, nodes: Iterable[tuple[cst.CSTNode, int | None]], *,
           text_lines: Sequence[int] | None = None, memo: StatementPositions | None = None,
           tree: ast.Module | None = None) -> Ranges:
    """Ranges for `nodes`, each given with the index of the top-level statement that holds
    it (None when unknown: then it is searched for). `text_lines`, when known, gives the line
    where each statement's text (leading lines included) starts; `memo` keeps relative
    ranges across an editor's edits; `tree`, CPython's of `source` where the caller has it,
    spares parsing it again. Nodes outside their statement fall back to the whole module."""
    wanted = [(node, top if top is not None else _top_holding(module, node)) for node, top in nodes]
    tops = {top for _, top in wanted}
    if None in tops:
        return _whole(module)
    statements = None if text_lines is not None else _ast_statements(module, source, tree)
    if text_lines is None and statements is None:
        return _whole(module)
    if text_lines is None and memo is not None:  # an editor document's first lint
        memo.want(module.body[top] for top in sorted(t for t in tops if t is not None))
    memo = memo if memo is not None else StatementPositions()
    found: Ranges = {}
    for top in sorted(t for t in tops if t is not None):
        statement = module.body[top]
        here = [node for node, node_top in wanted if node_top == top]
        if text_lines is not None:  # an editor's document: whole statements, kept across edits
            ranges, shift = memo.relative(module, statement), text_lines[top] - 1
            rendered = {id(node): (ranges, shift) for node in here}
        else:  # a file linted once: only the innermost statement holding a node is rendered
            assert statements is not None
            rendered = _rendered(module, statement, statements[top], here, memo)
        for node in here:
            ranges, shift = rendered[id(node)]
            where = ranges.get(node)
            if where is not None:
                found[node] = type(where)((where.start.line + shift, where.start.column),
                                          (where.end.line + shift, where.end.column))
    if len(found) < len({id(node) for node, _ in wanted}):
        return _whole(module)
    return found
