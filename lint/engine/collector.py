"""Fewer runs of Python's cyclic garbage collector while linting.

Parsing creates millions of objects; with the default thresholds the collector runs thousands
of times per file and re-scans everything still alive (measured: 15% of a cold run, and the
language server's slowest re-lints). What is alive once a face has started lives as long as
the process, so it is frozen out of the scans (forked workers inherit that), and young
objects are collected less often.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a warm `check` must not import asyncio (it pulls in concurrent.futures)
    import asyncio

YOUNG_COLLECTION = 100_000  # allocations between collections of the youngest generation


def fewer_collections() -> None:
    """Once per process (`--watch` and the server lint again and again)."""
    if gc.get_threshold()[0] < YOUNG_COLLECTION:
        gc.freeze()
        gc.set_threshold(YOUNG_COLLECTION, 50, 100)


class IdleCollector:
    """For the language server: no automatic collections, whose pauses land on a re-lint's
    latency (measured through the server: p95 57 ms with them, 33 ms without), but one full
    collection once the server has been idle for a while, or at once if garbage piles up
    while someone types without a pause."""

    def __init__(self, loop: asyncio.AbstractEventLoop, idle: float = 1.0, limit: int = 2_000_000) -> None:
        self.loop = loop
        self.idle = idle
        self.limit = limit
        self.handle: asyncio.TimerHandle | None = None
        gc.disable()

    def linted(self) -> None:
        """Call after each lint has been answered."""
        if self.handle is not None:
            self.handle.cancel()
        if gc.get_count()[0] > self.limit:
            gc.collect()
        self.handle = self.loop.call_later(self.idle, gc.collect)
