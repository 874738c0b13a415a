"""Re-parse one statement line inside a top-level compound statement: the editor's keystroke.

A keystroke inside a function changes one line of one top-level statement, and LibCST's parse
of that statement costs about 0.2 ms per line (a 100-line training function: 20 ms on each
keystroke). When the edit stays on one line of a simple statement (`x = f(a, 0.5)`) in the
blocks of a `def`, `class`, `if`, `for`, `while`, `with` or `try`, only that line is parsed,
inside `if 1:` to give it a block, and the statement is rebuilt along the path to it. CPython's
`ast` of the new text says which line belongs to which statement. Anything else (a header line,
a comment, a decorator, a line break typed or deleted, a `;` line's neighbour) returns None,
and the whole statement is parsed as before.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import libcst as cst
from odelint.analysis.words import common_prefix, common_suffix

if TYPE_CHECKING:  # module-level code must not touch LibCST (odelint.engine.deferred)
    _Block = tuple[list[cst.CSTNode], Sequence[cst.BaseStatement], list[ast.stmt]]  # path, statements, ast's


def spliced_line(statement: cst.BaseStatement, old_text: str, new_text: str,
                 newline: str) -> cst.BaseStatement | None:
    """`statement` (whose text was `old_text`) as a whole parse of `new_text` makes it, when
    the two texts differ within one line of a simple statement in its blocks; else None."""
    if "\r" in new_text or "\r" in old_text or newline != "\n":
        return None  # line breaks are `\n` alone: the edit leaves every line where it was
    start = common_prefix(old_text, new_text)
    end = common_suffix(old_text, new_text, start)
    if "\n" in old_text[start:len(old_text) - end] or "\n" in new_text[start:len(new_text) - end]:
        return None
    try:
        tree = ast.parse(new_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) != 1:
        return None
    edited = new_text.count("\n", 0, start) + 1
    found = _line_statement(statement, tree.body[0], edited)
    if found is None:
        return None
    path, first, last = found
    if edited == first and _indent(old_text, start) != _indent(new_text, start):
        return None  # the statement's own indent, which its block's may be
    text = "\n".join(new_text.split("\n")[first - 1:last]) + "\n"  # the lines CPython counts (no form feed)
    if text[:1] not in (" ", "\t"):
        return None
    parsed = _parsed_line(text)
    if parsed is None:
        return None
    old: cst.CSTNode = path[-1]
    new: cst.CSTNode = parsed.with_changes(leading_lines=cast(cst.SimpleStatementLine, old).leading_lines)
    for owner in reversed(path[:-1]):
        new, old = _with_child(owner, old, new), owner
    return cast(cst.BaseStatement, new)


def _line_statement(statement: cst.CSTNode, statement_ast: ast.stmt,
                    line: int) -> tuple[list[cst.CSTNode], int, int] | None:
    """The path from `statement` to the simple statement line holding `line`, and that
    statement's first and last line; None when `line` is anywhere else."""
    path: list[cst.CSTNode] = [statement]
    while True:
        blocks = _blocks(statement, statement_ast)
        if blocks is None:
            return None
        for chain, statements, statements_ast in blocks:
            if not statements_ast or not _first_line(statements_ast[0]) <= line <= (statements_ast[-1].end_lineno or 0):
                continue
            aligned = _aligned(statements, statements_ast)
            if aligned is None:
                return None
            for child, child_asts in aligned:
                first, last = _first_line(child_asts[0]), child_asts[-1].end_lineno or 0
                if not first <= line <= last:
                    continue
                path += [*chain, child]
                if isinstance(child, cst.SimpleStatementLine):
                    return path, first, last
                statement, statement_ast = child, child_asts[0]
                break
            else:
                return None  # a comment or blank line between statements
            break
        else:
            return None  # a header line (`def f(x):`, `else:`)


