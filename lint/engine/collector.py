"""Fewer runs of Python's cyclic garbage collector while linting.

Parsing creates millions of objects; with the default thresholds the collector runs thousands
of times per file and re-scans everything still alive (measured: 15% of a cold run, and the
language server's slowest re-lints). What is alive once a face has started lives as long as
the process, so it is frozen out of the scans (forked workers inherit that), and young
objects are collected less often.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:  # a warm `check` must not import asyncio (it pulls in concurrent.futures)
    import asyncio

YOUNG_COLLECTION = 100_000  # allocations between collections of the youngest generation


def fewer_collections() -> None:
    """Once per process (`--watch` and the server lint again and again)."""
    if gc.get_threshold()[0] < YOUNG_COLLECTION:
        gc.freeze()
        gc.set_threshold(YOUNG_COLLECTION, 50, 100)


IDLE_SECONDS = 1.0  # no lint for this long: collect
PILED_UP = 2_000_000  # young objects: collect at once, idle or not


def collect_if_piled_up(limit: int = PILED_UP) -> None:
    """After a lint has been answered: a full collection only when garbage has piled up."""
    if gc.get_count()[0] > limit:
        gc.collect()


class IdleCollector:
    """For the language server (and its helper process, odelint.faces.server_helper, which
    keeps the same policy with its own idle wait): no automatic collections, whose pauses land
    on a re-lint's latency (measured through the server: p95 57 ms with them, 33 ms without),
    but one full collection once the server has been idle for a while, or at once if garbage
    piles up while someone types without a pause."""

    def __init__(self, loop: asyncio.AbstractEventLoop, idle: float = IDLE_SECONDS, limit: int = PILED_UP) -> None:
        self.loop = loop
        self.idle = idle
        self.limit = limit
        self.handle: asyncio.TimerHandle | None = None
        gc.disable()

    def linted(self) -> None:
        """Call after each lint has been answered."""
        if self.handle is not None:
            self.handle.cancel()
        collect_if_piled_up(self.limit)
        self.handle = self.loop.call_later(self.idle, gc.collect)


# A file's model is full of cycles (scopes and their bindings, the model and its analyses),
# and every node of its trees hangs from it. A run's files and flake8's are linted once, and
# their models released when done (odelint.engine.once), so refcounting frees the trees; what
# else dies in cycles (flake8's own checkers leave most of it), and other files' models dropped
# from the project's cache, wait for a full collection between files. Each one costs a pass
# over what it frees and what survives, and a worker process ends without freeing anything
# (its memory goes back whole): so they are spaced by the memory they bound, one after every
# MiB of source (a few tens of MiB of garbage), and one before a large file, whose own peak
# should stand on neither earlier files' garbage nor the other files' facts kept for them
# (the library corpus's largest file alone needs 204 MiB). Through flake8's workers over the
# users' corpus, a collection every 256 KiB made the plugin's share of the run 4-6 points
# larger. Young collections stay as frequent: every 300,000 or 1,000,000 objects instead let
# garbage pile up inside a large file, past 250 MiB over the library corpus.
COLLECT_EVERY_BYTES = 1024 * 1024
LARGE_FILE_BYTES = 128 * 1024


class Sweeper:
    """Full collections between files, made cheap: the modules and tables that linting
    imports on first use are frozen once loaded (scanned in every full collection otherwise:
    +7 s over the library corpus), so a collection visits little but the garbage."""

    def __init__(self, every: int = COLLECT_EVERY_BYTES, large: int = LARGE_FILE_BYTES) -> None:
        self.every = every
        self.large = large
        self.since = 0
        self.modules = 0

    def before(self, size: int, forget: Callable[[], None]) -> None:
        """Before a file of `size` bytes: a large one is linted on a clean heap, without the
        garbage of earlier files or the other files' facts kept for them (`forget`)."""
        if size >= self.large:
            forget()
            gc.collect()
            self.since = 0

    def linted(self, size: int, forget: Callable[[], None]) -> None:
        """After a file of `size` bytes. `forget` drops what the process keeps from file to
        file (other files' facts), so that a freeze keeps only the program alive for good."""
        if len(sys.modules) != self.modules:
            self.modules = len(sys.modules)
            forget()
            gc.collect()
            gc.freeze()
            self.since = 0
            return
        self.since += size
        if self.since >= self.every:
            self.since = 0
            gc.collect()


sweeper = Sweeper()
