"""Tool-calling probe: does the endpoint return well-formed, well-typed OpenAI `tool_calls`?

For each tool_choice mode (auto, required, named) and each of two tools, one non-streamed request
and one streamed request:

- `record_reading(sensor: string, value: number, valid: boolean, note: string|null)`: the call must
  exist, name a tool that was offered, parse as JSON and validate against the tool's JSON schema
  (42 is a number, not "42"; true is a boolean; null is null), and carry the asked values;
- `get_time()` with no parameters: the arguments must be `{}`;
- parallel calls: the asked call may be any of them; the others are named in the note, and one that is broken or
  writes (`record_reading` unasked) makes a pass 'partial' (see `judge_call`);
- streamed: the joined argument deltas must equal the non-streamed arguments byte for byte;
- finish_reason: 'tool_calls' for calls under auto or required, as OpenAI and vLLM send it ('stop' under required
  passes, said: vLLM before 0.12.0 sends it); 'length' (cut at
  max_tokens) named first in a failed probe's note (see `finish_judged`).

HTTP 400 on a request with `tools` (server started without tool support) → `blocked` with the
server's message; a mode that is blocked does not drag down the others.
"""

from __future__ import annotations

import json
import re
from typing import Any

from onechip.checks.verdicts import combine, failed
from onechip.errors import EndpointError, EndpointStatusError
from onechip.schemas.checks import CheckOptions, CheckResult, Probe, ToolChoice, Verdict
from onechip.vllm.wire import ChatReply, WireClient, chat_body, user_message

RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sensor": {"type": "string", "description": "Sensor id, e.g. A7."},
        "value": {"type": "number", "description": "The reading."},
        "valid": {"type": "boolean", "description": "Whether the reading passed calibration."},
        "note": {"type": ["string", "null"], "description": "Free text, or null."},
    },
    "required": ["sensor", "value", "valid", "note"],
    "additionalProperties": False,
}
TIME_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "record_reading",
            "description": "Record one sensor reading.",
            "parameters": RECORD_SCHEMA,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Current time on the server.",
            "parameters": TIME_SCHEMA,
        },
    },
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}

# (tool, prompt, expected arguments)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "record_reading",
        'Call record_reading for this reading: sensor "A7", value 42, valid true, note null.',
        {"sensor": "A7", "value": 42, "valid": True, "note": None},
    ),
    ("get_time", "What time is it on the server? Call get_time.", {}),
]


def offered_tools(strict: bool) -> list[dict[str, Any]]:
    """TOOLS as sent; with `strict`, each function carries the OpenAI field `strict: true`."""
    if not strict:
        return TOOLS
    return [{**t, "function": {**t["function"], "strict": True}} for t in TOOLS]


def _tool_choice(mode: ToolChoice, tool: str) -> Any:
    if mode == "named":
        return {"type": "function", "function": {"name": tool}}
    return mode


SIDE_EFFECT_TOOLS = frozenset({"record_reading"})  # writes a record; get_time only reads
RANK: dict[Verdict, int] = {"pass": 2, "partial": 1, "fail": 0}


