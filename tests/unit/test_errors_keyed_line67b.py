"""What the keyed-line rule of secrets67 did wrong (helper qa67b, 2026-12-07). A line's value was extended a character
at a time, each time reading the rest of a run of '.,;)' for the line's end: a line 'token: a' and 20,000 ')' then a
letter took 13 s to redact here, 40,000 took 51 s in Python and 90 s in serve.sh's perl filter (quadratic), where the
engine writing it waits. And a quoted header inside a JSON string (a recorded command's -H "X-Api-Key: K", escaped
\\"...\\") lost the backslash before its closing quote: the redacted JSON no longer parsed."""

from __future__ import annotations

import json
import time

from onechip.errors import redact


def test_a_long_run_of_trailing_punctuation_is_read_once() -> None:
    line = "token: a" + ")" * 20_000 + "x"
    started = time.perf_counter()
    shown = redact(line)
    assert time.perf_counter() - started < 2.0  # 13 s before, 2 ms after (here, under load)
    assert shown == "token: ***"


def test_trailing_punctuation_is_still_the_text_s() -> None:
    assert redact("token: abc.def.") == "token: ***."
    assert redact("api_key: k3y), # mine") == "api_key: ***), # mine"
    assert redact("token: )") == "token: )"  # punctuation alone is no value


def test_a_header_in_a_json_string_keeps_its_escapes() -> None:
    recorded = json.dumps({"cmd": 'curl -H "X-Api-Key: abcdef123" http://h', "w": "token: x\\", "y": "api_key: a\\b"})
    shown = redact(recorded)
    assert json.loads(shown) == {"cmd": 'curl -H "X-Api-Key: ***" http://h', "w": "token: ***", "y": "api_key: ***"}
