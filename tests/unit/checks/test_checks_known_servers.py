"""`check` against fake servers whose behaviour is known exactly: each verdict and note says what the server did."""

from __future__ import annotations

import json
from typing import Any

from fakes.vllm_server import FakeVllm, Reply
from onechip.checks import run_checks

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
    assert result.note.startswith("0/8 probes pass; first failure auto_record_reading_call: arguments are not JSON")
