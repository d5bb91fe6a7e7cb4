import unicodedata

import pytest

from jsonl_engine.llm.usage import Usage, estimate_messages, estimate_tokens, truncate_to_tokens


def test_estimate_is_about_four_ascii_chars_per_token():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 4000) == 1000


def test_non_ascii_characters_count_a_token_each():
    assert estimate_tokens("日本語") == 3
    assert estimate_tokens("abcd日") == 2


def test_messages_estimate_is_their_text_plus_four_tokens_each():
    assert estimate_messages([]) == 0
    assert estimate_messages([{"role": "system", "content": "abcd"}, {"role": "user", "content": "abcde"}]) == 11
    parts = [{"type": "text", "text": "abcd"}, {"type": "image_url", "image_url": {"url": "x"}}, {"text": "efgh"}]
    assert estimate_messages([{"role": "user", "content": parts}]) == 2 + 4
    assert estimate_messages([{"role": "assistant", "content": None}, {"role": "user"}]) == 8


def test_truncate_keeps_short_text_and_cuts_long_text_at_a_word_boundary():
    text = "alpha beta gamma delta " * 100
    assert truncate_to_tokens("short text", 100) == "short text"
    cut = truncate_to_tokens(text, 50)
    assert estimate_tokens(cut) <= 50
    assert text.startswith(cut)
    assert cut.split(" ")[-1] in {"alpha", "beta", "gamma", "delta"}
    assert truncate_to_tokens(text, 0) == ""


@pytest.mark.parametrize("n", range(1, 40))
def test_truncate_never_separates_a_character_from_its_combining_marks(n):
    text = "e\u0301" * 60 + "\U0001f600" * 10  # é as e + combining acute, then emoji
    cut = truncate_to_tokens(text, n)
    assert text.startswith(cut)
    assert estimate_tokens(cut) <= n
    assert not cut or not unicodedata.combining(text[len(cut)] if len(cut) < len(text) else "a")


def test_usage_sums_calls():
    usage = Usage()
    usage.add(10, 5, 1)
    usage.merge(Usage(1, 2, 3))
    assert usage.to_dict() == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18, "calls": 4,
                               "estimated": False}
