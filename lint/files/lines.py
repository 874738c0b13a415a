"""Lines as Python counts them: a line ends at `\\n`, `\\r\\n` or a bare `\\r`, nowhere else.

`str.splitlines()` also breaks at `\\v`, `\\f`, `\\x1c`-`\\x1e`, `\\x85` and U+2028/2029, which
may stand inside a string literal; a comment added at such a "line end" would land inside the
string. Every face (noqa, snippets, positions, notebooks, the server) splits with this module.
"""

from __future__ import annotations

import re

BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split(text: str) -> list[str]:
    """The lines of `text`, each with its own line break (the last one may have none)."""
    if "\r" in text:
        return _LINE.findall(text)
    pieces = text.split("\n")  # most files: `str.split` is several times faster than the pattern
    last = pieces.pop()
    found = [piece + "\n" for piece in pieces]
    if last:
        found.append(last)
    return found


def bare(text: str) -> list[str]:
    """The lines of `text` without their line breaks (a warm run's snippets split every file
    that has a finding: `str.split` there, not a call per line)."""
    pieces = BREAK.split(text) if "\r" in text else text.split("\n")
    if not pieces[-1]:
        pieces.pop()
    return pieces


def ending(line: str) -> str:
    """The line break a line ends with ("" for none)."""
    if line.endswith("\r\n"):
        return "\r\n"
    return line[-1] if line.endswith(("\n", "\r")) else ""


def strip_break(line: str) -> str:
    return line[:len(line) - len(ending(line))]


def with_newlines(text: str) -> str:
    """`text` with every line break written `\\n`: same lines, same columns, for tokenizers
    that read lines with `io.StringIO.readline` (which breaks at `\\n` only)."""
    return BREAK.sub("\n", text) if "\r" in text else text
