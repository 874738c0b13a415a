"""Output formats. Each takes the findings of a run and returns the text to print; a format's
module is imported only when it is used (SARIF needs the rules' docs, the others do not)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from odelint.api.finding import Finding

# format name -> the module whose `render(findings, **context)` writes it
FORMATS: dict[str, str] = {
    "text": "odelint.faces.report.text",
    "concise": "odelint.faces.report.concise",
    "json": "odelint.faces.report.json_format",
    "sarif": "odelint.faces.report.sarif",
    "github": "odelint.faces.report.github",
}


def render(name: str, findings: Sequence[Finding], **context) -> str:
    return importlib.import_module(FORMATS[name]).render(findings, **context)
