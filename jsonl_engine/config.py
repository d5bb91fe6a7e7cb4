"""One settings object, read once at start: defaults < TOML file (`--config`) < JSONL_ENGINE_* env < CLI flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

ENV_PREFIX = "JSONL_ENGINE_"


class ReaderSettings(BaseModel):
    """One OpenAI-compatible chat-completions endpoint and model (`[llm]` or `[readers.NAME]`).

    base_url and model may be missing here: a `[readers.NAME]` inherits unset fields from `[llm]`, and
    `llm.readers.resolve_reader` reports what is still missing as `llm_unavailable` (never at start-up).
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    api_key_env: str | None = None
    max_tokens: int = Field(1024, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_concurrency: int = Field(4, ge=1)
    max_retries: int = Field(3, ge=0)
    context_tokens: int = Field(8192, ge=256)
    retry_backoff_s: float = Field(0.5, ge=0)  # first retry waits ~this, doubling, with jitter
    retry_max_wait_s: float = Field(30.0, ge=0)  # cap on one wait, Retry-After included

    def resolved_api_key(self, env: Mapping[str, str] = os.environ) -> str | None:
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_env:
            return env.get(self.api_key_env)
        return None


class KBSettings(BaseModel):
    """`[kb]`: a shared PostgreSQL KB (`url = "postgresql://user@host:5432/db"`); without it, `kb_dir` (SQLite)."""

    model_config = ConfigDict(extra="forbid")

    url: SecretStr | None = None  # may hold a password: never shown (SecretStr), redacted in errors
    # A streaming replica of `url` (postgresql://): reads go there, writes to `url` (store/postgres/replica.py)
    read_url: SecretStr | None = None
    sqlite: Literal["auto", "apsw", "sqlite3"] = "auto"  # the SQLite library: APSW when installed, or the stdlib's


class OcrSettings(BaseModel):
    """`[ocr]`: scanned PDF pages (no text layer, an image) read with Tesseract in the extraction workers
    (`ingest/ocr.py`); used when `command` is installed (Debian: `apt-get install tesseract-ocr`)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    command: str = Field("tesseract", min_length=1)  # the tesseract executable (a name on PATH or a path)
    languages: str = Field("eng", min_length=1)  # tesseract's -l: installed traineddata, e.g. "eng+deu"
    timeout_s: float = Field(60.0, gt=0)  # per page: tesseract is killed after this and the page stays unread
    dpi: int = Field(300, ge=72, le=600)  # pages are rendered at this resolution for OCR


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb_dir: Path = Path(".jsonl-engine")
    kb: KBSettings = Field(default_factory=KBSettings)
    max_line_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    max_in_flight: int = Field(4096, ge=1)
    workers: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1)
    # A pool worker whose resident memory passes this is stopped: the file it was extracting is unsupported_media
    # (too_large). A hostile PDF of 0.6 MB (a compressed content stream of 250 MB) took 3.9 GiB in one worker; a
    # 419-page 10-K parsed whole in one process peaks at 40 MB.
    worker_memory_mb: int = Field(512, ge=64)
    plugins: list[str] = Field(default_factory=list)
    llm: ReaderSettings | None = None
    readers: dict[str, ReaderSettings] = Field(default_factory=dict)
    default_reader: str | None = None
    ocr: OcrSettings = Field(default_factory=OcrSettings)
    log_level: str = Field("WARNING", pattern=r"(?i)^(debug|info|warning|error|critical)$")  # stderr

    @property
    def kb_location(self) -> Path | str:
        """Where the KB is: the PostgreSQL URL when one is set, else the SQLite directory."""
        return self.kb.url.get_secret_value() if self.kb.url is not None else self.kb_dir

    @property
    def kb_read_url(self) -> str | None:
        """The read replica's URL (`[kb] read_url`), or None: reads go to the KB itself."""
        return self.kb.read_url.get_secret_value() if self.kb.read_url is not None else None


class ConfigError(Exception):
    """The configuration file or environment is invalid; the CLI reports it and exits 2."""


def env_setting(suffix: str, env: Mapping[str, str] | None = None) -> str | None:
    """The JSONL_ENGINE_<suffix> variable ("" as None): what the CLI says of a setting's origin, or validates
    before starting a daemon. This module is the one that reads the environment."""
    return (os.environ if env is None else env).get(ENV_PREFIX + suffix) or None


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    simple = {"KB": "kb_dir", "MAX_LINE_BYTES": "max_line_bytes", "MAX_IN_FLIGHT": "max_in_flight",
              "WORKERS": "workers", "WORKER_MEMORY_MB": "worker_memory_mb", "DEFAULT_READER": "default_reader",
              "LOG_LEVEL": "log_level"}
    for suffix, key in simple.items():
        if (value := env.get(ENV_PREFIX + suffix)) not in (None, ""):
            out[key] = value
    if sqlite := env.get(ENV_PREFIX + "SQLITE", "").strip().lower():
        out["kb"] = {"sqlite": sqlite}
    if read_url := env.get(ENV_PREFIX + "KB_READ_URL", "").strip():
        out["kb"] = {**out.get("kb", {}), "read_url": read_url}
    if plugins := env.get(ENV_PREFIX + "PLUGINS"):
        out["plugins"] = [p.strip() for p in plugins.split(",") if p.strip()]
    llm: dict[str, Any] = {}
    for suffix, key in {"BASE_URL": "base_url", "MODEL": "model", "API_KEY": "api_key",
                        "TIMEOUT": "timeout_s", "MAX_CONCURRENCY": "max_concurrency",
                        "MAX_RETRIES": "max_retries", "MAX_TOKENS": "max_tokens", "API_KEY_ENV": "api_key_env",
                        "CONTEXT_TOKENS": "context_tokens", "RETRY_BACKOFF": "retry_backoff_s",
                        "RETRY_MAX_WAIT": "retry_max_wait_s"}.items():
        if (value := env.get(ENV_PREFIX + "LLM_" + suffix)) not in (None, ""):
            llm[key] = value
    if llm:
        out["llm"] = llm
    ocr = {key: value for suffix, key in {"": "enabled", "_COMMAND": "command", "_LANGUAGES": "languages",
                                          "_TIMEOUT": "timeout_s"}.items()
           if (value := env.get(ENV_PREFIX + "OCR" + suffix)) not in (None, "")}
    if ocr:
        out["ocr"] = ocr
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _is_url(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower().startswith(("postgresql://", "postgres://"))


def _place_kb(data: dict[str, Any], *, cli: Any, env: str | None, read_url_env: bool = False) -> None:
    """`--kb`, JSONL_ENGINE_KB and `kb_dir` take a directory or a URL; `[kb] url` a URL. The flag beats the
    environment, which beats the file: whichever wins says the backend (a directory given later drops a URL
    from the file, and the file's `read_url` with it; JSONL_ENGINE_KB_READ_URL with a directory is an error)."""
    given = cli if cli is not None else env
    kb = data.get("kb") if isinstance(data.get("kb"), dict) else None
    if given is not None:
        if _is_url(str(given)):
            data["kb"] = {**(kb or {}), "url": str(given).strip()}
            data.pop("kb_dir", None)
        elif kb is not None:
            kb.pop("url", None)
            if not read_url_env:
                kb.pop("read_url", None)
    elif _is_url(data.get("kb_dir")):
        data["kb"] = {**(kb or {}), "url": data.pop("kb_dir").strip()}
    kb = data.get("kb") if isinstance(data.get("kb"), dict) else {}
    if kb.get("read_url") is not None:
        if not _is_url(kb["read_url"]):
            raise ConfigError("invalid configuration: kb.read_url is not a postgresql:// URL")
        if not kb.get("url"):
            raise ConfigError("invalid configuration: kb.read_url (a read replica) needs a PostgreSQL KB: "
                              "set [kb] url, JSONL_ENGINE_KB or --kb to the primary's postgresql:// URL")


def load_settings(config_file: str | Path | None = None, *, kb_dir: str | Path | None = None,
                  log_level: str | None = None, env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    data: dict[str, Any] = {}
    config_file = config_file or env.get(ENV_PREFIX + "CONFIG") or None
    if config_file:
        import tomllib  # only with a file (start-up)

        try:
            with open(config_file, "rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc}") from exc
    data = _merge(data, _env_overrides(env))
    if kb_dir is not None:
        data["kb_dir"] = kb_dir
    if log_level is not None:
        data["log_level"] = log_level
    _place_kb(data, cli=kb_dir, env=env.get(ENV_PREFIX + "KB") or None,
              read_url_env=bool(env.get(ENV_PREFIX + "KB_READ_URL", "").strip()))
    llm = data.get("llm")
    fallback_key = env.get("OPENAI_API_KEY")
    if isinstance(llm, dict) and llm.get("api_key") is None and not llm.get("api_key_env") and fallback_key:
        llm["api_key"] = fallback_key
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        fields = [".".join(str(p) for p in err["loc"]) for err in exc.errors()]
        raise ConfigError(f"invalid configuration: {', '.join(fields)}") from exc
