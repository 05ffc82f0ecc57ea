"""Break pass r56 on `onechip check` against fake models: what each verdict says follows from what the server did."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from fakes.vllm_server import FakeVllm, Reply
from onechip.checks import run_checks

TIMEOUT_S = 3.0  # the checks' request timeout: an answer sent at once comes well within it on a loaded machine


@contextlib.contextmanager
def _slow_after(answered: int) -> Iterator[FakeVllm]:
    """A model that answers its first `answered` chat requests at once and holds every later one until the test
    ends (60 s at most): a late answer never comes within TIMEOUT_S, however loaded the machine."""
    seen: list[int] = []
    release = threading.Event()

    def reply(body: dict) -> Reply:
        seen.append(1)
        if len(seen) > answered:
            release.wait(60)  # holds the fake's loop: the checks send one request at a time
        return Reply("Paris is the capital.")

    with FakeVllm(reply) as srv:
        try:
            yield srv
        finally:
            release.set()  # before FakeVllm stops: its loop is held till then


def test_a_server_that_answers_no_request_in_time_leaves_its_probes_not_tested() -> None:
    """Every chat request timed out and nothing else was answered: nothing is known of the model's answers, as for
    a server busy on every try; the probes said 'fail' (the model's failure) while endpoint_failing said the verdicts
    say nothing of the model."""
    with _slow_after(0) as srv:
        report = run_checks(srv.url, only=["determinism"], determinism_prompts=1, request_timeout_s=TIMEOUT_S)
    assert report.endpoint_failing and "1 got no answer" in report.endpoint_failing
    (result,) = report.results
    (probe,) = result.probes
    assert (result.verdict, probe.verdict) == ("not_tested", "not_tested"), result
    assert probe.note.startswith("not tested: the server answered none of the checks' requests") and (
        f"no answer within {TIMEOUT_S:g} s" in probe.note
    ), probe.note
    assert result.note.startswith("not tested: the server answered none of the checks' requests"), result.note


def test_a_timeout_on_a_server_that_answered_other_requests_is_a_failure() -> None:
    """The first prompt's two requests answered, the second prompt's timed out: the engine took the model's turn
    and did not answer in time, which is its failure, said in the note."""
    with _slow_after(2) as srv:
        report = run_checks(srv.url, only=["determinism"], determinism_prompts=2, request_timeout_s=TIMEOUT_S)
    assert report.endpoint_failing is None
    (result,) = report.results
    assert [p.verdict for p in result.probes] == ["pass", "fail"]
    assert f"no answer within {TIMEOUT_S:g} s" in result.probes[1].note
    assert result.verdict == "partial"


def test_a_tool_call_without_an_id_is_replayed_with_one() -> None:
    """A server whose tool calls carry no `id` (the OpenAI shape requires one): the loop replayed the call with
    `"id": null` and its result with `"tool_call_id": null`, which a server validating the request (vLLM's
    ChatCompletionToolMessageParam: tool_call_id a string) refuses with a 400, then read as tools being blocked."""
    import json

    sent: list[dict] = []
    call = {"type": "function", "function": {"name": "count_ids", "arguments": '{"where": "id >= 10"}'}}

    def wire(number: int, body: dict) -> list:
        sent.append(body)
        answered = body["messages"][-1]["role"] == "tool"
        msg = (
            {"role": "assistant", "content": "There are 8 ids."}
            if answered
            else {"role": "assistant", "tool_calls": [call]}
        )
        choice = {"index": 0, "message": msg, "finish_reason": "stop" if answered else "tool_calls"}
        return [(0.0, json.dumps({"object": "chat.completion", "choices": [choice]}).encode(), True)]

    with FakeVllm(wire_script=wire, wire_plain=True, wire_ctype="application/json") as srv:
        report = run_checks(srv.url, only=["agent"])
    assert report.results[0].verdict == "pass"
    assistant, tool = sent[1]["messages"][2:]
    (replayed,) = assistant["tool_calls"]
    assert isinstance(replayed["id"], str) and replayed["id"] and tool["tool_call_id"] == replayed["id"]


def test_a_400_after_the_server_took_the_tools_is_the_runs_error_not_blocked() -> None:
    """The first turn, with `tools`, was answered with a call; the next turn got a 400 (its prompt over the context):
    the server took tools, so the domain is no 'blocked' (which says the server refused them) but the run's error."""
    too_long = "This model's maximum context length is 4096 tokens. However, your prompt contains 5000 input tokens"

    def chat(body: dict) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(status=400, error=too_long)
        return Reply(tool_calls=[("count_ids", '{"where": "id >= 10"}')])

    with FakeVllm(chat) as srv:
        report = run_checks(srv.url, only=["agent"])
    (result,) = report.results
    (run,) = result.agent_runs
    assert (result.verdict, run.outcome) == ("fail", "error"), result.note
    assert run.error and "HTTP 400" in run.error and "maximum context length" in run.error


def test_a_tool_probe_answered_in_reasoning_only_says_so() -> None:
    """A reasoning model that spent the probe's tokens thinking (reasoning_content, no content, no call): the note
    read "no tool_calls; content=''", as if the model had said nothing."""
    with FakeVllm(lambda body: Reply(reasoning="I should call record_reading with sensor A7 and")) as srv:
        report = run_checks(srv.url, only=["tools"], tool_choice=["auto"])
    (result,) = report.results
    assert {p.verdict for p in result.probes} == {"fail"}
    for probe in result.probes:
        assert "no tool_calls; content=''" in probe.note and "reasoning only" in probe.note, probe.note
        assert "'I should call record_reading" in probe.note and "finish_reason 'stop'" in probe.note, probe.note


def test_an_agent_answer_in_reasoning_only_is_named_in_the_note() -> None:
    """A reasoning model whose last turn held reasoning_content and no content: the run read 'no-call' with an empty
    answer and nothing saying the model had written anything."""
    with FakeVllm(lambda body: Reply(reasoning="I cannot see the table; I guess there are 8 ids.")) as srv:
        report = run_checks(srv.url, only=["agent"])
    (run,) = report.results[0].agent_runs
    assert (run.outcome, run.answer) == ("no-call", "")
    assert run.note == "answered in reasoning only: 'I cannot see the table; I guess there are 8 ids.'", run.note
