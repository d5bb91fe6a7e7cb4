"""One settings object, read once at start: defaults < TOML file (`--config`) < JSONL_ENGINE_* env < CLI flags.

The sections are plain frozen objects checked against a table of fields (`field`: a conversion, a default and
the limits), not pydantic models: the daemon answers its first request without importing pydantic. The checks are
pydantic's lax ones (a TOML value or an environment string: "8" is an int, "yes" a bool), and an invalid
configuration names every field at fault (`kb.sqlite`, `readers.NAME.max_tokens`, an unknown key)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

ENV_PREFIX = "JSONL_ENGINE_"


class Invalid(ValueError):
    """A settings section was given invalid values: `fields` names them (`kb.url`, `plugins.0`, `no_such_key`)."""

    def __init__(self, fields: list[str]) -> None:
        super().__init__(f"invalid settings: {', '.join(fields)}")
        self.fields = fields


class Secret:
    """A key or a URL that may hold a password: repr, str and `model_dump_json` never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# ---- conversions: a value from TOML, the environment or code -> the field's type (TypeError/ValueError: invalid)

def _int(value: Any) -> int:
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            value = float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return int(value)  # True is 1, as pydantic's lax mode has it
    raise ValueError(value)


def _float(value: Any) -> float:
    if isinstance(value, (str, int, float)):
        return float(value)
    raise TypeError(value)


_BOOLS = {"1": True, "on": True, "t": True, "true": True, "y": True, "yes": True,
          "0": False, "off": False, "f": False, "false": False, "n": False, "no": False}


def _bool(value: Any) -> bool:
    if isinstance(value, str) and value.lower() in _BOOLS:
        return _BOOLS[value.lower()]
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    raise ValueError(value)


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(value)


def _path(value: Any) -> Path:
    if isinstance(value, (str, os.PathLike)):
        return Path(value)
    raise TypeError(value)


def _secret(value: Any) -> Secret:
    return value if isinstance(value, Secret) else Secret(_str(value))


