"""Named readers: which endpoint and model a request uses (the gateways themselves are in gateways.py).

Light module (no httpx at import): `capabilities` lists `reader_names`; handlers call `gateways.gateway_for`
first thing so a missing LLM is `llm_unavailable` before any work is done.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonl_engine.config import ReaderSettings, Settings
from jsonl_engine.errors import InvalidParams, LLMUnavailable

LLM_NAME = "default"  # the name `[llm]` goes by among the readers
HOW_TO_CONFIGURE = ("set JSONL_ENGINE_LLM_BASE_URL and JSONL_ENGINE_LLM_MODEL (key: JSONL_ENGINE_LLM_API_KEY or "
                    "OPENAI_API_KEY), or [llm] / [readers.NAME] in the --config TOML file")


@dataclass(frozen=True, slots=True)
class Reader:
    """A resolved, validated endpoint + model. The key never appears in repr."""

    name: str
    settings: ReaderSettings
    api_key: str | None = field(default=None, repr=False, compare=False)

    @property
    def model(self) -> str:
        assert self.settings.model is not None
        return self.settings.model

    @property
    def base_url(self) -> str:
        assert self.settings.base_url is not None
        return self.settings.base_url


def configured_readers(settings: Settings) -> dict[str, ReaderSettings]:
    """Every reader by name: `[llm]` as "default" (unless a reader takes that name), then `[readers.*]`,
    each with unset fields inherited from `[llm]` (its key only when the endpoint is the same)."""
    out: dict[str, ReaderSettings] = {}
    base = settings.llm
    if base is not None and LLM_NAME not in settings.readers:
        out[LLM_NAME] = base
    for name, reader in settings.readers.items():
        out[name] = _inherit(reader, base) if base is not None else reader
    return out


def _inherit(reader: ReaderSettings, base: ReaderSettings) -> ReaderSettings:
    own = reader.model_fields_set
    merged: dict[str, Any] = {k: getattr(base, k) for k in ReaderSettings.model_fields if k not in own}
    merged.update({k: getattr(reader, k) for k in own})
    if own & {"api_key", "api_key_env"}:
        merged["api_key"], merged["api_key_env"] = reader.api_key, reader.api_key_env
    elif "base_url" in own and reader.base_url != base.base_url:
        merged["api_key"] = merged["api_key_env"] = None  # never send [llm]'s key to another host
    return ReaderSettings.model_validate(merged)


def reader_names(settings: Settings) -> list[str]:
    return sorted(configured_readers(settings))


def resolve_reader(settings: Settings, name: str | None = None,
                   env: Mapping[str, str] | None = None) -> Reader:
    """The named reader (unknown -> invalid_params), else the default, else the only one configured,
    else llm_unavailable; then its endpoint, model and key are checked."""
    readers = configured_readers(settings)
    if not readers:
        raise LLMUnavailable(f"no LLM is configured: {HOW_TO_CONFIGURE}")
    if name is not None:
        if name not in readers:
            raise InvalidParams(f"unknown reader {name!r}; configured: {', '.join(sorted(readers))}",
                                fields=["reader"])
        chosen = name
    elif settings.default_reader is not None:
        if settings.default_reader not in readers:
            raise LLMUnavailable(f"default_reader {settings.default_reader!r} is not a configured reader "
                                 f"({', '.join(sorted(readers))})")
        chosen = settings.default_reader
    elif LLM_NAME in readers:
        chosen = LLM_NAME
    elif len(readers) == 1:
        chosen = next(iter(readers))
    else:
        raise LLMUnavailable(f"several readers are configured ({', '.join(sorted(readers))}) and none is "
                             "the default: pass `reader` or set default_reader")
    return _validated(chosen, readers[chosen], os.environ if env is None else env)


def _validated(name: str, reader: ReaderSettings, env: Mapping[str, str]) -> Reader:
    where = "[llm]" if name == LLM_NAME else f"[readers.{name}]"
    base_url = (reader.base_url or "").strip().rstrip("/")
    if not base_url:
        raise LLMUnavailable(f"reader {name!r} has no base_url: set base_url in {where} or "
                             "JSONL_ENGINE_LLM_BASE_URL")
    if not base_url.startswith(("http://", "https://")):
        raise LLMUnavailable(f"reader {name!r}: base_url must start with http:// or https://")
    model = (reader.model or "").strip()
    if not model or any(ch.isspace() or ord(ch) < 0x20 for ch in model):
        raise LLMUnavailable(f"reader {name!r} has no valid model name: set model in {where} or "
                             "JSONL_ENGINE_LLM_MODEL")
    if reader.api_key is None and reader.api_key_env and not env.get(reader.api_key_env):
        raise LLMUnavailable(f"reader {name!r}: environment variable {reader.api_key_env} "
                             "(api_key_env) is not set")
    settings = reader.model_copy(update={"base_url": base_url, "model": model})
    return Reader(name=name, settings=settings, api_key=reader.resolved_api_key(env) or None)
