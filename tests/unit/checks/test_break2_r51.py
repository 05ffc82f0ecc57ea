"""Break pass r51 on `onechip check`: what a server's answer says is stored redacted, whatever its shape."""

from __future__ import annotations

from pathlib import Path

from fakes.vllm_server import FakeVllm
from onechip.checks import run_checks

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
