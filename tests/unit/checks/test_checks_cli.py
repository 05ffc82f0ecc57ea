"""`onechip check`: thin shell over api.check; --json prints the CheckReport."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from factories import one_error_line
from fakes.vllm_server import FakeVllm, Reply
from onechip import checks
from onechip.cli import check_cmd
from onechip.errors import ConfigError
from onechip.schemas.checks import CheckReport


def _app() -> typer.Typer:
    app = typer.Typer()
    check_cmd.register(app)

    @app.command()
    def _other() -> None:  # a second command keeps typer from collapsing the app to `check`
        pass

    return app


def test_check_json_prints_the_report():
    with FakeVllm([Reply("Paris.")]) as srv:
        out = CliRunner().invoke(_app(), ["check", srv.url, "--only", "smoke", "--json"])
    assert out.exit_code == 0, out.output
    report = CheckReport.model_validate(json.loads(out.stdout))
    assert [(r.domain, r.verdict) for r in report.results] == [("chat", "pass")]


def test_check_table_shows_domain_verdicts(tmp_path):
    with FakeVllm([Reply("Paris."), Reply("")]) as srv:
        out = CliRunner().invoke(
            _app(), ["check", srv.url, "--only", "smoke,determinism", "--out", str(tmp_path), "--allow", "fail"]
        )
    assert out.exit_code == 0, out.output
    assert "chat" in out.output and "pass" in out.output
    assert "determinism" in out.output
    assert (tmp_path / "checks.json").exists()


def test_tool_options_reach_the_request():
    record = '{"sensor": "A7", "value": 42, "valid": true, "note": null}'
    replies = [Reply(tool_calls=[("record_reading", record)])] * 2 + [Reply(tool_calls=[("get_time", "{}")])] * 2
    with FakeVllm(replies) as srv:
        out = CliRunner().invoke(
            _app(),
            ["check", srv.url, "--only", "tools", "--tool-choice", "required", "--strict-tools", "--json"],
        )
        bodies = srv.chat_requests
    assert out.exit_code == 0, out.output
    assert all(b["tool_choice"] == "required" for b in bodies)
    assert all(t["function"]["strict"] is True for t in bodies[0]["tools"])
    assert json.loads(out.stdout)["results"][0]["conditions"]["strict_tools"] == "true"


def test_needle_table_shows_exact_prompt_tokens_and_the_cap():
    def answer(body):
        return Reply("violet-harbor-7341" if "violet-harbor-7341" in body["messages"][-1]["content"] else "no")

    with FakeVllm(answer, max_model_len=500) as srv:
        out = CliRunner().invoke(
            _app(),
            ["check", srv.url, "--only", "needle", "--needle-lengths", "200", "--needle-depths", "0.5"],
        )
    assert out.exit_code == 0, out.output
    assert "long context (cap 468 tokens)" in out.output  # 500 - 32 answer tokens
    assert "needle_200_d0.5" in out.output and "over_limit_400" in out.output


def test_bad_needle_and_agent_options_are_one_readable_config_error():
    # Before: --needle-lengths nan raised ValueError (a traceback), --needle-depths 5 was accepted and sent,
    # and pydantic's raw error list ({'type': ..., 'loc': ..., 'ctx': ...}) was the message.
    url = "http://127.0.0.1:9"  # never reached: options are checked first
    for argv, expected in [
        (["--needle-lengths", "nan"], "--needle-lengths must be comma-separated integers"),
        (["--needle-lengths", "0"], "needle_lengths.0: Input should be greater than or equal to 1 (got 0)"),
        (["--needle-depths", "5"], "needle_depths.0: Input should be less than or equal to 1 (got 5.0)"),
        (["--agent-runs", "-1"], "agent_runs: Input should be greater than or equal to 1 (got -1)"),
    ]:
        out = CliRunner().invoke(_app(), ["check", url, *argv])
        assert isinstance(out.exception, ConfigError), (argv, out.output)
        with pytest.raises(ConfigError) as info:
            raise out.exception
        assert expected in str(info.value) and "'type'" not in str(info.value)


def _failing_server(answered: int = 0) -> FakeVllm:
    """A server that lists its model but answers every probe with HTTP 500 (an engine that died after boot),
    except the first `answered` chat requests."""
    died = b'{"error": {"message": "EngineCore encountered an issue", "type": "InternalServerError", "code": 500}}'
    srv = FakeVllm(lambda body: Reply(status=500, error="EngineCore encountered an issue"))
    if answered:
        replies = [Reply("Paris.")] * answered
        srv.replies = lambda body: replies.pop(0) if replies else Reply(status=500, error="EngineCore died")
    srv.raw_answers = {path: (500, died, "application/json") for path in ("/tokenize", "/v1/completions")}
    return srv


def test_a_server_failing_every_request_exits_6_in_one_line_after_recording_the_checks(tmp_path, run):
    with _failing_server() as srv:
        line = one_error_line(run, "check", srv.url, "--out", str(tmp_path / "c"), code=6)
    assert line.startswith(f"{srv.url} answers /v1/models but failed all ")
    assert "answered 5xx; the last: HTTP 500 from " in line and "the verdicts say nothing of the model" in line
    saved = CheckReport.model_validate_json((tmp_path / "c" / "checks.json").read_text())
    assert saved.results and {r.verdict for r in saved.results} <= {"fail", "not_tested"}  # recorded as failed
    assert saved.endpoint_failing == line


def test_a_server_that_tokenizes_but_fails_every_generation_exits_6(run):
    # a dead engine behind a live API server: /tokenize answers and a prompt over max_model_len gets its 400 (both
    # without the engine), every generation a 500; those answers do not make the verdicts the model's
    with _failing_server() as srv:
        srv.raw_answers.pop("/tokenize")
        line = one_error_line(run, "check", srv.url, code=6)
    assert srv.tokenize_calls and line.startswith(f"{srv.url} answers /v1/models but failed all ")


def test_a_server_that_answered_one_probe_is_judged_by_its_verdicts(run):
    with _failing_server(answered=1) as srv:
        code, out, err = run("check", srv.url, "--only", "smoke,determinism", "--json")
    assert code == 10, err  # ChecksNotPassed: the model was reached, its verdicts stand
    assert CheckReport.model_validate_json(out).endpoint_failing is None


def test_a_rate_limited_chat_is_asked_again_and_its_answer_judged(run):
    # chat requests 1-2 answered 429 (a rate limiter in front of the server), Retry-After: 0 s; the third answers
    with FakeVllm([Reply("Paris.")], fail_status={1: 429, 2: 429}, retry_after="0") as srv:
        code, out, err = run("check", srv.url, "--only", "smoke", "--json")
    assert code == 0, err  # was 10: chat fail on the first 429
    report = CheckReport.model_validate_json(out)
    assert [(r.domain, r.verdict) for r in report.results] == [("chat", "pass")] and report.server_busy is None
    assert len(srv.chat_requests) == 3


def test_a_server_busy_on_every_try_exits_6_saying_so_with_its_probes_not_tested(tmp_path, run):
    with FakeVllm([Reply("Paris.")], fail_status=dict.fromkeys(range(1, 20), 429), retry_after="0") as srv:
        line = one_error_line(run, "check", srv.url, "--only", "smoke", "--out", str(tmp_path / "c"), code=6)
    tries = checks.BUSY_RETRIES + 1
    assert len(srv.chat_requests) == tries  # one probe's request, sent BUSY_RETRIES more times
    assert line.startswith(f"server busy: 1 request(s) the checks sent answered 429/503 on all {tries} tries")
    saved = CheckReport.model_validate_json((tmp_path / "c" / "checks.json").read_text())
    assert [(r.domain, r.verdict) for r in saved.results] == [("chat", "not_tested")]  # was fail, exit 10
    assert saved.server_busy == line and saved.endpoint_failing is None


def test_a_busy_server_does_not_hide_a_failed_check(run):
    # the chat probe stays busy, determinism's two answers differ: a real failure, so 10, the busy line printed
    replies = [Reply("Paris."), Reply("Lyon.")]
    with FakeVllm(replies, fail_status=dict.fromkeys(range(1, 5), 429), retry_after="0") as srv:
        code, out, err = run("check", srv.url, "--only", "smoke,determinism")
    assert code == 10, err
    assert "server busy: 1 request(s)" in " ".join(out.split())
