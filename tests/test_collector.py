"""When Python's cyclic collector runs (odelint.engine.collector): never in the middle of the
language server's re-lints, but soon after, and at once when garbage piles up."""

from __future__ import annotations

import asyncio
import gc

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
