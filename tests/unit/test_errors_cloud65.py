"""errors.error_line, found at stop 64 (helper cloud65, 2026-12-07): the top-level refusal line had no length bound
where each echoed value has one (inputs.shown, refusals.MAX_DETAIL_CHARS)."""

from __future__ import annotations

import pytest

from onechip.errors import MAX_LINE_CHARS, error_line, one_line

SECRET = "Zq9" * 70  # a value with no secret's shape, known only as MY_API_TOKEN's (errors._SECRET_NAME: *TOKEN)


def test_a_short_line_is_one_line_unchanged() -> None:
    assert error_line("zone z:\n  refused\x1b[2J") == one_line("zone z:\n  refused\x1b[2J")


def test_a_huge_line_is_cut_to_the_bound_and_says_how_long_it_was() -> None:
    # a server's 100,000-character message made a 100,000-character error line
    said = error_line("zone z: " + "x" * 100_000)
    assert len(said) <= MAX_LINE_CHARS and said.startswith("zone z: xxx"), len(said)
    assert said.endswith(f"... ({len('zone z: ') + 100_000:,} characters)"), said[-60:]


def test_a_secret_across_the_cut_is_redacted_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # cut first, the part of the value left before the cut is no longer the value redact replaces: it was shown
    monkeypatch.setenv("MY_API_TOKEN", SECRET)
    said = error_line("x" * (MAX_LINE_CHARS - 100) + " " + SECRET + " " + "y" * 5_000)
    assert "Zq9Zq9" not in said and "***" in said, said[-200:]
    assert len(said) <= MAX_LINE_CHARS
