"""A secret cut in two by a wrap, at every position (helper safety70, 2026-12-07): errors.LinesRedactor hid a cut
shape of a fixed length, and one of no fixed length too short to be matched on its first line; it showed the wrapped
rest of one long enough to be matched there ('key=sk-...Mn7' then 'Op8... loaded' showed 'Op8...'), and the value of a
bearer header whose cut fell in the header's words ('Authorization: Bea' then 'rer <token> ok' showed the token whole).
And a reader that gives each line before the next is read (a follow) holds the last one (`held`) until the next comes
or it is `release`d."""

from __future__ import annotations

import pytest

from onechip.errors import lines_redactor
from wrapped_secrets import CASES, HF, SK


def _each(lines: list[str]) -> list[str]:
    return list(lines_redactor().each(lines))


@pytest.mark.parametrize("case", CASES)
def test_a_secret_cut_by_a_wrap_at_every_position_shows_no_part_of_it(case: str) -> None:
    before, secret, after = CASES[case]
    line = before + secret + after
    header = before.rindex("Authorization") if case == "bearer" else len(before)  # where the redacted match starts
    for at in range(1, len(line)):
        shown = _each([line[:at], line[at:], "INFO next"])
        assert shown[2] == "INFO next", at
        if len(before) < at < len(before) + len(secret):  # the cut is in the secret: both its parts hidden
            assert shown[:2] == [before + "***", "***" + after], at
        elif header < at <= len(before):  # the cut is in the header's words: its value on the second line hidden
            assert shown[:2] == [line[:at], "***" + after], at
        for part in (secret[:8], secret[8:16], secret[-8:]):
            assert part not in "\n".join(shown), (at, shown)


@pytest.mark.parametrize("cut", range(20, len(SK)))
def test_the_wrapped_rest_of_a_shape_long_enough_to_match_on_its_first_line_is_hidden(cut: int) -> None:
    line = "key=" + SK + " loaded"
    at = len("key=") + cut
    assert _each([line[:at], line[at:], "INFO next"]) == ["key=***", "*** loaded", "INFO next"]


def test_a_whole_fixed_length_shape_at_a_line_end_is_not_followed() -> None:
    # a Hugging Face token is 34 after 'hf_': one whole at a line's end is done; the next line's word is no part of it
    assert _each(["INFO served with " + HF, "INFO next"]) == ["INFO served with ***", "INFO next"]


def test_held_gives_each_line_once_the_next_has_come_and_release_the_last() -> None:
    hidden = lines_redactor()
    line = "INFO using token " + HF + " for the download"
    at = len("INFO using token ") + 5
    assert list(hidden.held(["INFO start", line[:at]])) == ["INFO start"]  # the cut line waits for the next
    assert list(hidden.held([line[at:]])) == ["INFO using token ***"]  # read with it: its first part hidden
    assert list(hidden.held([])) == []
    assert list(hidden.release()) == ["*** for the download"]  # no next line came: given as it is
    assert list(hidden.release()) == []


def test_a_word_after_a_key_of_no_fixed_length_that_ends_a_line_is_hidden_with_it() -> None:
    # a wrap's rest cannot be told from a word after a key that ends its line: hidden (over-masking, the safe side)
    assert _each(["key=" + SK, "INFO 12-07 next"]) == ["key=***", "*** 12-07 next"]


def test_a_header_whose_value_ends_before_the_line_s_end_is_not_followed() -> None:
    # the ')' and '.' after the value are the text's: the value was whole on its line, the next line no part of it
    lines = ["(Authorization: Basic dXNlcjpwYXNzd29yZA==).", "api_key_count: 1234567"]
    assert _each(lines) == ["(Authorization: Basic ***).", "api_key_count: 1234567"]
