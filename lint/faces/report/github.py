"""GitHub Actions workflow commands: one `::warning ...::` annotation per finding (`::error`
for a file that does not parse or cannot be read), the severity every face shows."""

from __future__ import annotations

from collections.abc import Sequence

from odelint.api.finding import Finding


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: Sequence[Finding], **_) -> str:
    lines = []
    for f in findings:
        where = (f"file={_property(f.path)},line={f.span.line},col={f.span.column},"
                 f"endLine={f.span.end_line},endColumn={f.span.end_column}")
        cell = f"cell {f.cell}: " if f.cell is not None else ""  # its lines count within the cell
        title = _property(f"odelint ({f.code})")
        lines.append(f"::{f.severity} title={title},{where}::{_data(f'{cell}{f.code} {f.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")