def judge_call(reply: ChatReply, tool: str, expected: dict[str, Any]) -> tuple[Verdict, str, Any, str | None]:
    """Judge one reply's tool calls → (verdict, note, parsed arguments or None, arguments text or None) of the
    call that best answers the probe (the first of the best, so a lone call is judged as it is).

    Each probe asks for one call; parallel calls are judged each (see `_judge_one`) and the asked one need not be
    first. Every other call is named in the note; an agent's client runs them all, so an extra call that is broken
    or calls a tool with side effects (SIDE_EFFECT_TOOLS: a spurious or duplicate write) makes a pass 'partial',
    while an extra read-only call is only noted.
    """
    if not reply.tool_calls:
        raw, thought = reply.content.strip(), reply.reasoning.strip()
        only_thought = f"answered in reasoning only: {thought[:120]!r}, finish_reason {reply.finish_reason!r}"
        said = f" ({only_thought})" if thought and not raw else ""
        return "fail", f"no tool_calls; content={raw[:120]!r}{_text_call_hint(raw)}{said}", None, None
    judged = [_judge_one(call, tool, expected) for call in reply.tool_calls]
    best = max(range(len(judged)), key=lambda i: RANK[judged[i][0]])
    verdict, note, args = judged[best]
    extras = [(c.get("name"), j) for i, (c, j) in enumerate(zip(reply.tool_calls, judged, strict=True)) if i != best]
    if extras:
        also = "; ".join(_extra_note(name, v, n) for name, (v, n, _) in extras)
        note = "; ".join(filter(None, [note, f"{len(extras)} more call(s): {also}"]))
        if verdict == "pass" and any(v == "fail" or name in SIDE_EFFECT_TOOLS for name, (v, _, _) in extras):
            verdict = "partial"
    return verdict, note, args, reply.tool_calls[best].get("arguments")


def _extra_note(name: Any, verdict: Verdict, note: str) -> str:
    """How a call beside the judged one reads in the note."""
    if verdict == "fail":
        return f"{name!r} ({note})"
    return f"{name!r} ({'has side effects, not asked' if name in SIDE_EFFECT_TOOLS else 'reads only'})"


def _judge_one(call: dict[str, Any], tool: str, expected: dict[str, Any]) -> tuple[Verdict, str, Any]:
    """Judge one tool call → (verdict, note, parsed arguments or None).

    fail: unknown name, arguments not JSON, or not valid against the tool's schema.
    partial: valid but for another tool or with other values. pass: the asked call, exact values.
    """
    import jsonschema  # ~0.13 s: only when a reply is judged, not on every CLI start

    name, args_text = call.get("name"), call.get("arguments")
    if name not in SCHEMAS:
        return "fail", f"tool {name!r} was not offered", None
    if args_text is None or args_text == "":
        return "fail", f"arguments are {args_text!r}, expected a JSON object (at least '{{}}')", None
    try:
        args = json.loads(args_text)
    except json.JSONDecodeError as exc:
        return "fail", f"arguments are not JSON: {exc.msg} in {args_text[:120]!r}", None
    try:
        jsonschema.validate(args, SCHEMAS[name])
    except jsonschema.ValidationError as exc:
        return "fail", f"arguments fail the schema: {exc.message}", args
    if name != tool:
        return "partial", f"valid call, but to {name!r} instead of {tool!r}", args
    if not _same_typed(args, expected):
        return "partial", "valid against the schema, but not the asked values", args
    return "pass", "", args


FENCE = re.compile(r"^```[\w-]*\s*(.*?)\s*```$", re.S)  # a Markdown code fence around the whole answer


def _text_call_hint(content: str) -> str:
    """Why a reply without tool_calls failed when its content is a tool call written as text: Hermes `<tool_call>`
    tags, or a JSON object naming a function (bare or in a code fence), as a model answers when the server parses
    no tool calls out of its text (vLLM started without --enable-auto-tool-choice --tool-call-parser); '' else."""
    if "<tool_call>" in content:
        return " (raw <tool_call> text in content: the server's tool parser did not parse it)"
    fenced = FENCE.match(content)
    try:
        obj = json.loads(fenced.group(1) if fenced else content)
    except json.JSONDecodeError:
        return ""
    if isinstance(obj, dict) and isinstance(obj.get("name") or obj.get("function"), str | dict):
        return (
            " (a tool call written as JSON text in content: the server parsed no tool_calls out of it; vLLM needs "
            "--enable-auto-tool-choice and the --tool-call-parser of this model)"
        )
    return ""


