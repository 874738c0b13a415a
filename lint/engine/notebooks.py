"""Findings for a notebook, shared by the command line and the language server: the engine
runs on the joined program (odelint.files.notebook.Program); this module moves its findings
(and their related locations) into cells and shows a changed program as per-cell diffs."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from odelint.api.finding import Finding, Span
from odelint.files.notebook import Program


def place(findings: Iterable[Finding], notebook: Program) -> list[Finding]:
    """The findings with the cell they are in and lines counted within that cell."""
    placed = []
    for finding in findings:
        cell, span = _in_cell(finding.span, notebook)
        related = tuple(related.moved(within, where)
                        for related in finding.related for where, within in [_in_cell(related.span, notebook)])
        placed.append(finding.moved(span, cell, related))
    return placed


def _in_cell(span: Span, notebook: Program) -> tuple[int, Span]:
    cell, line = notebook.locate(span.line)
    shift = span.line - line
    return cell, Span(line, span.column, max(line, span.end_line - shift), span.end_column)


def cell_diff(path: str, changed: dict[int, tuple[str, str]]) -> str:
    """A unified diff per changed cell, headed `a/nb.ipynb:cell 3`, as Ruff shows them."""
    parts = []
    for number, (old, new) in sorted(changed.items()):
        parts.append("".join(difflib.unified_diff(
            _ended(old).splitlines(keepends=True), _ended(new).splitlines(keepends=True),
            fromfile=f"a/{path}:cell {number}", tofile=f"b/{path}:cell {number}")))
    return "".join(parts)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
