"""When Python's cyclic collector runs (odelint.engine.collector): never in the middle of the
language server's re-lints, but soon after, and at once when garbage piles up; between the
files of a run, once enough source was linted, and before a large file."""

from __future__ import annotations

import asyncio
import gc
import sys
import types
import weakref

import pytest
from odelint.engine import collector


@pytest.fixture
def restored_gc():
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.set_threshold(*threshold)
    gc.enable() if enabled else gc.disable()
    gc.unfreeze()


def test_fewer_collections_raises_the_threshold_once(restored_gc) -> None:
    gc.set_threshold(700, 10, 10)
    collector.fewer_collections()
    assert gc.get_threshold()[0] == collector.YOUNG_COLLECTION
    frozen = gc.get_freeze_count()
    collector.fewer_collections()  # a second run (`--watch`) freezes nothing more
    assert gc.get_freeze_count() == frozen


def test_the_idle_collector_collects_after_a_quiet_spell(restored_gc) -> None:
    async def scenario() -> int:
        idle = collector.IdleCollector(asyncio.get_running_loop(), idle=0.05)
        assert not gc.isenabled()
        for _ in range(3):
            cycle: list = []
            cycle.append(cycle)  # garbage only the cyclic collector frees
            del cycle
            idle.linted()  # each lint pushes the collection back
        await asyncio.sleep(0.2)
        return gc.get_count()[0]

    assert asyncio.run(scenario()) < 50  # the scheduled full collection ran


def test_the_idle_collector_collects_at_once_past_its_limit(restored_gc) -> None:
    async def scenario() -> int:
        idle = collector.IdleCollector(asyncio.get_running_loop(), idle=60, limit=0)
        junk = [[] for _ in range(1000)]
        del junk
        idle.linted()
        count = gc.get_count()[0]
        idle.handle.cancel()
        return count

    assert asyncio.run(scenario()) < 50


def _cyclic_garbage() -> weakref.ref:
    """An object only the cyclic collector can free (as a file's scopes and bindings)."""
    class Node:
        pass

    node = Node()
    node.self = node  # type: ignore[attr-defined]
    return weakref.ref(node)


def test_the_sweeper_collects_once_enough_source_was_linted(restored_gc) -> None:
    gc.disable()  # only the sweeper collects here
    sweeper = collector.Sweeper(every=1000)
    sweeper.linted(10, forget=lambda: None)  # the first file: what it imported is frozen
    garbage = _cyclic_garbage()
    sweeper.linted(600, forget=lambda: None)
    assert garbage() is not None  # 600 bytes since: not yet
    sweeper.linted(600, forget=lambda: None)
    assert garbage() is None


def test_the_sweeper_freezes_newly_imported_modules_and_forgets_kept_facts_first(restored_gc) -> None:
    gc.disable()
    forgotten: list[int] = []
    sweeper = collector.Sweeper(every=10**9)
    sweeper.linted(10, forget=lambda: forgotten.append(1))
    assert forgotten == [1] and gc.get_freeze_count() > 0
    garbage = _cyclic_garbage()
    sweeper.linted(10, forget=lambda: forgotten.append(2))
    assert forgotten == [1] and garbage() is not None  # no module was imported: nothing to do
    sys.modules["odelint_test_imported_late"] = types.ModuleType("odelint_test_imported_late")
    try:
        sweeper.linted(10, forget=lambda: forgotten.append(3))
    finally:
        del sys.modules["odelint_test_imported_late"]
    assert forgotten == [1, 3] and garbage() is None  # collected before the freeze, not frozen


def test_a_large_file_is_linted_on_a_clean_heap(restored_gc) -> None:
    """Before a large file the kept facts of other files are dropped and the garbage freed;
    before a small one nothing happens (the next collection waits for its MiB of source)."""
    gc.disable()
    forgotten: list[int] = []
    sweeper = collector.Sweeper(every=10**9, large=1000)
    sweeper.linted(10, forget=lambda: None)  # the first file: what it imported is frozen
    garbage = _cyclic_garbage()
    sweeper.before(999, forget=lambda: forgotten.append(1))
    assert garbage() is not None and forgotten == []
    sweeper.before(1000, forget=lambda: forgotten.append(2))
    assert garbage() is None and forgotten == [2]
