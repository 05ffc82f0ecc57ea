"""onechip.jsontext: JSON nested past the parser's recursion limit is a JSON error, not a RecursionError."""

from __future__ import annotations

import json
import sys

import pytest

from onechip import jsontext

DEEP = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError on it (CPython's C scanner)


@pytest.mark.parametrize("text", [DEEP, DEEP.encode(), '{"a":' * 50_000 + "1" + "}" * 50_000])
def test_nesting_too_deep_is_a_json_error_that_names_it(text):
    with pytest.raises(RecursionError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as info:
        jsontext.loads(text)
    assert str(info.value) == jsontext.TOO_DEEP


def test_json_reads_as_the_standard_parser_reads_it():
    text = '{"a": [1, 2.5, null, NaN], "b": 100000000000000000000000000000}'  # NaN and big ints as json reads them
    assert repr(jsontext.loads(text)) == repr(json.loads(text))
    with pytest.raises(json.JSONDecodeError, match="Expecting value"):
        jsontext.loads('{"a":')


def test_a_key_given_twice_is_refused_only_when_asked():
    text = '{"a": {"b": 1, "b": 2}}'
    assert jsontext.loads(text) == {"a": {"b": 2}}  # json.loads' own reading
    with pytest.raises(json.JSONDecodeError, match="key 'b' given twice"):
        jsontext.loads(text, unique_keys=True)


def test_an_integer_longer_than_python_converts_is_a_json_error_without_a_position():
    # json.loads raises a plain ValueError past sys.get_int_max_str_digits() (4,300 digits by default): an internal
    # error to every caller that catches JSONDecodeError (plan of such a config.json, exit 1 before)
    text = '{"a": ' + "9" * (sys.get_int_max_str_digits() + 1) + "}"
    with pytest.raises(ValueError, match="Exceeds the limit") as raw:
        json.loads(text)
    assert not isinstance(raw.value, json.JSONDecodeError)
    with pytest.raises(jsontext.NoPosition) as info:
        jsontext.loads(text)
    assert str(info.value) == str(raw.value).split(";")[0]
