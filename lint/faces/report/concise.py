"""One line per finding, `path:line:col: CODE [*] message`, then the summary: Ruff's
`--output-format concise`, for terminals and tools that read one finding a line."""

from __future__ import annotations

from collections.abc import Sequence

from odelint.api.finding import Finding
from odelint.faces.report import text


def render(findings: Sequence[Finding], **context) -> str:
    return text.render(findings, **{**context, "snippets": False})
