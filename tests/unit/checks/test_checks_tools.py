"""Tool-calling probe: typed arguments, streamed deltas, zero-parameter tools, blocked endpoints."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.vllm_server import FakeVllm, Reply
from onechip.checks import run_checks
from onechip.checks.tools import judge_call
from onechip.vllm.wire import ChatReply

GOOD_RECORD = json.dumps({"sensor": "A7", "value": 42, "valid": True, "note": None})


def _run(replies, modes=("named",)):
    with FakeVllm(list(replies)) as srv:
        report = run_checks(srv.url, only=["tools"], tool_choice=list(modes))
        return report.results[0], srv.chat_requests


def test_valid_calls_pass_plain_and_streamed_including_zero_parameter_tool():
    # per mode: record_reading plain, streamed; get_time plain, streamed
    replies = [Reply(tool_calls=[("record_reading", GOOD_RECORD)])] * 2 + [Reply(tool_calls=[("get_time", "{}")])] * 2
    result, bodies = _run(replies)
    assert result.domain == "tool_calling" and result.verdict == "pass", result.probes
    assert [p.name for p in result.probes] == [
        "named_record_reading_call",
        "named_record_reading_stream",
        "named_get_time_call",
        "named_get_time_stream",
    ]
    stream = result.probes[1]
    assert stream.observed["joined_arguments"] == GOOD_RECORD  # deltas of 3 chars joined back
    assert result.probes[3].observed["joined_arguments"] == "{}"
    # named tool_choice forces the asked function, and the tools array is sent
    assert bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "record_reading"}}
    assert bodies[1]["stream"] is True and {t["function"]["name"] for t in bodies[0]["tools"]} == {
        "record_reading",
        "get_time",
    }


def test_string_number_fails_schema_and_raw_tool_call_text_is_named():
    bad = json.dumps({"sensor": "A7", "value": "42", "valid": True, "note": None})
    raw = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    replies = [Reply(tool_calls=[("record_reading", bad)])] * 2 + [Reply(raw)] * 2
    result, _ = _run(replies)
    assert result.verdict == "fail"
    assert "'42' is not of type 'number'" in result.probes[0].note
    assert "raw <tool_call> text" in result.probes[2].note


def test_judge_call_types_and_values():
    expected = {"sensor": "A7", "value": 42, "valid": True, "note": None}

    def judge(args: str, name: str = "record_reading"):
        return judge_call(ChatReply(tool_calls=[{"name": name, "arguments": args}]), "record_reading", expected)[0]

    assert judge(GOOD_RECORD) == "pass"
    assert judge(json.dumps({**expected, "value": 42.0})) == "pass"  # 42.0 is the number 42
    assert judge(json.dumps({**expected, "valid": "true"})) == "fail"  # a string is not a boolean
    assert judge(json.dumps({**expected, "note": "null"})) == "partial"  # valid type, not the asked null
    assert judge(json.dumps({**expected, "value": 41})) == "partial"
    assert judge('{"sensor": "A7", ') == "fail"  # not JSON
    assert judge(GOOD_RECORD, name="delete_all") == "fail"  # never offered
    assert judge_call(ChatReply(tool_calls=[{"name": "get_time", "arguments": ""}]), "get_time", {})[0] == "fail"


def test_streamed_arguments_must_equal_plain_ones_as_json():
    # Recorded from vLLM 0.32 + SmolLM2 (strict tools): non-streamed arguments come back compact,
    # the joined stream keeps the model's whitespace. Same JSON → the streamed verdict stands, noted.
    pretty = '{\n    "sensor": "A7",\n    "value": 42,\n    "valid": true,\n    "note": null\n}'
    replies = [
        Reply(tool_calls=[("record_reading", GOOD_RECORD)]),
        Reply(tool_calls=[("record_reading", pretty)]),
        Reply(tool_calls=[("get_time", "{}")]),
        Reply(tool_calls=[("get_time", '{"tz": null}')]),  # fails the schema on its own
        Reply(tool_calls=[("record_reading", GOOD_RECORD)]),
        Reply(tool_calls=[("record_reading", GOOD_RECORD.replace("42", "43"))]),
    ]
    result, _ = _run(replies[:4])
    assert result.probes[1].verdict == "pass"
    assert result.probes[1].note == "joined deltas equal the non-streamed arguments as JSON, not byte for byte"
    assert result.probes[3].verdict == "fail" and "additional properties" in result.probes[3].note.lower()
    assert result.verdict == "partial"
    result, _ = _run([*replies[4:], Reply(tool_calls=[("get_time", "{}")]), Reply(tool_calls=[("get_time", "{}")])])
    assert result.probes[1].verdict == "fail"
    assert result.probes[1].note == "joined argument deltas differ from the non-streamed arguments"


def test_http_400_on_tools_is_blocked_with_the_server_message():
    msg = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    result, _ = _run([Reply(status=400, error=msg)] * 2, modes=("auto",))
    assert result.verdict == "blocked"
    assert result.note == msg
    assert result.probes[0].note == msg


def test_a_blocked_mode_does_not_drag_down_the_modes_that_answer():
    msg = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    good = [Reply(tool_calls=[("record_reading", GOOD_RECORD)])] * 2 + [Reply(tool_calls=[("get_time", "{}")])] * 2
    result, _ = _run([Reply(status=400, error=msg)] * 2 + good, modes=("auto", "named"))
    assert result.verdict == "pass"
    assert result.conditions["verdict_auto"] == "blocked" and result.conditions["verdict_named"] == "pass"
    # the refusal says what the server lacks (the flags vLLM needs): the console shows the domain's note alone
    assert result.note == f"4/6 probes pass; blocked: auto ({msg})"


def test_recorded_smollm2_tool_outputs_are_judged_honestly():
    rec = json.loads((Path(__file__).parent / "recorded_smollm2.json").read_text())["tools"]
    expected = {"sensor": "A7", "value": 42, "valid": True, "note": None}

    def judge(key, tool="record_reading", exp=expected):
        r = rec[key]
        return judge_call(ChatReply(content=r["content"], tool_calls=r["tool_calls"]), tool, exp)

    assert judge("auto_record_reading")[0] == "fail"
    # named tool_choice without strict: the envelope is constrained, the arguments are not objects
    assert judge("named_record_reading")[:2] == (
        "fail",
        "arguments fail the schema: 'A7' is not of type 'object'",
    )
    assert judge("named_get_time", "get_time", {})[0] == "fail"
    # strict: typed and schema-valid (42 a number, true a boolean), but note "A7" instead of null
    assert judge("named_strict_record_reading")[0] == "partial"
    # strict zero-parameter tool: whitespace until max_tokens, so the hermes parser gives up
    verdict, note, *_ = judge("named_strict_get_time", "get_time", {})
    assert verdict == "fail" and "raw <tool_call> text" in note
    assert judge("named_strict_get_time_stream", "get_time", {})[0] == "fail"


def test_a_tool_call_written_as_json_text_in_content_is_named():
    # vLLM without --enable-auto-tool-choice: the model writes the call as JSON in a code fence (or bare), which
    # failed with only "no tool_calls; content=..." and no word of why
    call = '{"name": "get_time", "arguments": {}}'
    replies = [Reply(f"```json\n{call}\n```"), Reply(call), Reply("It is noon."), Reply('{"time": "noon"}')]
    result, _ = _run(replies)
    notes = [p.note for p in result.probes]
    assert result.verdict == "fail"
    assert all("a tool call written as JSON text in content" in n for n in notes[:2])
    assert not any("tool call written" in n for n in notes[2:]), notes  # plain text, JSON that names no function


def test_parallel_calls_judge_the_asked_one_wherever_it_is_and_name_the_others():
    # only the first of several calls was judged: the asked call in second place scored 'partial' and the
    # calls beside it went unnoticed
    expected = {"sensor": "A7", "value": 42, "valid": True, "note": None}

    def judge(*calls):
        reply = ChatReply(tool_calls=[{"name": n, "arguments": a} for n, a in calls])
        return judge_call(reply, "record_reading", expected)

    verdict, note, args, text = judge(("get_time", "{}"), ("record_reading", GOOD_RECORD))
    assert (verdict, args, text) == ("pass", expected, GOOD_RECORD)
    assert note == "1 more call(s): 'get_time' (reads only)"
    # an unasked second write, or a broken call beside the asked one, is something the client runs: partial
    verdict, note, *_ = judge(("record_reading", GOOD_RECORD), ("record_reading", GOOD_RECORD))
    assert (verdict, note) == ("partial", "1 more call(s): 'record_reading' (has side effects, not asked)")
    verdict, note, *_ = judge(("get_time", '{"tz"'), ("record_reading", GOOD_RECORD))
    assert verdict == "partial" and note.startswith("1 more call(s): 'get_time' (arguments are not JSON")
    # no call is the asked one: the best is judged (valid, other tool), the broken one named
    verdict, note, *_ = judge(("record_reading", "{"), ("get_time", "{}"))
    assert verdict == "partial" and note.startswith("valid call, but to 'get_time' instead of 'record_reading'; 1 more")


def test_parallel_calls_in_a_run_compare_the_asked_call_plain_and_streamed():
    pretty = GOOD_RECORD.replace(", ", ",\n  ")
    replies = [
        Reply(tool_calls=[("get_time", "{}"), ("record_reading", GOOD_RECORD)]),
        Reply(tool_calls=[("get_time", "{}"), ("record_reading", pretty)]),
        Reply(tool_calls=[("get_time", "{}")]),
        Reply(tool_calls=[("get_time", "{}")]),
    ]
    result, _ = _run(replies)
    assert [p.verdict for p in result.probes] == ["pass"] * 4, result.probes
    assert result.probes[0].note == "1 more call(s): 'get_time' (reads only)"
    assert result.probes[1].observed["joined_arguments"] == pretty
    assert result.probes[1].note == (
        "1 more call(s): 'get_time' (reads only); joined deltas equal the non-streamed arguments as JSON, "
        "not byte for byte"
    )
