"""The threads lexical retrieval and its side reads run on (retrieval/workers.py): one-at-a-time calls stay on one
thread (each thread reads the KB through a page cache of its own), a thread is added only for a call that would
wait behind busy ones, never more than the size; failures, cancellations and context variables behave as in
asyncio.to_thread."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from jsonl_engine.retrieval.workers import Workers


def _work() -> str:
    total = 0
    for i in range(20_000):  # long enough for the caller to wait on the result, as a store read does
        total += i
    return threading.current_thread().name


async def _one_at_a_time(pool, calls: int = 300) -> set[str]:
    loop = asyncio.get_running_loop()
    return {await loop.run_in_executor(pool, _work) for _ in range(calls)}


def test_questions_asked_one_at_a_time_stay_on_one_thread() -> None:
    """ThreadPoolExecutor counts a thread free only after it handed its result over, so the next call, submitted
    at once, often finds none free and starts another (3-4 threads for these 300 calls, measured)."""
    pool = Workers(6, "test-retrieval")
    assert asyncio.run(_one_at_a_time(pool)) == {"test-retrieval-1"} and pool.threads == 1


def test_a_thread_is_added_only_for_a_call_that_would_wait_and_never_beyond_the_size() -> None:
    pool = Workers(2, "test-side")
    both, release = threading.Barrier(2, timeout=10), threading.Event()

    def held() -> str:
        both.wait()  # passes only when two calls run at the same time
        release.wait(10)
        return threading.current_thread().name

    futures = [pool.submit(held) for _ in range(2)]
    third = pool.submit(_work)  # both threads busy and the size reached: it waits for one
    release.set()
    assert {f.result(timeout=10) for f in futures} == {"test-side-1", "test-side-2"}
    assert third.result(timeout=10) in {"test-side-1", "test-side-2"} and pool.threads == 2


def test_failures_cancellations_and_context_reach_as_with_to_thread() -> None:
    pool = Workers(1, "test-one")

    def fail() -> None:
        raise ValueError("a read failed")

    with pytest.raises(ValueError, match="a read failed"):
        pool.submit(fail).result(timeout=10)
    assert pool.submit(lambda x, y=0: x + y, 2, y=5).result(timeout=10) == 7

    gate, ran = threading.Event(), []
    busy = pool.submit(gate.wait, 10)
    queued = pool.submit(ran.append, "ran")
    assert queued.cancel()  # still queued behind the busy call: never runs
    gate.set()
    assert busy.result(timeout=10) and pool.submit(lambda: None).result(timeout=10) is None and ran == []

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("the caller's")
    assert pool.submit(var.get).result(timeout=10) == "the caller's"

    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(_work)