def _indent(text: str, offset: int) -> str:
    """The spaces and tabs that start the line holding `offset`."""
    begin = text.rfind("\n", 0, offset) + 1
    end = begin
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[begin:end]


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", None)
    return min([statement.lineno, *(decorator.lineno for decorator in decorators)]) if decorators else statement.lineno


def _blocks(node: cst.CSTNode, tree: ast.stmt) -> list[_Block] | None:
    """The indented blocks of a compound statement with `ast`'s statements of each; None for
    a statement this does not look into (or a block on its header's line)."""
    found: list[tuple[list[cst.CSTNode], cst.BaseSuite, list[ast.stmt]]] = []
    blocks: list[_Block] = []
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.With)) and isinstance(
            tree, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.AsyncWith)):
        found.append(([], node.body, tree.body))
    elif isinstance(node, (cst.For, cst.While)) and isinstance(tree, (ast.For, ast.AsyncFor, ast.While)):
        found.append(([], node.body, tree.body))
        if node.orelse is not None:
            found.append(([node.orelse], node.orelse.body, tree.orelse))
    elif isinstance(node, cst.If) and isinstance(tree, ast.If):
        found.append(([], node.body, tree.body))
        if isinstance(node.orelse, cst.Else):
            found.append(([node.orelse], node.orelse.body, tree.orelse))
        elif isinstance(node.orelse, cst.If):  # `elif`: ast's `orelse` holds that `if` alone
            blocks.append(([], (node.orelse,), tree.orelse))
    elif isinstance(node, cst.Try) and isinstance(tree, ast.Try) and len(node.handlers) == len(tree.handlers):
        found.append(([], node.body, tree.body))
        found += [([handler], handler.body, handler_ast.body)
                  for handler, handler_ast in zip(node.handlers, tree.handlers, strict=True)]
        if node.orelse is not None:
            found.append(([node.orelse], node.orelse.body, tree.orelse))
        if node.finalbody is not None:
            found.append(([node.finalbody], node.finalbody.body, tree.finalbody))
    else:
        return None
    for chain, suite, statements_ast in found:
        if not isinstance(suite, cst.IndentedBlock):
            return None  # `if x: y` on one line
        blocks.append(([*chain, suite], suite.body, statements_ast))
    return blocks


def _aligned(statements: Sequence[cst.BaseStatement],
             statements_ast: list[ast.stmt]) -> list[tuple[cst.BaseStatement, list[ast.stmt]]] | None:
    """Each LibCST statement with the `ast` statements it holds (a line of `a; b` holds two)."""
    aligned, cursor = [], 0
    for statement in statements:
        width = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        if width == 0 or cursor + width > len(statements_ast):
            return None
        aligned.append((statement, statements_ast[cursor:cursor + width]))
        cursor += width
    return aligned if cursor == len(statements_ast) else None


def _parsed_line(text: str) -> cst.SimpleStatementLine | None:
    """The one simple statement line `text` (indented, as it stands in its block) holds."""
    try:
        module = cst.parse_module("if 1:\n" + text)
    except cst.ParserSyntaxError:
        return None
    block = module.body[0].body if len(module.body) == 1 and isinstance(module.body[0], cst.If) else None
    if (not isinstance(block, cst.IndentedBlock) or len(block.body) != 1 or block.footer or module.footer
            or not isinstance(block.body[0], cst.SimpleStatementLine) or block.body[0].leading_lines):
        return None
    return block.body[0]


def _with_child(owner: cst.CSTNode, old: cst.CSTNode, new: cst.CSTNode) -> cst.CSTNode:
    """`owner` with its child `old` (a field's value, or an item of a field's sequence) replaced."""
    for field in dataclasses.fields(owner):
        value = getattr(owner, field.name)
        if value is old:
            return owner.with_changes(**{field.name: new})
        if isinstance(value, (tuple, list)) and any(item is old for item in value):
            return owner.with_changes(**{field.name: type(value)(new if item is old else item for item in value)})
    raise ValueError("not a child of its owner")
