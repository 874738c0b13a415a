"""Positions and edits between odelint and LSP, without pygls.

odelint spans are 1-based lines and 1-based columns counted in code points; LSP positions
are 0-based lines and 0-based characters counted in UTF-16 code units (or the UTF-8 / UTF-32
units the client negotiated as its position encoding). LSP ends a line at
`\\n`, `\\r\\n` or `\\r`, so `str.splitlines` (which also splits at form feeds) is not used.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8"))


# LSP's PositionEncodingKind values and how many units a string takes in each.
UNITS = {"utf-16": utf16_length, "utf-8": _utf8_length, "utf-32": len}


@dataclasses.dataclass(frozen=True)
class Position:
    line: int       # 0-based
    character: int  # code units (of the negotiated encoding) from the start of the line


@dataclasses.dataclass(frozen=True)
class TextEdit:
    start: Position
    end: Position
    new_text: str


class Lines:
    """A document's line starts, to turn code-point offsets and columns into LSP positions."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.length = UNITS.get(encoding, utf16_length)
        if "\r" in text:
            self.starts = [0] + [match.end() for match in _LINE_BREAK.finditer(text)]
        else:  # most documents: `str.split` is several times faster than a match per line
            self.starts = list(itertools.accumulate((len(line) + 1 for line in text.split("\n")[:-1]), initial=0))

    def line_text(self, index: int) -> str:
        """The 0-based line `index` without its line break."""
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)
        return _LINE_BREAK.sub("", self.text[self.starts[index]:end])

    def position(self, line: int, column: int) -> Position:
        """LSP position of a 1-based line and 1-based code-point column (clamped to the text)."""
        if line < 1:
            return Position(0, 0)
        if line > len(self.starts):
            last = len(self.starts) - 1
            return Position(last, self.length(self.line_text(last)))
        content = self.line_text(line - 1)
        return Position(line - 1, self.length(content[:max(column - 1, 0)]))

    def offset_position(self, offset: int) -> Position:
        index = bisect.bisect_right(self.starts, offset) - 1
        return Position(index, self.length(self.text[self.starts[index]:offset]))


def minimal_edit(old: str, new: str, encoding: str = "utf-16") -> TextEdit | None:
    """One edit that turns `old` into `new`, touching only the part that changed."""
    if old == new:
        return None
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    if 0 < start < len(old) and old[start - 1] == "\r" and old[start] == "\n":
        start -= 1  # never split a CRLF: no LSP position lies between its two characters
    tail = 0
    while tail < limit - start and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_end = len(old) - tail
    if 0 < old_end < len(old) and old[old_end - 1] == "\r" and old[old_end] == "\n":
        tail -= 1
        old_end += 1
    lines = Lines(old, encoding)
    return TextEdit(lines.offset_position(start), lines.offset_position(old_end), new[start:len(new) - tail])
