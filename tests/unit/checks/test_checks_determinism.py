"""Determinism probe against the fake server: identical answers pass; an empty answer is the server not answering.

Two empty answers (content null, zero completion tokens) passed as 'byte-identical': the check said a server that
answered nothing was deterministic. The chat smoke probe fails an empty answer; determinism fails it the same way."""

from __future__ import annotations

import json

from fakes.vllm_server import FakeVllm, Reply
from onechip.checks import run_checks

# vLLM's non-streamed body when nothing was generated: content null, no completion tokens
NULL_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "fake-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 0, "total_tokens": 12},
}


def test_two_null_answers_fail_and_say_why() -> None:
    with FakeVllm() as srv:
        srv.raw_answers["/v1/chat/completions"] = (200, json.dumps(NULL_ANSWER).encode(), "application/json")
        report = run_checks(srv.url, only=["determinism"], determinism_prompts=1)
    result = report.results[0]
    (probe,) = result.probes
    assert (result.verdict, probe.verdict) == ("fail", "fail")
    empty = "answer empty (completion_tokens 0, finish_reason stop)"
    assert probe.note == f"first {empty}; second {empty}: the server gave no answer to compare"
    assert result.note == "0/1 byte-identical, 1 with an empty answer"


def test_one_blank_answer_fails_naming_which() -> None:
    with FakeVllm([Reply("red, orange, yellow"), Reply("  "), Reply("The sea."), Reply("The sea.")]) as srv:
        report = run_checks(srv.url, only=["determinism"], determinism_prompts=2)
    result = report.results[0]
    blank, same = result.probes
    assert blank.verdict == "fail" and blank.note.startswith("second answer empty (completion_tokens ")
    assert "first answer" not in blank.note
    assert (same.verdict, same.note) == ("pass", "")
    assert (result.verdict, result.note) == ("partial", "1/2 byte-identical, 1 with an empty answer")


def test_an_answer_in_reasoning_only_is_compared_not_empty() -> None:
    """A model served with a reasoning parser spends a short max_tokens on reasoning: content null, the text in
    `reasoning_content` (vllm/reasoning parsers; the fake's reasoning_field). That is generated text and is compared:
    the same reasoning twice passes, another reasoning fails, where both read as empty and failed."""
    think = [
        Reply("", reasoning="Okay, the user wants three colours"),
        Reply("", reasoning="Okay, the user wants three colours"),
    ]
    other = [Reply("", reasoning="Let me think about the sea"), Reply("", reasoning="Hmm, the sea")]
    with FakeVllm([*think, *other]) as srv:
        report = run_checks(srv.url, only=["determinism"], determinism_prompts=2)
    same, differ = report.results[0].probes
    assert (same.verdict, same.note) == ("pass", "")
    assert (differ.verdict, differ.note) == ("fail", "outputs differ at temperature 0")
