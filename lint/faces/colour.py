"""ANSI colour for the text output, with the conventions every terminal tool follows: on for a
terminal unless `NO_COLOR` is set (https://no-color.org), always with `FORCE_COLOR`, never in
a file or a pipe otherwise."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from typing import TextIO

STYLES = {
    "path": "1",          # bold
    "code": "1;31",       # bold red
    "fix": "36",          # cyan
    "caret": "31",        # red
    "gutter": "34",       # blue
    "summary": "1",
}

Paint = Callable[[str, str], str]


def wanted(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and environ.get("TERM") != "dumb"


def plain(text: str, style: str) -> str:
    return text


def ansi(text: str, style: str) -> str:
    return f"\x1b[{STYLES[style]}m{text}\x1b[0m" if text else text


def painter(enabled: bool) -> Paint:
    return ansi if enabled else plain