def _optional(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else convert(value)


def _one_of(*choices: str) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        if value in choices:
            return value
        raise ValueError(value)

    return convert


def _items(convert: Callable[[Any], Any]) -> Callable[[Any], list[Any]]:
    """A list (or tuple) of values, each converted; invalid ones are named by index."""
    def check(value: Any) -> list[Any]:
        if not isinstance(value, (list, tuple)):
            raise TypeError(value)
        return list(_each(dict(enumerate(value)), convert).values())

    return check


def _by_name(convert: Callable[[Any], Any]) -> Callable[[Any], dict[str, Any]]:
    """A table of values by name, each converted; invalid ones are named by their key."""
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise TypeError(value)
        return _each(value, convert)

    return check


def _each(values: dict[Any, Any], convert: Callable[[Any], Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    bad: list[str] = []
    for key, value in values.items():
        try:
            out[key] = convert(value)
        except Invalid as exc:
            bad += [f"{key}.{name}" for name in exc.fields]
        except (TypeError, ValueError):
            bad.append(str(key))
    if bad:
        raise Invalid(bad)
    return out


class Field(NamedTuple):
    """One setting: how a given value is converted, its default (or a factory of it) and its limits."""

    convert: Callable[[Any], Any]
    default: Any = None
    factory: Callable[[], Any] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    min_length: int | None = None
    pattern: str | None = None

    def check(self, value: Any) -> Any:
        value = self.convert(value)
        if ((self.ge is not None and not value >= self.ge) or (self.gt is not None and not value > self.gt)
                or (self.le is not None and not value <= self.le)
                or (self.min_length is not None and len(value) < self.min_length)
                or (self.pattern is not None and not re.search(self.pattern, value))):
            raise ValueError(value)
        return value


def field(convert: Callable[[Any], Any], default: Any = None, **limits: Any) -> Any:
    """A settings section's field (typed Any so that the class body can annotate the attribute's type)."""
    return Field(convert, default, **limits)


class Section:
    """A settings section: its class attributes made with `field` are its fields. Built from keyword values,
    each checked (an unknown key or any invalid value raises Invalid naming them all); frozen once built."""

    model_fields: ClassVar[dict[str, Field]] = {}
    model_fields_set: frozenset[str]  # the fields given, not defaulted (a reader inherits the others)

    def __init_subclass__(cls) -> None:
        cls.model_fields = {name: f for name, f in vars(cls).items() if isinstance(f, Field)}

    def __init__(self, **values: Any) -> None:
        fields = self.model_fields
        unknown = [key for key in values if key not in fields]
        try:
            given = _each({name: (f, values[name]) for name, f in fields.items() if name in values},
                          lambda pair: pair[0].check(pair[1]))
        except Invalid as exc:
            raise Invalid(exc.fields + unknown) from None
        if unknown:
            raise Invalid(unknown)
        for name, f in fields.items():
            value = given[name] if name in given else f.factory() if f.factory is not None else f.default
            object.__setattr__(self, name, value)
        object.__setattr__(self, "model_fields_set", frozenset(given))

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """`data` (a mapping of the section's fields, or a section of this class) checked as a section."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping) or not all(isinstance(key, str) for key in data):
            raise TypeError(data)
        return cls(**data)

    def model_copy(self, *, update: Mapping[str, Any]) -> Any:
        """A copy with `update`'s fields replaced (not checked again: they come from code)."""
        copy = object.__new__(type(self))
        copy.__dict__.update({**self.__dict__, **update,
                              "model_fields_set": self.model_fields_set | frozenset(update)})
        return copy

    def model_dump(self) -> dict[str, Any]:
        """The fields as plain data (nested sections as dicts; a Secret stays one)."""
        return {name: _dump(getattr(self, name)) for name in self.model_fields}

    def model_dump_json(self) -> str:
        import json

        return json.dumps(self.model_dump(), separators=(",", ":"), default=_shown)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: use model_copy(update=...)")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.model_dump() == other.model_dump()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.model_fields)
        return f"{type(self).__name__}({shown})"


def _dump(value: Any) -> Any:
    if isinstance(value, Section):
        return value.model_dump()
    if isinstance(value, dict):
        return {key: _dump(item) for key, item in value.items()}
    return list(value) if isinstance(value, list) else value


def _shown(value: Any) -> str:
    """A Path or a Secret in `model_dump_json` (a Secret as stars)."""
    if isinstance(value, (Secret, Path)):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _section(cls: type[Section]) -> Callable[[Any], Any]:
    return cls.model_validate


class ReaderSettings(Section):
    """One OpenAI-compatible chat-completions endpoint and model (`[llm]` or `[readers.NAME]`).

    base_url and model may be missing here: a `[readers.NAME]` inherits unset fields from `[llm]`, and
    `llm.readers.resolve_reader` reports what is still missing as `llm_unavailable` (never at start-up).
    """

    base_url: str | None = field(_optional(_str))
    model: str | None = field(_optional(_str))
    api_key: Secret | None = field(_optional(_secret))
    api_key_env: str | None = field(_optional(_str))
    max_tokens: int = field(_int, 1024, ge=1)
    timeout_s: float = field(_float, 60.0, gt=0)
    max_concurrency: int = field(_int, 4, ge=1)
    max_retries: int = field(_int, 3, ge=0)
    context_tokens: int = field(_int, 8192, ge=256)
    retry_backoff_s: float = field(_float, 0.5, ge=0)  # first retry waits ~this, doubling, with jitter
    retry_max_wait_s: float = field(_float, 30.0, ge=0)  # cap on one wait, Retry-After included

    def resolved_api_key(self, env: Mapping[str, str] = os.environ) -> str | None:
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_env:
            return env.get(self.api_key_env)
        return None


class KBSettings(Section):
    """`[kb]`: a shared PostgreSQL KB (`url = "postgresql://user@host:5432/db"`); without it, `kb_dir` (SQLite)."""

    url: Secret | None = field(_optional(_secret))  # may hold a password: never shown (Secret), redacted in errors
    # A streaming replica of `url` (postgresql://): reads go there, writes to `url` (store/postgres/replica.py)
    read_url: Secret | None = field(_optional(_secret))
    # the SQLite library: APSW when installed ("auto"), or the standard library's ("stdlib"): store/sqlite/driver.py
    sqlite: str = field(_one_of("auto", "apsw", "stdlib"), "auto")


class OcrSettings(Section):
    """`[ocr]`: scanned PDF pages (no text layer, an image) read with Tesseract in the extraction workers
    (`ingest/ocr.py`); used when `command` is installed (Debian: `apt-get install tesseract-ocr`)."""

    enabled: bool = field(_bool, True)
    command: str = field(_str, "tesseract", min_length=1)  # the tesseract executable (a name on PATH or a path)
    languages: str = field(_str, "eng", min_length=1)  # tesseract's -l: installed traineddata, e.g. "eng+deu"
    timeout_s: float = field(_float, 60.0, gt=0)  # per page: tesseract is killed after this and the page stays unread
    dpi: int = field(_int, 300, ge=72, le=600)  # pages are rendered at this resolution for OCR


class Settings(Section):
    kb_dir: Path = field(_path, Path(".jsonl-engine"))
    kb: KBSettings = field(_section(KBSettings), factory=KBSettings)
    max_line_bytes: int = field(_int, 16 * 1024 * 1024, ge=1024)
    max_in_flight: int = field(_int, 4096, ge=1)
    workers: int = field(_int, factory=lambda: max(1, os.cpu_count() or 1), ge=1)
    # A pool worker whose resident memory passes this is stopped: the file it was extracting is unsupported_media
    # (too_large). A hostile PDF of 0.6 MB (a compressed content stream of 250 MB) took 3.9 GiB in one worker; a
    # 419-page 10-K parsed whole in one process peaks at 40 MB.
    worker_memory_mb: int = field(_int, 512, ge=64)
    plugins: list[str] = field(_items(_str), factory=list)
    llm: ReaderSettings | None = field(_optional(_section(ReaderSettings)))
    readers: dict[str, ReaderSettings] = field(_by_name(_section(ReaderSettings)), factory=dict)
    default_reader: str | None = field(_optional(_str))
    ocr: OcrSettings = field(_section(OcrSettings), factory=OcrSettings)
    log_level: str = field(_str, "WARNING", pattern=r"(?i)^(debug|info|warning|error|critical)$")  # stderr

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
    except Invalid as exc:
        raise ConfigError(f"invalid configuration: {', '.join(exc.fields)}") from exc
