"""`check` against the finish_reason real vLLM releases send (helper qa61b): one regression test per finding, each
failing before its fix."""

from __future__ import annotations

import json
from typing import Any

from fakes.vllm_server import FakeVllm, Reply
from onechip.checks import run_checks

GOOD_RECORD = json.dumps({"sensor": "A7", "value": 42, "valid": True, "note": None})


def _right_call(body: dict[str, Any]) -> Reply:
    """The call each probe asks for (its prompt names get_time or record_reading), with the asked values."""
    if "get_time" in body["messages"][-1]["content"]:
        return Reply(tool_calls=[("get_time", "{}")])
    return Reply(tool_calls=[("record_reading", GOOD_RECORD)])


def test_required_calls_that_finish_stop_as_vllm_before_0_12_sends_them_pass_with_a_note() -> None:
    # vLLM 0.8.5 - 0.11.0 (vllm/entrypoints/openai/serving_chat.py of each sdist) sends finish_reason 'tool_calls'
    # only when its auto tool parser found calls (auto_tools_called); a well-formed call under tool_choice 'required'
    # finishes 'stop', plain and streamed (before 0.11.0). 0.12.0 added `is_finish_reason_tool_calls = ... or
    # tool_choice == "required"`. A real vLLM's right call is no partial: it passes, the note saying so
    with FakeVllm(replies=_right_call, tool_calls_finish="stop") as srv:
        result = run_checks(srv.url, only=["tools"], tool_choice=["required"]).results[0]
    assert result.verdict == "pass", result.note
    assert {p.verdict for p in result.probes} == {"pass"}
    assert result.probes[0].note.startswith("finish_reason 'stop', not 'tool_calls' (vLLM before 0.12.0 sends 'stop'")
