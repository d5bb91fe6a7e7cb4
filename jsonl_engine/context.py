"""What a handler gets besides its params: the app, and thread-safe ways to send events and honour cancel.

Handlers pass plain callbacks (e.g. `ctx.progress`, `ctx.check_cancelled`) down to domain code, which never
sees this object's wire side.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from jsonl_engine.errors import Cancelled

if TYPE_CHECKING:
    from pydantic import BaseModel

    from jsonl_engine.config import Settings
    from jsonl_engine.registry import Method
    from jsonl_engine.store import Store

T = TypeVar("T")
WriteEvent = Callable[[str, dict[str, Any]], None]  # (kind, data): one event line of this request


class App(Protocol):
    """What handlers reach of the app (`jsonl_engine.app.App`, the composition root, a layer above): settings,
    the method table, the store, the process pool, the server's `control`, and `extras` (per-app resources)."""

    settings: Settings
    methods: dict[str, Method]
    control: Any
    extras: dict[str, Any]

    @property
    def store(self) -> Store: ...

    async def run_in_process(self, fn: Callable[..., T], *args: Any) -> T: ...


class CancelFlag:
    """Set once when the request is cancelled; read from any thread (the `is_set`/`set` of threading.Event,
    without its condition variable, which no one waits on)."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


class RequestContext:
    __slots__ = ("id", "app", "_write_event", "cancel_event", "results_sent")

    def __init__(self, request_id: Any, app: App, write_event: WriteEvent) -> None:
        self.id = request_id
        self.app = app
        self._write_event = write_event
        self.cancel_event = CancelFlag()
        self.results_sent = 0

    def progress(self, stage: str, done: int | None = None, total: int | None = None,
                 message: str | None = None) -> None:
        data: dict[str, Any] = {"stage": stage}
        if done is not None:
            data["done"] = done
        if total is not None:
            data["total"] = total
        if message is not None:
            data["message"] = message
        self._write_event("progress", data)

    def delta(self, text: str) -> None:
        if text:
            self._write_event("delta", {"text": text})

    def result(self, model: BaseModel) -> None:
        """Send one `result` now (methods that stream one result per item, such as kb.ingest)."""
        self.results_sent += 1
        self._write_event("result", model.model_dump(mode="json", by_alias=True))

    def check_cancelled(self) -> None:
        if self.cancel_event.is_set():
            raise Cancelled("request cancelled")

    async def store(self) -> Store:
        """The app's Store, opened off the event loop: the first use creates, migrates (and may wait on) the KB."""
        return await asyncio.to_thread(lambda: self.app.store)

    async def run_in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def run_in_process(self, fn: Callable[..., T], *args: Any) -> T:
        """CPU-heavy work (PDF extraction) in the app's process pool; `fn` and args must pickle."""
        return await self.app.run_in_process(fn, *args)
