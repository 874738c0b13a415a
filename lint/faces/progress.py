"""A one-line progress indicator on standard error for long runs in a terminal.

It appears only when stderr is a terminal, the run has more than MIN_FILES files to lint and
has already taken MIN_SECONDS; the line is rewritten in place at most every REFRESH seconds
and erased at the end, so neither pipes, files nor short runs ever see it."""

from __future__ import annotations

import time

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from typing import TextIO

MIN_FILES = 200
MIN_SECONDS = 0.5
REFRESH = 0.1


class Progress:
    def __init__(self, stream: TextIO, clock=time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.started = clock()
        self.last = 0.0
        self.shown = False

    def update(self, done: int, total: int) -> None:
        now = self.clock()
        if total <= MIN_FILES or now - self.started < MIN_SECONDS or now - self.last < REFRESH:
            return
        self.last = now
        self.shown = True
        self.stream.write(f"\r\x1b[2Kodelint: {done}/{total} files ({100 * done // total}%)")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False


def for_stream(stream: TextIO) -> Progress | None:
    """A progress line for `stream` when it is a terminal; None otherwise."""
    isatty = getattr(stream, "isatty", None)
    return Progress(stream) if isatty is not None and isatty() else None
