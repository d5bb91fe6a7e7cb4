"""The daemon's garbage-collection policy (wire/collector.py): what survived a full collection is frozen once no
request is in flight, and an idle daemon collects everything, frozen cycles included."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref

import pytest

from jsonl_engine.wire.collector import Collector


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def _cycle() -> weakref.ref:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@contextlib.contextmanager
def installed(idle_s: float):
    collector = Collector(asyncio.get_running_loop(), idle_s=idle_s)
    collector.install()
    try:
        yield collector
    finally:
        collector.uninstall()


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_survivors_of_a_full_collection_are_frozen_when_the_last_request_ends(unfrozen):
    async def run() -> None:
        with installed(60) as collector:
            collector.started()
            kept = [Node() for _ in range(100)]
            gc.collect()  # a full collection, as one inside a request
            collector.finished(in_flight=1)  # another request still runs: nothing frozen yet
            assert gc.get_freeze_count() == 0 and collector.frozen == 0
            collector.finished(in_flight=0)
            assert collector.frozen == 1 and gc.get_freeze_count() >= len(kept)
            collector.finished(in_flight=0)  # no full collection since: nothing more to freeze
            assert collector.frozen == 1

    asyncio.run(run())


def test_an_idle_daemon_collects_frozen_cycles(unfrozen):
    async def run() -> None:
        with installed(0.05) as collector:
            dead = _cycle()
            gc.freeze()  # the cycle was alive at a freeze, then dropped: only a complete collection frees it
            gc.collect()
            assert dead() is not None
            collector.started()
            collector.finished(in_flight=0)
            await asyncio.sleep(0.3)
            assert collector.collections == 1 and dead() is None
            assert gc.get_freeze_count() > 0  # refrozen after it

    asyncio.run(run())


def test_a_request_arriving_cancels_the_idle_collection(unfrozen):
    async def run() -> None:
        with installed(0.1) as collector:
            collector.started()
            collector.finished(in_flight=0)
            await asyncio.sleep(0.02)
            collector.started()  # the next request: the daemon is not idle
            await asyncio.sleep(0.2)
            assert collector.collections == 0
            collector.finished(in_flight=0)
            await asyncio.sleep(0.3)
            assert collector.collections == 1
            await asyncio.sleep(0.3)  # idle on: nothing ran since, no second collection
            assert collector.collections == 1

    asyncio.run(run())
