"""A secret cut in two by a wrap (helper safety69, 2026-12-07): errors.lines_redactor hid the part on the second line
of a shape of a fixed length, but showed the first part where it was too short to be matched alone ('token hf_AbCd'
then 'EfGh... done' showed 'hf_AbCd'), and followed no shape of a variable length (sk-..., ya29., 1//, a longer
ghp_...) across the cut. A line is now redacted with the line after it (`following`; LinesRedactor.each reads one
line ahead), so the first part is hidden where the next line completes a shape; a variable-length shape is followed
where its first part is too short to be matched alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from onechip.errors import lines_redactor
from onechip.vllm.log_summary import summarize

HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"  # 'hf_' and 34: a Hugging Face token's shape
SK = "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWxYz-_AbCdEfGh"  # an OpenAI project key's shape, made up
YA = "ya29." + "a0AfH6SMBx1y2z3abcdefghijklmnopqrstu"  # a Google OAuth access token's shape, made up


def _each(lines: list[str]) -> list[str]:
    return list(lines_redactor().each(lines))


@pytest.mark.parametrize("cut", [1, 2, 3, 5, 10])
def test_the_first_part_of_a_fixed_length_token_too_short_to_match_is_hidden(cut: int) -> None:
    at = len("INFO using token ") + cut
    line = "INFO using token " + HF + " for the download"
    shown = _each([line[:at], line[at:], "INFO next"])
    assert shown == ["INFO using token ***", "*** for the download", "INFO next"]


@pytest.mark.parametrize("secret", [SK, YA], ids=["sk", "ya29"])
@pytest.mark.parametrize("cut", [4, 12])
def test_a_variable_length_shape_cut_short_is_followed_across_the_wrap(secret: str, cut: int) -> None:
    line = "key=" + secret + " loaded"
    at = len("key=") + cut
    shown = _each([line[:at], line[at:], "INFO next"])
    assert shown == ["key=***", "*** loaded", "INFO next"], shown


def test_a_known_value_of_no_shape_cut_in_two_is_hidden_on_both_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "noshape-abcdefghij-0123456789")
    assert _each(["key noshape-abc", "defghij-0123456789 ok"]) == ["key ***", "*** ok"]


def test_lines_that_only_touch_stay_as_they_are() -> None:
    lines = ["INFO served with " + HF, "INFO next", "a line ending in hf", "_x ok"]
    assert _each(lines) == ["INFO served with ***", "INFO next", *lines[-2:]]
    lines = ["num_gpu_blocks=18744", "0123456789abcdef0123456789abcdef01234567", "INFO 321,376 tokens", "kv: 18432"]
    assert _each(lines) == lines


def test_logs_and_a_summary_hide_both_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    lines = ["ERROR 12-07 13:00:01 [hub.py:1] refused token " + HF[:5], HF[5:] + " ERROR 401", "INFO next"]
    log.write_text("\n".join(lines) + "\n")
    state.save(engine_state(log_path=str(log)))
    shown = "\n".join(state.log_lines())
    assert HF[:5] not in shown and HF[5:] not in shown and "*** ERROR 401" in shown
    kept = "\n".join(line.text for line in summarize("\n".join(lines) + "\n", "engine.log").lines)
    assert HF[:5] not in kept and "refused token ***" in kept
