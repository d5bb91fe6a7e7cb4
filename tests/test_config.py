"""Settings precedence: defaults < TOML file < JSONL_ENGINE_* env < CLI flags; bad config exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jsonl_engine.config import ConfigError, load_settings
from tests.support.daemon import ROOT


def test_defaults_need_no_file() -> None:
    settings = load_settings(env={})
    assert settings.kb_dir == Path(".jsonl-engine")
    assert settings.llm is None and settings.readers == {}


def test_file_then_env_then_flag(tmp_path: Path) -> None:
    config = tmp_path / "engine.toml"
    config.write_text('kb_dir = "from-file"\nmax_in_flight = 7\n[llm]\nbase_url = "http://127.0.0.1:9/v1"\n'
                      'model = "file-model"\n')
    settings = load_settings(config, env={"JSONL_ENGINE_LLM_MODEL": "env-model"})
    assert settings.kb_dir == Path("from-file") and settings.max_in_flight == 7
    assert settings.llm.model == "env-model" and settings.llm.base_url == "http://127.0.0.1:9/v1"
    settings = load_settings(config, kb_dir="from-flag", env={"JSONL_ENGINE_KB": "from-env"})
    assert settings.kb_dir == Path("from-flag")
    assert load_settings(config, env={"JSONL_ENGINE_KB": "from-env"}).kb_dir == Path("from-env")


def test_openai_api_key_is_the_fallback_and_never_shown(tmp_path: Path) -> None:
    settings = load_settings(env={"JSONL_ENGINE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
                                  "JSONL_ENGINE_LLM_MODEL": "m", "OPENAI_API_KEY": "sk-secret"})
    assert settings.llm.resolved_api_key() == "sk-secret"
    assert "sk-secret" not in repr(settings) and "sk-secret" not in settings.model_dump_json()


@pytest.mark.parametrize("text", ["max_in_flight = 0\n", "no_such_setting = 1\n", "not toml ==="])
def test_invalid_config_is_reported(tmp_path: Path, text: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(ConfigError):
        load_settings(config, env={})


def test_daemon_refuses_to_start_on_a_bad_config(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("max_in_flight = -3\n")
    proc = subprocess.run([sys.executable, "-m", "jsonl_engine", "--config", str(config)],
                          input=b"", capture_output=True, cwd=ROOT, timeout=30)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"max_in_flight" in proc.stderr


def test_log_level_and_sqlite_library_are_settings(tmp_path: Path) -> None:
    """JSONL_ENGINE_LOG_LEVEL and JSONL_ENGINE_SQLITE reach the code through Settings (file < env < flag)."""
    config = tmp_path / "engine.toml"
    config.write_text('log_level = "error"\n[kb]\nsqlite = "stdlib"\n')
    assert load_settings(env={}).log_level == "WARNING" and load_settings(env={}).kb.sqlite == "auto"
    settings = load_settings(config, env={})
    assert (settings.log_level, settings.kb.sqlite) == ("error", "stdlib")
    settings = load_settings(config, env={"JSONL_ENGINE_LOG_LEVEL": "info", "JSONL_ENGINE_SQLITE": "auto"})
    assert (settings.log_level, settings.kb.sqlite) == ("info", "auto")
    assert load_settings(config, log_level="debug", env={"JSONL_ENGINE_LOG_LEVEL": "info"}).log_level == "debug"
    for env in ({"JSONL_ENGINE_LOG_LEVEL": "loud"}, {"JSONL_ENGINE_SQLITE": "mysql"}):
        with pytest.raises(ConfigError):
            load_settings(env=env)


def test_every_invalid_setting_is_named(tmp_path: Path) -> None:
    """Fields in the order Settings declares them (a section's by their path, a list item by its index), then the
    unknown keys."""
    config = tmp_path / "bad.toml"
    config.write_text('max_in_flight = 0\nbogus = 1\nplugins = ["a", 3]\n[readers.careful]\nmax_tokens = 0\n'
                      'colour = "red"\n[kb]\nsqlite = "mysql"\n[ocr]\ndpi = 601\ncommand = ""\n')
    with pytest.raises(ConfigError) as err:
        load_settings(config, env={})
    assert str(err.value) == ("invalid configuration: kb.sqlite, max_in_flight, plugins.1, "
                              "readers.careful.max_tokens, readers.careful.colour, ocr.command, ocr.dpi, bogus")


def test_environment_strings_are_converted_and_checked() -> None:
    settings = load_settings(env={"JSONL_ENGINE_WORKERS": " 3 ", "JSONL_ENGINE_OCR": "no",
                                  "JSONL_ENGINE_LLM_TIMEOUT": "2.5", "JSONL_ENGINE_LLM_MAX_TOKENS": "512.0"})
    assert (settings.workers, settings.ocr.enabled, settings.llm.timeout_s, settings.llm.max_tokens) == (3, False,
                                                                                                        2.5, 512)
    for name, value in (("OCR", "maybe"), ("LLM_MAX_TOKENS", "1.5"), ("LLM_TIMEOUT", "nan"), ("WORKERS", "0")):
        with pytest.raises(ConfigError, match=r"invalid configuration: \w+"):
            load_settings(env={f"JSONL_ENGINE_{name}": value})
