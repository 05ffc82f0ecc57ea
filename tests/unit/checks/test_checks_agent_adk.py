"""`onechip check --agent adk`: the seed's agent stack (google-adk LlmAgent + LiteLlm hosted_vllm + McpToolset
over stdio running our count_ids server) against the scripted fake vLLM server, scored exactly like the
loop: the right call, an off-by-one filter, no call at all, and a call sent back as text."""

from __future__ import annotations

import importlib.util
import json

import pytest

from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.schemas.requests import CheckRequest

if importlib.util.find_spec("google.adk") is None or importlib.util.find_spec("litellm") is None:
    pytest.skip("needs the onechip[adk] extra (google-adk, litellm)", allow_module_level=True)


# LiteLLM sends tool results to a model named like Gemma with role "tool_responses" (Gemma's chat template),
# to any other model with role "tool"
TOOL_ROLES = ("tool", "tool_responses")


def _script(where: str | None, answer: str):
    """A model that calls count_ids(where) on its first turn (unless None) and answers after the result."""

    def reply(body: dict) -> Reply:
        if where is not None and not any(m.get("role") in TOOL_ROLES for m in body["messages"]):
            return Reply(tool_calls=[("count_ids", json.dumps({"where": where}))])
        return Reply(answer)

    return reply


def _run(script, runs: int = 1, model: str = "google/gemma-4-E2B-it", out_dir=None):
    with FakeVllm(script, model=model) as srv:
        request = CheckRequest(base_url=srv.url, only=["agent"], agent="adk", agent_runs=runs, out_dir=out_dir)
        report = api.check(request)
        bodies = srv.chat_requests
    (result,) = report.results
    return result, bodies


def test_right_call_scores_correct_and_fills_the_seed_table():
    result, bodies = _run(_script("id >= 10", "There are 8 ids greater than or equal to 10."), runs=2)
    assert result.verdict == "pass"
    assert [r.outcome for r in result.agent_runs] == ["correct", "correct"]
    table = result.agent_table
    assert (table.runs, table.correct, table.right_filter, table.errors) == (2, 2, 2, 0)
    assert table.filters_sent == ["id >= 10"]
    assert result.conditions["agent"].startswith("google-adk LlmAgent")
    # what the seed's stack sends: streamed (RunConfig SSE), with the MCP tool's schema as a function
    assert bodies[0]["stream"] is True
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["count_ids"]
    assert bodies[0]["messages"][0]["role"] == "system"


def test_off_by_one_filter_scores_wrong_filter():
    result, _ = _run(_script("id > 10", "7"))
    (run,) = result.agent_runs
    assert (run.outcome, run.filters, run.tool_counts, run.answer_number) == ("wrong-filter", ["id > 10"], [7], 7)
    assert result.verdict == "fail"


def test_no_call_scores_no_call():
    result, _ = _run(_script(None, "There are 5."))
    (run,) = result.agent_runs
    assert (run.outcome, run.filters) == ("no-call", [])


def test_a_call_sent_as_text_is_reported_as_such():
    # a pythonic call (what a Llama-style template emits) reaching a server whose --tool-call-parser does
    # not read it: vLLM returns it as plain content
    result, _ = _run(_script(None, "[count_ids(where='id >= 10')]"))
    (run,) = result.agent_runs
    assert run.outcome == "no-call"
    assert "tool call sent as text" in run.note
    assert "tool call sent as text" in result.probes[0].note


def test_adk_recovers_a_json_call_sent_as_text():
    # measured here: LiteLLM/ADK parse a JSON tool call out of plain content and run it, so this mismatch
    # does not show on the ADK agent (the loop scores the same reply no-call)
    text_call = '{"name": "count_ids", "arguments": {"where": "id >= 10"}}'

    def reply(body: dict) -> Reply:
        answered = any(m.get("role") in TOOL_ROLES for m in body["messages"])
        return Reply("8") if answered else Reply(text_call)

    result, _ = _run(reply)
    (run,) = result.agent_runs
    assert (run.outcome, run.filters) == ("correct", ["id >= 10"])


def test_without_the_extra_the_message_names_it(monkeypatch):
    import sys

    from onechip.checks import adk_agent
    from onechip.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "google.adk.agents", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'onechip\[adk\]'"):
        adk_agent._adk()


