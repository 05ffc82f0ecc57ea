"""Text onechip did not write (a cloud API's error, a server's or engine's message, a progress line that quotes one)
reaches the terminal redacted and as text, not as rich markup (helper safety70b, 2026-12-07): `cloud down`'s per-TPU
lines, `cloud up`'s and `probe`'s API messages, `cloud status`'s warnings, the progress lines, `check`'s notes and
`status`/`down`'s engine notes went through rich markup unredacted: a token showed whole, a '[bold]' styled, and a
'[/x]' raised MarkupError (an internal error in place of the result)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from onechip.cli import cloud_cmd, render
from onechip.cli.check_cmd import check_tables
from onechip.progress import ProgressEvent
from onechip.schemas import CheckReport
from onechip.schemas.checks import CheckResult
from onechip.schemas.cloud import CloudDownResult

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # GitHub's shape: ghp_ and 36 (errors._GH_TOKEN)
# what an API's error text may hold: a token, a signed URL's signature, a tag rich reads as style, one it cannot close
OUTSIDE = f"403 denied for token {TOKEN} at https://x/y?X-Goog-Signature=abcdef0123456789 [bold]loud[/bold] [/x]"


def _recorded(monkeypatch: pytest.MonkeyPatch) -> Console:
    out = Console(record=True, width=400, file=io.StringIO())
    monkeypatch.setattr(render, "console", out)
    monkeypatch.setattr(cloud_cmd, "console", out)
    return out


def _clean(text: str) -> None:
    assert TOKEN not in text and "abcdef0123456789" not in text, text
    assert "[bold]loud[/bold] [/x]" in text, text  # shown as written, not styled, no MarkupError


def test_cloud_down_s_lines_are_redacted_and_not_markup(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _recorded(monkeypatch)
    result = CloudDownResult(
        deleted=[f"node a (z): {OUTSIDE}"], kept=[f"node b (z): {OUTSIDE}"], failed=[f"node c (z): {OUTSIDE}"],
        held=[f"left node d (z): {OUTSIDE}"],
    )  # fmt: skip
    cloud_cmd._print_down(result, as_json=False)
    text = out.export_text()
    assert text.count("[bold]loud[/bold]") == 4
    _clean(text)
    assert "deleted node a (z)" in text and "not deleted node c (z)" in text


def test_cloud_state_lines_are_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    cloud_cmd.state_lines()(ProgressEvent("cloud", f"zone z: {OUTSIDE}"))
    _clean(capsys.readouterr().err)


def test_plain_progress_lines_are_redacted() -> None:
    said: list[str] = []
    render.PlainProgress(said.append)(ProgressEvent("bench", f"retrying: {OUTSIDE}"))
    _clean(said[0])


def test_live_progress_shows_a_message_redacted_and_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    out = Console(record=True, width=400, file=io.StringIO(), force_terminal=True)
    monkeypatch.setattr(render, "console", out)
    with render.live_progress() as on_progress:
        on_progress(ProgressEvent("bench", f"retrying: {OUTSIDE}"))
    _clean(out.export_text())


def test_a_check_note_is_shown_as_text_in_the_verdict_table() -> None:
    note = "[/x] [bold]b[/bold]"
    report = CheckReport(
        base_url="http://127.0.0.1:1", model="m", results=[CheckResult(domain="chat", verdict="blocked", note=note)]
    )
    out = Console(record=True, width=400, file=io.StringIO())
    for table in check_tables(report):
        out.print(table)
    assert "[/x] [bold]b[/bold]" in out.export_text()


def test_cloud_down_s_result_holds_its_api_texts_redacted_for_json_and_mcp() -> None:
    # `cloud down --json` printed the result's lines as the API's error put them (provision: f"...: {exc}; ...")
    result = CloudDownResult(kept=[OUTSIDE])
    result.failed = [f"node c (z): {OUTSIDE}; delete it: gcloud ..."]  # set after the fact, as provision does
    result.unreachable, result.notes = [OUTSIDE], [OUTSIDE]
    assert TOKEN not in result.model_dump_json() and "abcdef0123456789" not in result.model_dump_json()


def test_a_bench_run_s_reasons_and_notes_are_redacted_and_not_markup(tmp_path) -> None:
    from fakes.vllm_server import FakeVllm
    from onechip import api
    from onechip.cli.bench_cmd import print_run
    from onechip.schemas import BenchConfig
    from onechip.schemas.inputs import build_request

    with FakeVllm() as srv:
        typed = {"base_url": srv.url, "contexts": "16", "clients": "1", "output_tokens": 2, "reps": 1}
        run = api.bench(build_request(BenchConfig, {**typed, "warmup_requests": 0}), lambda e: None, out_dir=tmp_path)
    run.cells[0].reason = OUTSIDE  # a caveat quoting the server
    run.notes.append(OUTSIDE)
    out = Console(record=True, width=400, file=io.StringIO())
    print_run(run, out)
    _clean(out.export_text())


def test_status_s_engine_note_is_redacted_and_not_markup(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from onechip import api
    from onechip.cli.main import app
    from onechip.schemas import EngineStatus

    monkeypatch.setattr(api, "status", lambda: EngineStatus(running=False, note=f"ssh said: {OUTSIDE}"))
    done = CliRunner().invoke(app, ["status"], env={"COLUMNS": "400"})
    assert done.exit_code == 1, done.output
    _clean(done.output)