def _same_typed(a: Any, b: Any) -> bool:
    """Equality that keeps JSON types apart (True != 1, 42 == 42.0)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_typed(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_typed(x, y) for x, y in zip(a, b, strict=True))
    return a == b and (a is None) == (b is None)


# vLLM before 0.12.0 sent 'tool_calls' only for calls its auto tool parser found (auto_tools_called in
# vllm/entrypoints/openai/serving_chat.py, 0.8.5 - 0.11.0 sdists): a call under tool_choice 'required' finished 'stop',
# plain, and streamed too before 0.11.0 (tools_streamed); 0.12.0 sends 'tool_calls' for it (is_finish_reason_tool_calls)
REQUIRED_STOP = "vLLM before 0.12.0 sends 'stop' for calls under tool_choice required"


def finish_judged(
    mode: ToolChoice, max_tokens: int, reply: ChatReply, verdict: Verdict, note: str, args: Any, args_text: str | None
) -> tuple[Verdict, str, Any, str | None]:
    """judge_call's answer read with the reply's finish_reason. 'length' on a reply that did not pass, with a call or
    text in it: the note says first that it was cut at `max_tokens` (what broke the call, not the parser). Else a
    pass made 'partial' when calls under tool_choice auto or required did not finish with 'tool_calls': OpenAI's API
    sends it for those and 'stop' for a named choice (so says vLLM's chat_completion/serving.py, which does the same),
    and a client whose loop runs the calls on 'tool_calls' would not run them. A call under 'required' that finished
    'stop' stays a pass, said in the note: every vLLM before 0.12.0 sends that (REQUIRED_STOP)."""
    if reply.finish_reason == "length" and verdict != "pass" and (reply.tool_calls or reply.content.strip()):
        return verdict, f"cut at max_tokens {max_tokens} (finish_reason 'length'); {note}", args, args_text
    if mode == "named" or not reply.tool_calls or reply.finish_reason == "tool_calls":
        return verdict, note, args, args_text
    required_stop = mode == "required" and reply.finish_reason == "stop"  # what vLLM sent before 0.12.0: no defect
    why = REQUIRED_STOP if required_stop else "what OpenAI and vLLM send for auto or required calls"
    said = (
        f"finish_reason {reply.finish_reason!r}, not 'tool_calls' ({why}; a client that runs calls on 'tool_calls' "
        "would not run these)"
    )
    verdict = "partial" if verdict == "pass" and not required_stop else verdict
    return verdict, "; ".join(filter(None, [said, note])), args, args_text


def stream_vs_plain(s_parsed: Any, plain_args: str | None, s_verdict: Verdict, s_note: str) -> tuple[Verdict, str]:
    """Verdict of streamed arguments whose joined text differs from the non-streamed text.

    Equal as JSON but not byte for byte (vLLM 0.32's hermes parser re-serializes the non-streamed
    arguments compactly, while the stream passes the model's own whitespace through): the streamed
    verdict stands, with a note; a client that joins the deltas and parses them gets the same call.
    Different as JSON (or non-streamed arguments missing/unparsable): fail.
    """
    try:
        same_json = plain_args is not None and _same_typed(json.loads(plain_args), s_parsed)
    except json.JSONDecodeError:
        same_json = False
    if same_json:
        return s_verdict, "; ".join(
            filter(None, [s_note, "joined deltas equal the non-streamed arguments as JSON, not byte for byte"])
        )
    return "fail", "joined argument deltas differ from the non-streamed arguments"


def _probe_mode(ep: WireClient, model: str, mode: ToolChoice, opts: CheckOptions) -> list[Probe]:
    probes: list[Probe] = []
    for tool, prompt, expected in CASES:
        body = chat_body(
            model,
            user_message(prompt),
            opts.tool_max_tokens,
            tools=offered_tools(opts.strict_tools),
            tool_choice=_tool_choice(mode, tool),
        )
        prefix = f"{mode}_{tool}"
        try:
            plain = ep.chat(body)
        except EndpointStatusError as exc:
            # a 400 refuses tools; a busy server (429/503 after its retries) told nothing of the model: not_tested
            verdict: Verdict = "blocked" if exc.status_code == 400 else failed(exc)
            probes.append(Probe(name=f"{prefix}_call", verdict=verdict, note=exc.server_message))
            continue
        except EndpointError as exc:
            probes.append(Probe(name=f"{prefix}_call", verdict=failed(exc), note=str(exc)))
            continue
        verdict, note, _, plain_args = finish_judged(
            mode, opts.tool_max_tokens, plain, *judge_call(plain, tool, expected)
        )
        probes.append(
            Probe(
                name=f"{prefix}_call",
                verdict=verdict,
                latency_ms=round(plain.latency_ms, 1),
                observed={
                    "tool_calls": plain.tool_calls,
                    "content": plain.content[:300],
                    "finish_reason": plain.finish_reason,
                },
                expected={"name": tool, "arguments": expected},
                note=note,
            )
        )
        try:
            streamed = ep.chat_stream(body)
        except EndpointError as exc:
            probes.append(Probe(name=f"{prefix}_stream", verdict=failed(exc), note=str(exc)))
            continue
        s_verdict, s_note, s_parsed, s_args = finish_judged(
            mode, opts.tool_max_tokens, streamed, *judge_call(streamed, tool, expected)
        )
        if s_verdict in ("pass", "partial") and s_args != plain_args:
            s_verdict, s_note = stream_vs_plain(s_parsed, plain_args, s_verdict, s_note)
        probes.append(
            Probe(
                name=f"{prefix}_stream",
                verdict=s_verdict,
                latency_ms=round(streamed.latency_ms, 1),
                observed={"joined_arguments": s_args, "content": streamed.content[:300]},
                expected={"joined_arguments": plain_args},
                note=s_note,
            )
        )
    return probes


def _open_note(probes: list[Probe], open_probes: list[Probe]) -> str:
    """'P/N probes pass' over every probe, then the note of the first of the modes not blocked that did not pass, its
    name after it: the console shows a domain's note alone (its first 90 characters), and it must say what the
    server did."""
    passed = sum(p.verdict == "pass" for p in probes)
    note = f"{passed}/{len(probes)} probes pass"
    first = next((p for p in open_probes if p.verdict not in ("pass", "blocked")), None)
    if first is not None:
        note += f"; first {'failure' if first.verdict == 'fail' else first.verdict}: {first.note[:200]} ({first.name})"
    return note


def check_tools(ep: WireClient, model: str, opts: CheckOptions) -> CheckResult:
    """Domain `tool_calling`. Verdict over the modes that were not blocked; all blocked → blocked."""
    by_mode = {mode: _probe_mode(ep, model, mode, opts) for mode in opts.tool_choice}
    probes = [p for ps in by_mode.values() for p in ps]
    mode_verdicts = {mode: combine(ps) for mode, ps in by_mode.items()}
    open_modes = [m for m, v in mode_verdicts.items() if v != "blocked"]
    verdict: Verdict
    if not open_modes:
        blocked = next((p for p in probes if p.verdict == "blocked"), None)
        verdict, note = "blocked", blocked.note if blocked else "no tool_choice mode tried"
        if not probes:
            verdict = "not_tested"
    else:
        verdict = combine(p for m in open_modes for p in by_mode[m])
        note = _open_note(probes, [p for m in open_modes for p in by_mode[m]])
        blocked_modes = [m for m in mode_verdicts if m not in open_modes]
        if blocked_modes:  # the server's refusal says what it lacks (vLLM: the flags to start it with)
            refused = next((p.note for m in blocked_modes for p in by_mode[m] if p.verdict == "blocked"), "")
            note += f"; blocked: {', '.join(blocked_modes)}" + (f" ({refused})" if refused else "")
    conditions = {
        "tool_choice": ",".join(opts.tool_choice),
        "strict_tools": str(opts.strict_tools).lower(),
        "temperature": "0",
        **{f"verdict_{m}": v for m, v in mode_verdicts.items()},
    }
    return CheckResult(domain="tool_calling", verdict=verdict, conditions=conditions, probes=probes, note=note)
