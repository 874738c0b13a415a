"""Applying fixes to one parsed module: pick non-overlapping fixes, swap nodes, add imports."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import libcst as cst
from odelint.api.finding import Edits, Finding, NeedImport, Safety


def allowed(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (unsafe or finding.fix.safety is Safety.SAFE)


def choose(findings: Iterable[Finding], unsafe: bool) -> list[Finding]:
    """Fixable findings whose spans do not overlap; the rest wait for the next round."""
    chosen: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.span, f.code)):
        if not allowed(finding, unsafe):
            continue
        if any(_overlap(finding, other) for other in chosen):
            continue
        chosen.append(finding)
    return chosen


def _overlap(a: Finding, b: Finding) -> bool:
    start_a, end_a = (a.span.line, a.span.column), (a.span.end_line, a.span.end_column)
    start_b, end_b = (b.span.line, b.span.column), (b.span.end_line, b.span.end_column)
    return start_a < end_b and start_b < end_a


class _Swap(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, cst.CSTNode]) -> None:
        self.replacements = replacements
        self.done: set[int] = set()

    def on_leave(self, original_node, updated_node):
        new = self.replacements.get(id(original_node))
        if new is None:
            return updated_node
        self.done.add(id(original_node))
        return new


def apply(module: cst.Module, edits: Sequence[Edits]) -> cst.Module:
    """The module with every replacement made and every needed import present."""
    replacements: dict[int, cst.CSTNode] = {}
    imports: list[NeedImport] = []
    for edit in edits:
        for replace in edit.replacements:
            replacements[id(replace.node)] = replace.new
        imports.extend(edit.imports)
    swap = _Swap(replacements)
    updated = module.visit(swap)
    missing = set(replacements) - swap.done
    if missing:
        raise RuntimeError(f"{len(missing)} fix target(s) were not found in the module")
    return add_imports(updated, imports)


def add_imports(module: cst.Module, imports: Iterable[NeedImport]) -> cst.Module:
    """Insert `import x as y` lines after the file's leading imports (or its docstring)."""
    statements = []
    seen = set()
    for need in imports:
        if need in seen:
            continue
        seen.add(need)
        alias = cst.AsName(cst.Name(need.alias)) if need.alias else None
        dotted = cast("cst.Attribute | cst.Name", cst.parse_expression(need.module))
        names = [cst.ImportAlias(name=dotted, asname=alias)]
        statements.append(cst.SimpleStatementLine([cst.Import(names=names)]))
    if not statements:
        return module
    body = list(module.body)
    position = _import_insertion_point(body)
    return module.with_changes(body=[*body[:position], *statements, *body[position:]])


def _import_insertion_point(body: Sequence[cst.BaseStatement]) -> int:
    position = 0
    if body and _is_docstring(body[0]):
        position = 1
    last_import = None
    for index in range(position, len(body)):
        statement = body[index]
        if isinstance(statement, cst.SimpleStatementLine) and all(
                isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body):
            last_import = index
        else:
            break
    return position if last_import is None else last_import + 1


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))
