"""The per-app registry of gateways: one Gateway (one httpx client) per named reader, created on first use.
Handlers call `gateway_for` (it raises llm_unavailable or invalid_params before any work)."""

from __future__ import annotations

import threading
from typing import Any, Protocol

from jsonl_engine.config import Settings
from jsonl_engine.llm.gateway import Gateway
from jsonl_engine.llm.readers import resolve_reader

EXTRAS_KEY = "llm"


class Gateways:
    """`app.extras["llm"]`: one Gateway per reader, created on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._gateways: dict[str, Gateway] = {}
        self._lock = threading.Lock()

    def get(self, name: str | None = None) -> Gateway:
        reader = resolve_reader(self.settings, name)
        with self._lock:
            gateway = self._gateways.get(reader.name)
            if gateway is None:
                gateway = self._gateways[reader.name] = Gateway(reader)
        return gateway

    async def aclose(self) -> None:
        with self._lock:
            gateways, self._gateways = list(self._gateways.values()), {}
        for gateway in gateways:
            await gateway.aclose()


class AppResources(Protocol):
    """What `gateway_for` needs of the app (`jsonl_engine.app.App`, a layer above): its settings, and the
    `extras` where the registry of gateways is kept."""

    settings: Settings
    extras: dict[str, Any]


def gateway_for(app: AppResources, name: str | None = None) -> Gateway:
    """The gateway a request uses (`reader` param -> name); raises before any work is done."""
    registry = app.extras.get(EXTRAS_KEY)
    if registry is None:
        registry = app.extras.setdefault(EXTRAS_KEY, Gateways(app.settings))
    return registry.get(name)
