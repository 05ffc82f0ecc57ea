"""`check` against fake servers whose behaviour is known exactly: each verdict and note says what the server did."""

from __future__ import annotations

import json
from typing import Any

from fakes.vllm_server import FakeVllm, Reply
from onechip.checks import run_checks
from onechip.checks.agent import TEXT_CALL_NOTE
from onechip.checks.needle import PASSPHRASE

GOOD_RECORD = json.dumps({"sensor": "A7", "value": 42, "valid": True, "note": None})


def _asked(body: dict[str, Any]) -> str:
    """The tool a probe asks for: the named choice, else the one its prompt names."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice["function"]["name"])
    return "get_time" if "get_time" in body["messages"][-1]["content"] else "record_reading"


def _right_call(body: dict[str, Any]) -> Reply:
    name = _asked(body)
    return Reply(tool_calls=[(name, GOOD_RECORD if name == "record_reading" else "{}")])


def test_a_tool_domain_that_fails_says_why_in_its_note() -> None:
    # every call's arguments lose their closing brace: each of the 8 probes (2 modes x 2 tools x plain/stream) fails
    # on JSON, and the domain's note (the one line the console shows) names that, not only '0/8 probes pass'
    def cut(body: dict[str, Any]) -> Reply:
        (name, args), *_ = _right_call(body).tool_calls
        return Reply(tool_calls=[(name, args[:-1])])

    with FakeVllm(replies=cut) as srv:
        result = run_checks(srv.url, only=["tools"], tool_choice=["auto", "named"]).results[0]
    assert result.verdict == "fail"
    assert result.note.startswith("0/8 probes pass; first failure: arguments are not JSON: Expecting ',' delimiter")
    assert result.note.endswith("(auto_record_reading_call)")


def test_calls_that_finish_stop_under_auto_are_partial_and_named_stop_passes() -> None:
    # the right calls, every one with finish_reason 'stop'. vLLM (chat_completion/serving.py), after OpenAI's API:
    # 'tool_calls' for auto or required tool calls, 'stop' for named ones. So the auto probes (a client that loops on
    # finish_reason == 'tool_calls' would not run the call) are partial, plain and streamed; the named ones pass
    with FakeVllm(replies=_right_call, tool_calls_finish="stop") as srv:
        result = run_checks(srv.url, only=["tools"], tool_choice=["auto", "required", "named"]).results[0]
    verdicts = {p.name: p.verdict for p in result.probes}
    assert {v for n, v in verdicts.items() if n.startswith("auto_")} == {"partial"}
    # 'stop' under required is what vLLM before 0.12.0 sends (checks.tools.REQUIRED_STOP): a pass, said
    assert {v for n, v in verdicts.items() if not n.startswith("auto_")} == {"pass"}
    said = "finish_reason 'stop', not 'tool_calls' (what OpenAI and vLLM send for auto or required calls;"
    assert result.probes[0].note.startswith(said), result.probes[0].note
    assert result.probes[1].note.startswith(said), result.probes[1].note  # the streamed one


def test_calls_finishing_as_vllm_does_pass_in_every_mode() -> None:
    # the fake's default is vLLM's rule: 'tool_calls' under auto and required, 'stop' under a named choice
    with FakeVllm(replies=_right_call) as srv:
        result = run_checks(srv.url, only=["tools"], tool_choice=["auto", "required", "named"]).results[0]
    assert result.verdict == "pass" and result.note == "12/12 probes pass", result.note


def _reads_what_it_kept(body: dict[str, Any]) -> Reply:
    text = body["messages"][-1]["content"]
    return Reply(PASSPHRASE if PASSPHRASE in text else "I do not know.")


def test_a_server_that_truncates_long_prompts_silently_is_said_to() -> None:
    # max_model_len 4096, but every prompt over 600 tokens is cut to its last 600, unsaid (as vLLM's
    # truncate_prompt_tokens cuts). A 1,000-token needle prompt loses its first 400 tokens: the needle at depth 0.1
    # (~100 tokens in) is gone, the one at 0.9 is kept and found; the over-limit prompt (4,097 tokens) is answered 200
    with FakeVllm(_reads_what_it_kept, truncate_to=600) as srv:
        result = run_checks(srv.url, only=["needle"], needle_lengths=[1000], needle_depths=[0.1, 0.9]).results[0]
    early, late, over = result.probes
    assert result.verdict == "partial"
    assert result.note == "needle found 1/2; the server cut 2/2 needle prompts silently (read fewer tokens than sent)"
    cut = "cut silently: the server read 600 of the 1000 prompt tokens sent (usage.prompt_tokens)"
    assert (early.verdict, early.note) == ("fail", f"{cut}; passphrase not in answer")
    # found, but the prompt the probe is named for was not read whole: not a pass at 1,000 tokens
    assert (late.verdict, late.note) == ("partial", cut)
    assert over.verdict == "fail"
    assert over.note == (
        "expected HTTP 400, got 200: cut silently, 600 of 4097 tokens read "
        "(over max_model_len 4096; usage.prompt_tokens)"
    )


def test_a_needle_refused_as_too_long_within_the_advertised_max_model_len_fails_saying_so() -> None:
    # /v1/models says max_model_len 4096 while the engine refuses prompts over 512 with vLLM's 400 (a config or a
    # proxy that misreports the limit): a 1,000-token needle is within what the server advertises, so its refusal
    # is the server's failure to serve that length (an agent sizing its context by /v1/models gets these 400s), not
    # a length beyond the limit left untested; the over-limit prompt (4,097 tokens) is refused 400 as it should be
    models = json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model", "max_model_len": 4096}]})
    with FakeVllm(
        _reads_what_it_kept, max_model_len=512, raw_answers={"/v1/models": (200, models.encode(), None)}
    ) as srv:
        result = run_checks(srv.url, only=["needle"], needle_lengths=[1000]).results[0]
    needle, over = result.probes
    assert needle.verdict == "fail" and over.verdict == "pass"
    assert needle.note.startswith(
        "the server refused a 1000-token prompt as too long though /v1/models says max_model_len 4096: "
        "This model's maximum context length is 512 tokens."
    ), needle.note
    assert result.verdict == "partial" and result.note == "needle found 0/1"


def test_a_call_cut_at_max_tokens_says_so_before_what_broke() -> None:
    # every call's arguments end early with finish_reason 'length', as a structured (named) call does when it runs
    # out of max_tokens (the tool probe's 96, CheckOptions.tool_max_tokens): the cut is what to fix, so the note says
    # it first, then the JSON error it left; the verdict stays fail
    def cut(body: dict[str, Any]) -> Reply:
        (name, args), *_ = _right_call(body).tool_calls
        return Reply(tool_calls=[(name, args[:-1])])

    with FakeVllm(replies=cut, tool_calls_finish="length") as srv:
        result = run_checks(srv.url, only=["tools"], tool_choice=["named"]).results[0]
    probe = result.probes[0]
    assert probe.verdict == "fail"
    assert probe.note.startswith(
        "cut at max_tokens 96 (finish_reason 'length'); arguments are not JSON: Expecting ',' delimiter"
    ), probe.note


def test_an_agent_whose_calls_come_as_text_says_so_in_the_domains_note() -> None:
    # the model writes its count_ids call as JSON text in content, no tool_calls (a tool-call parser that does not
    # match the model's format): the run is 'no-call', and the domain's note, what the console shows, says why
    call = json.dumps({"name": "count_ids", "arguments": {"where": "id >= 10"}})
    with FakeVllm(replies=lambda body: Reply(call)) as srv:
        result = run_checks(srv.url, only=["agent"]).results[0]
    assert result.verdict == "fail"
    assert result.note == f"correct 0/1, right filter 0/1; no-call 1; 1/1 runs: {TEXT_CALL_NOTE}"
