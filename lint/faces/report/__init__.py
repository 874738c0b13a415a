"""Output formats. Each takes the findings of a run and returns the text to print."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from odelint.api.finding import Finding
from odelint.faces.report import github, json_format, sarif, text

FORMATS: dict[str, Callable[..., str]] = {
    "text": text.render,
    "json": json_format.render,
    "sarif": sarif.render,
    "github": github.render,
}


def render(name: str, findings: Sequence[Finding], **context) -> str:
    return FORMATS[name](findings, **context)
