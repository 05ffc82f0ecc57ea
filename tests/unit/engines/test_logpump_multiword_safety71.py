"""A secret of several words, or one its key names, across the marks where the log writer cuts a long line without an
end (helper safety71, 2026-12-07): _Copier._cut held back the run of characters the cut fell in and a bearer header's
words, so '--api-key X', "'api_key': 'X'", '"token": "X"', a known value with a space, and 'NAME=value' in a run of
more than SECRET_SPAN_CHARS characters were written in two parts, each redacted alone: the value's part after the cut
(or all of it, where the cut fell between the key and the value) reached engine.log."""

from __future__ import annotations

import pytest
from test_logpump_wraps_safety70 import _copied

from onechip import errors, logpump
from wrapped_secrets import MULTI_WORD, OPAQUE, SPACED_ENV

# what goes on after the secret on its line: long enough that the line passes LINE_MAX where its mark is SECRET_SPAN
# before it, so that the writer cuts it there (without it, such a line came whole, cut nowhere)
GOES_ON = " " + "y" * (logpump.SECRET_SPAN + 100)


def _pieces(data: bytes) -> list[bytes]:
    return [data[read : read + 4096] for read in range(0, len(data), 4096)]


def _leaked(logged: bytes, secret: str) -> bool:
    return any(secret[i : i + 8].encode() in logged for i in range(len(secret) - 7))


@pytest.mark.parametrize("case", MULTI_WORD)
@pytest.mark.parametrize("mark", [logpump.LINE_MAX, logpump.LINE_MAX - logpump.SECRET_SPAN])
def test_a_keyed_secret_across_a_long_lines_marks_reaches_no_log(
    case: str, mark: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SPACED_ENV.items():
        monkeypatch.setenv(name, value)
    before, secret, after = MULTI_WORD[case]
    line = before + secret + after + GOES_ON
    leaked = []
    for at in range(len(before) + len(secret) + 1):
        start = "x" * (mark - at - 1) + " "
        logged = _copied(_pieces(f"{start}{line}\nINFO next\n".encode()))
        if _leaked(logged, secret) or logged.decode() != f"{start}{errors.redact(line)}\nINFO next\n":
            leaked.append(at)  # where, not what: the value stays out of the failure's words
    assert leaked == []


@pytest.mark.parametrize("mark", [logpump.LINE_MAX, logpump.LINE_MAX - logpump.SECRET_SPAN])
def test_a_named_value_inside_a_run_longer_than_a_secret_s_span_reaches_no_log(mark: int) -> None:
    named = "VLLM_API_KEY="
    leaked = []
    for at in range(len(named) + len(OPAQUE) + 1):
        run = "x" * (mark - at - 1) + ","  # one run of characters from the line's start: no space to cut before
        logged = _copied(_pieces(f"{run}{named}{OPAQUE}{GOES_ON}\nINFO next\n".encode()))
        if _leaked(logged, OPAQUE) or not logged.endswith(f",{named}***{GOES_ON}\nINFO next\n".encode()):
            leaked.append(at)
    assert leaked == []