def test_cli_prints_the_seed_table_with_the_backend(monkeypatch):
    from typer.testing import CliRunner

    from onechip.cli.main import app

    with FakeVllm(_script("id >= 10", "8"), model="google/gemma-4-E2B-it") as srv:
        out = CliRunner().invoke(app, ["check", srv.url, "--only", "agent", "--agent", "adk", "--agent-runs", "2"])
    assert out.exit_code == 0, out.output
    assert "agent (MCP count_ids)" in out.output
    row = next(line for line in out.output.splitlines() if "│ adk" in line)
    assert [cell.strip() for cell in row.split("│")[1:6]] == ["adk", "2", "2/2", "2/2", "0"]


def test_a_streamed_call_is_one_call_in_the_transcript(tmp_path):
    # ADK streams a call as partial events (pieces of its arguments, `partial_args`) before the whole one: each was
    # counted and saved as a call, so one call of "id >= 10" read as 6 calls (and "1/6 tool calls failed")
    result, _ = _run(_script("id >= 10", "There are 8 ids."), out_dir=tmp_path)
    assert result.agent_runs[0].outcome == "correct"
    (saved,) = json.loads((tmp_path / "agent_transcripts.json").read_text())
    calls = [m["tool_call"] for m in saved["messages"] if "tool_call" in m]
    assert calls == [{"name": "count_ids", "arguments": {"where": "id >= 10"}}]
    assert [m["content"] for m in saved["messages"] if m["role"] == "assistant" and "content" in m] == [
        "There are 8 ids."
    ]


def test_a_failed_tool_call_is_named_in_the_note_as_the_loop_names_it():
    # the ADK stack recorded no tool error: a right guess after a filter the MCP server refused read
    # "correct 1/1, right filter 0/1; not-quoted 1", as if the call had worked (the loop says it failed)
    result, _ = _run(_script("ids over ten", "There are 8 ids."))
    (run,) = result.agent_runs
    assert (run.outcome, run.correct, run.filters, run.tool_counts) == ("not-quoted", True, ["ids over ten"], [])
    assert run.note.startswith("1/1 tool calls failed, first: count_ids: ") and "cannot parse filter" in run.note
    assert "; tool errors in 1/1 runs, first: count_ids: " in result.note
    assert result.probes[0].note == f"not-quoted ({run.note})"


def test_a_server_busy_for_the_run_leaves_it_not_tested_as_the_loop_does():
    # a 429 reached LiteLLM as RateLimitError and the run scored 'error' (agent fail), where the loop agent and every
    # other probe read a busy server as not_tested (checks.verdicts.failed): nothing is known of the model's answer
    with FakeVllm(_script("id >= 10", "8"), model="google/gemma-4-E2B-it") as srv:
        srv.fail_status, srv.retry_after = dict.fromkeys(range(1, 50), 429), "0"
        report = api.check(CheckRequest(base_url=srv.url, only=["agent"], agent="adk"))
    (result,) = report.results
    assert (result.verdict, result.probes[0].verdict) == ("not_tested", "not_tested"), result.note
    assert result.note.startswith("server busy on all 1 runs: RateLimitError: ") and "429" in result.note


def test_a_server_error_naming_a_token_is_stored_redacted(tmp_path):
    # LiteLLM's exception text, stored as the run's error, held the server's body as sent (a proxy echoing the
    # request's token) in checks.json and the transcripts; the loop's errors pass through vllm.wire.server_message
    token = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
    body = b'{"error": {"message": "bad token ' + token.encode() + b'\\nfor this route"}}'
    with FakeVllm(model="google/gemma-4-E2B-it", raw_answers={"/v1/chat/completions": (401, body, None)}) as srv:
        report = api.check(CheckRequest(base_url=srv.url, only=["agent"], agent="adk", out_dir=tmp_path / "c"))
    (run,) = report.results[0].agent_runs
    assert run.outcome == "error" and "bad token ***" in run.error, run.error
    assert not [p for p in (tmp_path / "c").iterdir() if token in p.read_text() or "hf_abcdefgh" in p.read_text()]
