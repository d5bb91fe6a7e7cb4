import pytest

from jsonl_engine.llm.jsonparse import JSONParseError, parse_json_object


@pytest.mark.parametrize("text, expected", [
    ('{"found": true, "quote": "x"}', {"found": True, "quote": "x"}),
    ('```json\n{"found": true, "quote": "x"}\n```', {"found": True, "quote": "x"}),
    ('```\n{"a": 1}\n```\nHope this helps!', {"a": 1}),
    ('Sure! Here is the JSON:\n{"a": {"b": [1, 2]}}\nLet me know.', {"a": {"b": [1, 2]}}),
    ('{"a": [1, 2,], "b": 3,}', {"a": [1, 2], "b": 3}),
    ('{"quote": "line one\nline two"}', {"quote": "line one\nline two"}),
    ("{'found' : True}".replace("'", '"'), {"found": True}),
    ('{"found": True, "quote": None}', {"found": True, "quote": None}),
    ('{"quote": "braces } and { in a string", "n": 1}', {"quote": "braces } and { in a string", "n": 1}),
    ('{"quote": "an escaped \\" quote"}', {"quote": 'an escaped " quote'}),
    ('\ufeff  {"a": 1}  ', {"a": 1}),
    ('not this {broken: } but {"a": 2}', {"a": 2}),
    ('{"found": true, "quote": "Net sales were $5', {"found": True, "quote": "Net sales were $5"}),
])
def test_recovers_objects_models_really_send(text, expected):
    assert parse_json_object(text) == expected


def test_a_string_containing_true_is_left_alone():
    assert parse_json_object('{"quote": "True story, None of it",}') == {"quote": "True story, None of it"}


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2, 3]", '"just a string"', "{{{", "null"])
def test_nothing_to_parse_raises_a_value_error(text):
    with pytest.raises(JSONParseError) as info:
        parse_json_object(text)
    assert isinstance(info.value, ValueError)
