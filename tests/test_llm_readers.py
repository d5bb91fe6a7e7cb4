import asyncio

import pytest

from jsonl_engine.app import App
from jsonl_engine.config import ReaderSettings, Settings, load_settings
from jsonl_engine.errors import InvalidParams, LLMUnavailable
from jsonl_engine.llm.gateways import gateway_for
from jsonl_engine.llm.readers import reader_names, resolve_reader

KEY = "sk-secret-abcdef123456"


def settings(**kw) -> Settings:
    return Settings.model_validate(kw)


def test_no_llm_configured_is_llm_unavailable_and_says_how_to_configure():
    with pytest.raises(LLMUnavailable) as info:
        resolve_reader(Settings())
    assert "JSONL_ENGINE_LLM_BASE_URL" in info.value.message
    with pytest.raises(LLMUnavailable):
        resolve_reader(Settings(), "careful")  # nothing configured at all: not an unknown-name problem
    assert reader_names(Settings()) == []


def test_resolution_order_named_then_default_then_only_one():
    one = {"base_url": "http://a/v1", "model": "m1"}
    two = {"base_url": "http://b/v1", "model": "m2"}
    s = settings(readers={"fast": one, "careful": two})
    assert resolve_reader(s, "careful").model == "m2"
    with pytest.raises(InvalidParams) as info:
        resolve_reader(s, "nope")
    assert info.value.data["field"] == "reader"
    with pytest.raises(LLMUnavailable, match="several readers"):
        resolve_reader(s)
    assert resolve_reader(settings(readers={"fast": one, "careful": two}, default_reader="fast")).name == "fast"
    assert resolve_reader(settings(readers={"fast": one})).name == "fast"
    with_llm = settings(llm=one, readers={"careful": two})
    assert resolve_reader(with_llm).name == "default"
    assert reader_names(with_llm) == ["careful", "default"]
    with pytest.raises(LLMUnavailable, match="default_reader"):
        resolve_reader(settings(readers={"fast": one}, default_reader="gone"))


def test_readers_inherit_from_llm_but_never_its_key_for_another_host():
    s = settings(llm={"base_url": "http://a/v1", "model": "big", "api_key": KEY, "timeout_s": 7},
                 readers={"small": {"model": "tiny"}, "other": {"base_url": "http://b/v1"},
                          "own": {"base_url": "http://c/v1", "api_key_env": "OWN_KEY"}})
    small = resolve_reader(s, "small")
    assert (small.base_url, small.model, small.settings.timeout_s, small.api_key) == ("http://a/v1", "tiny", 7, KEY)
    other = resolve_reader(s, "other")
    assert (other.base_url, other.model, other.api_key) == ("http://b/v1", "big", None)
    assert resolve_reader(s, "own", env={"OWN_KEY": "k2"}).api_key == "k2"
    with pytest.raises(LLMUnavailable, match="OWN_KEY"):
        resolve_reader(s, "own", env={})


@pytest.mark.parametrize("reader, problem", [
    ({"model": "m"}, "base_url"),
    ({"base_url": "http://a/v1"}, "model"),
    ({"base_url": "http://a/v1", "model": "two words"}, "model"),
    ({"base_url": "ftp://a", "model": "m"}, "http"),
])
def test_model_and_endpoint_are_validated_before_any_call(reader, problem):
    with pytest.raises(LLMUnavailable, match=problem):
        resolve_reader(settings(llm=reader))


def test_env_and_toml_configuration(tmp_path):
    env = {"JSONL_ENGINE_LLM_BASE_URL": "http://h/v1/", "JSONL_ENGINE_LLM_MODEL": "m",
           "JSONL_ENGINE_LLM_TIMEOUT": "3.5", "JSONL_ENGINE_LLM_MAX_CONCURRENCY": "2",
           "JSONL_ENGINE_LLM_RETRY_BACKOFF": "0.1", "OPENAI_API_KEY": KEY}
    reader = resolve_reader(load_settings(env=env), env=env)
    assert (reader.base_url, reader.model, reader.api_key) == ("http://h/v1", "m", KEY)
    assert (reader.settings.timeout_s, reader.settings.max_concurrency, reader.settings.retry_backoff_s) == (3.5, 2, 0.1)
    env["JSONL_ENGINE_LLM_API_KEY"] = "sk-own"
    assert resolve_reader(load_settings(env=env), env=env).api_key == "sk-own"

    config = tmp_path / "engine.toml"
    config.write_text('default_reader = "careful"\n[llm]\nbase_url = "http://h/v1"\nmodel = "small"\n'
                      '[readers.careful]\nmodel = "large"\nmax_tokens = 300\n', encoding="utf-8")
    s = load_settings(config, env={"OPENAI_API_KEY": KEY})
    assert reader_names(s) == ["careful", "default"]
    careful = resolve_reader(s, env={})
    assert (careful.name, careful.model, careful.settings.max_tokens, careful.api_key) == ("careful", "large", 300, KEY)


def test_the_key_never_shows_in_reprs_or_names():
    s = settings(llm={"base_url": "http://a/v1", "model": "m", "api_key": KEY})
    reader = resolve_reader(s)
    assert reader.api_key == KEY
    for text in (repr(reader), repr(reader.settings), str(s.model_dump()), repr(s), " ".join(reader_names(s))):
        assert KEY not in text
    assert isinstance(reader.settings, ReaderSettings)


def test_gateway_registry_in_app_extras_is_lazy_cached_and_closed():
    app = App(Settings())
    with pytest.raises(LLMUnavailable):
        gateway_for(app)
    app = App(settings(llm={"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": KEY}))
    gw = gateway_for(app)
    assert gateway_for(app, "default") is gw
    assert KEY not in repr(gw)
    with pytest.raises(InvalidParams):
        gateway_for(app, "other")
    asyncio.run(app.aclose())  # what the server awaits at shutdown
    assert "llm" not in app.extras
