"""Break pass r51 on `onechip check`: what a server's answer says is stored redacted, whatever its shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.vllm_server import FakeVllm
from onechip.checks import run_checks
from onechip.vllm import wire

TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123456789"


def test_a_200_error_body_naming_a_token_is_stored_redacted(tmp_path: Path) -> None:
    """A 200 whose body is an error, not a chat completion (a proxy echoing the request's token): the probe fails
    and says what came back, but checks.json and the transcripts hold no token (before: the body excerpt, whole)."""
    body = b'{"error": {"message": "bad token ' + TOKEN.encode() + b'"}}'
    with FakeVllm(raw_answers={"/v1/chat/completions": (200, body, "application/json")}) as srv:
        report = run_checks(srv.url, only=["smoke", "agent"], out_dir=tmp_path)
    assert {d.verdict for d in report.results} == {"fail"}
    notes = [p.note for d in report.results for p in d.probes]
    assert any("answer has no choices" in n and "bad token ***" in n for n in notes), notes
    written = {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()}
    assert "checks.json" in written
    assert not [name for name, text in written.items() if TOKEN in text or "hf_abcdefgh" in text]


def test_a_server_busy_on_every_try_leaves_tools_and_the_over_limit_probe_not_tested() -> None:
    """429 on every try (checks.verdicts.failed: nothing is known of the answer the model would have given): the
    tool-calling probes and the needle domain's over-limit probe are not_tested, as chat's and the needle's are;
    before, tool_calling was 'fail' (0/4: 'the model cannot call tools') and over_limit_400 'expected HTTP 400, got
    429'."""
    with FakeVllm(fail_status=dict.fromkeys(range(1, 400), 429), retry_after="0") as srv:
        report = run_checks(srv.url, only=["tools", "needle"], needle_lengths=[200], needle_depths=[0.5])
    verdicts = {(d.domain, p.name): p.verdict for d in report.results for p in d.probes if not p.informational}
    assert verdicts and set(verdicts.values()) == {"not_tested"}, verdicts
    assert [(d.domain, d.verdict) for d in report.results] == [
        ("tool_calling", "not_tested"),
        ("long_context", "not_tested"),
    ]
    assert report.server_busy


def test_an_over_limit_prompt_answered_busy_is_not_tested(monkeypatch: pytest.MonkeyPatch) -> None:
    """The long prompt itself answered 503 on every try: whether the server would have refused it with a 400 is not
    known (before: fail, 'expected HTTP 400, got 503')."""
    monkeypatch.setattr(wire, "BUSY_BACKOFF_S", 0.0)
    busy = (503, b'{"error": {"message": "overloaded"}}', "application/json")
    with FakeVllm(raw_answers={"/v1/chat/completions": busy}) as srv:
        report = run_checks(srv.url, only=["needle"], needle_lengths=[200], needle_depths=[0.5])
    probe = next(p for p in report.results[0].probes if p.name == "over_limit_400")
    assert probe.verdict == "not_tested" and "HTTP 503" in probe.note, probe
