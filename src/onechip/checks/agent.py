"""Agent probe: a model answers counting questions by calling `count_ids` on an MCP server over stdio.

Reproduces the seed demo (article-zh-v5e-v6e-gemma4-survey, step 1): ids 0, 2, 3, 20, 21, 22, 23,
10, 11, 12, 13; "how many are >= 10?"; true answer 8; Gemma 4 E2B on a v5e sent `id >= 10` and
answered 8 in 3/3 runs, median 0.51 s. The model never sees the table: the checks' `vllm.wire.WireClient`
talks to the endpoint, an MCP `ClientSession` over stdio runs `python -m onechip.checks.mcp_server`, and the
loop feeds tool results back until the model answers or the turn cap is hit. The MCP SDK is imported when
the agent check runs, not when the package loads (it costs ~0.35 s of every CLI start otherwise).

Each run is scored on the filter it sent and the number it reported, then classified:

    error            the run broke: HTTP error, MCP failure, or the turn cap was hit
    correct-no-call  right number, no tool call (a guess)
    no-call          no tool call, wrong or no number
    correct          right number from a call with an equivalent filter
    not-quoted       the answer's number is none of the counts the tool returned
    quoted-no-filter the answer quotes the count of a call with an empty filter (the whole table)
    wrong-filter     the answer quotes the count of a call whose filter selects other ids
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onechip.aio import run_to_end
from onechip.checks.id_table import count_ids, equivalent
from onechip.errors import EndpointBusyError, EndpointError, EndpointStatusError, MissingDependencyError
from onechip.paths import write_text_atomic
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas.checks import AgentOutcome, AgentRun, AgentTableRow, CheckOptions, CheckResult, Probe, Verdict
from onechip.vllm.wire import ChatReply, WireClient, chat_body

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

SEED_IDS = [0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13]  # the seed demo's table, in its order
SYSTEM_PROMPT = (
    "You answer questions about a hidden table of integer ids. You cannot see the table. "
    "Call the count_ids tool with a filter such as 'id < 5', then answer with the count it returned."
)
# (case name, question phrase, true filter); {t}, {a}, {b} are filled per case
PHRASINGS: list[tuple[str, str, str]] = [
    ("at-least", "at least {t}", "id >= {t}"),
    ("or-more", "{t} or more", "id >= {t}"),
    ("no-less-than", "no less than {t}", "id >= {t}"),
    ("more-than", "more than {t}", "id > {t}"),
    ("under", "under {t}", "id < {t}"),
    ("at-most", "at most {t}", "id <= {t}"),
    ("between", "between {a} and {b} inclusive", "id between {a} and {b} inclusive"),
]
TABLE_SIZES = [11, 110, 330]


@dataclass
class AgentCase:
    name: str
    ids: list[int]
    question: str
    true_filter: str

    @property
    def expected(self) -> int:
        return count_ids(self.ids, self.true_filter)["count"]


@dataclass
class Transcript:
    messages: list[dict[str, Any]] = field(default_factory=list)
    filters: list[str] = field(default_factory=list)
    counts: list[tuple[str, int]] = field(default_factory=list)  # (where, count) of successful calls
    calls: int = 0
    tool_errors: list[str] = field(default_factory=list)  # "<tool>: <error text the model read>", one per failed call
    answer: str = ""
    reasoning: str = ""  # the last turn's reasoning (a reasoning parser's reasoning_content), kept for the note
    turns: int = 0
    error: str | None = None
    blocked: str | None = None  # the server's message when it refused `tools` with HTTP 400
    busy: bool = False  # the server stayed busy (429/503 after the client's busy retries): the run is not_tested

    def tool_failed(self, name: str, text: str) -> str:
        """Record a failed call of tool `name` in `tool_errors` (`text`: the error the model read, made to start
        with 'error' as MCP SDK's own 'Error executing tool ...' does); return that text. Both agent stacks call it."""
        text = text if text.lower().startswith("error") else "error: " + text
        self.tool_errors.append(f"{name}: {text}")
        return text


# How one case is run: (endpoint, model, case, runs, options, MCP server stderr log) -> scored runs.
CaseRunner = Callable[[WireClient, str, AgentCase, int, CheckOptions, Path | None], list[tuple[AgentRun, Transcript]]]


def seed_case() -> AgentCase:
    # The seed asked "有多少个 id 大于等于 10？用数字回答。" (greater than or equal to; answer with a number).
    question = "How many ids are greater than or equal to 10? Answer with a number."
    return AgentCase("seed", list(SEED_IDS), question, "id >= 10")


def make_cases(n: int, seed: int = 0) -> list[AgentCase]:
    """The seed case, then phrasings × table sizes (11, 110, 330), seeded. `n` cases in all."""
    cases = [seed_case()][:n]
    for i in range(1, n):
        key, phrase, filt = PHRASINGS[(i - 1) % len(PHRASINGS)]
        size = TABLE_SIZES[(i - 1) % len(TABLE_SIZES)]
        rng = random.Random(seed * 100_003 + i)
        ids = rng.sample(range(size * 3), size)
        ordered = sorted(ids)
        a_i, b_i = sorted(rng.sample(range(1, size - 1), 2))
        t, a, b = ordered[a_i], ordered[a_i], ordered[b_i]
        q = f"How many ids are {phrase.format(t=t, a=a, b=b)}? Answer with a number."
        cases.append(AgentCase(f"{key}-{size}-{i}", ids, q, filt.format(t=t, a=a, b=b)))
    return cases


def answer_number(answer: str, question: str) -> int | None:
    """The number an answer reports: the first integer that is not one of the question's own numbers
    (so "There are 8 ids >= 10" reads 8), else the first integer, else None."""
    nums = [int(x) for x in re.findall(r"(?<![\w.])\d+(?![\w])", answer)]
    asked = {int(x) for x in re.findall(r"\d+", question)}
    fresh = [x for x in nums if x not in asked]
    found = fresh or nums
    return found[0] if found else None


CALL_AS_TEXT = re.compile(r"count_ids|\"where\"\s*:|<tool_call>|\[TOOL_CALLS\]")
TEXT_CALL_NOTE = "the answer looks like a tool call sent as text (tool-call parser mismatch on the server?)"


def score(case: AgentCase, run: int, tr: Transcript, duration_s: float) -> AgentRun:
    """Score one transcript against its case; see the module docstring for the outcome classes. A run that made no
    call and answered with what reads as one (CALL_AS_TEXT) is noted TEXT_CALL_NOTE, whichever agent stack ran."""
    expected = case.expected
    number = answer_number(tr.answer, case.question) if not tr.error else None
    counts = [c for _, c in tr.counts]
    right_filter = any(equivalent(f, case.true_filter, case.ids) for f in tr.filters)
    correct = number == expected
    quoted = number is not None and number in counts
    outcome: AgentOutcome
    if tr.error:
        outcome = "error"
    elif tr.calls == 0:
        outcome = "correct-no-call" if correct else "no-call"
    elif correct and right_filter:
        outcome = "correct"
    elif not quoted:
        outcome = "not-quoted"
    elif any(c == number and not w.strip() for w, c in tr.counts):
        outcome = "quoted-no-filter"
    else:
        outcome = "wrong-filter"
    return AgentRun(
        case=case.name,
        run=run,
        question=case.question,
        expected_count=expected,
        true_filter=case.true_filter,
        filters=list(tr.filters),
        tool_counts=counts,
        answer=tr.answer,
        answer_number=number,
        correct=correct,
        right_filter=right_filter,
        quoted=quoted,
        outcome=outcome,
        note=_run_note(tr),
        turns=tr.turns,
        duration_s=round(duration_s, 3),
        error=tr.error,
    )


def _run_note(tr: Transcript) -> str:
    """TEXT_CALL_NOTE for a call sent as text; the tool errors the model read (the first named); an answer given in
    reasoning only; else ''."""
    if tr.calls == 0 and not tr.error and CALL_AS_TEXT.search(tr.answer):
        return TEXT_CALL_NOTE
    if tr.tool_errors:
        return f"{len(tr.tool_errors)}/{tr.calls} tool calls failed, first: {tr.tool_errors[0][:200]}"
    if not tr.error and not tr.answer.strip() and tr.reasoning.strip():  # scored on content, what a user is shown
        return f"answered in reasoning only: {tr.reasoning.strip()[:200]!r}"
    return ""


def table(runs: list[AgentRun]) -> AgentTableRow:
    """The seed's table row: runs, correct, right-filter, errors, median s, filters sent."""
    sent: list[str] = []
    for r in runs:
        for f in r.filters:
            if f not in sent:
                sent.append(f)
    return AgentTableRow(
        runs=len(runs),
        correct=sum(r.correct for r in runs),
        right_filter=sum(r.right_filter for r in runs),
        errors=sum(r.outcome == "error" for r in runs),
        median_s=round(statistics.median(r.duration_s for r in runs), 3) if runs else None,
        filters_sent=sent,
    )


def _mcp_tools(listed: Any, strict: bool) -> list[dict[str, Any]]:
    """The MCP server's tools as OpenAI `tools` entries (with `strict: true` when asked)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description or "",
                "parameters": t.input_schema,
                **({"strict": True} if strict else {}),
            },
        }
        for t in listed.tools
    ]


def _assistant_message(reply: ChatReply) -> dict[str, Any]:
    """The assistant turn that asked for `reply`'s tool calls, as the next request must replay it."""
    return {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in reply.tool_calls
        ],
    }


async def _agent_turns(
    session: ClientSession,
    ep: WireClient,
    model: str,
    case: AgentCase,
    opts: CheckOptions,
    tr: Transcript,
) -> None:
    tools = _mcp_tools(await session.list_tools(), opts.strict_tools)
    tr.messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": case.question}]
    for turn in range(opts.agent_max_turns):
        tr.turns += 1
        forced = turn == 0 and opts.agent_tool_choice == "required-first"
        body = chat_body(
            model,
            list(tr.messages),
            opts.agent_max_tokens,
            tools=tools,
            tool_choice="required" if forced else "auto",
        )
        reply = await asyncio.to_thread(ep.chat, body)  # the MCP session's tasks keep running meanwhile
        if not reply.tool_calls:
            tr.answer, tr.reasoning = reply.content, reply.reasoning
            tr.messages.append({"role": "assistant", "content": tr.answer})
            return
        # a call sent without an id gets one: replayed as null, a server validating the next turn refuses it (400)
        for i, call in enumerate(reply.tool_calls):
            call["id"] = call["id"] or f"call_{turn}_{i}"
        tr.messages.append(_assistant_message(reply))
        for call in reply.tool_calls:
            tr.calls += 1
            content = await _call_tool(session, call["name"], call["arguments"], tr)
            tr.messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    tr.error = f"turn cap reached: no answer after {opts.agent_max_turns} model turns"


async def _call_tool(session: ClientSession, name: str, arguments: str | None, tr: Transcript) -> str:
    """Run one tool call on the MCP server; the returned text is what the model reads."""
    from mcp.shared.exceptions import MCPError

    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        return tr.tool_failed(name, f"error: arguments are not JSON ({exc.msg})")
    if not isinstance(args, dict):
        return tr.tool_failed(name, "error: arguments must be a JSON object")
    if name == "count_ids" and isinstance(args.get("where"), str):
        tr.filters.append(args["where"])
    try:
        result = await session.call_tool(name, args)
    except MCPError as exc:  # a protocol-level refusal: the model reads it like a tool error
        return tr.tool_failed(name, f"error: {exc}")
    text = "\n".join(getattr(b, "text", "") for b in result.content)
    data = result.structured_content
    if isinstance(data, dict) and "result" in data and isinstance(data["result"], dict):
        data = data["result"]
    if not result.is_error and isinstance(data, dict) and isinstance(data.get("count"), int):
        tr.counts.append((str(data.get("where", "")), data["count"]))
    if result.is_error:  # the SDK's text already reads "Error executing tool count_ids: ..."
        return tr.tool_failed(name, text)
    return text or json.dumps(data)


def _mcp_client() -> tuple[Any, Any, Any]:
    """(ClientSession, StdioServerParameters, stdio_client) from the MCP SDK; MissingDependencyError if absent."""
    try:
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client
    except ImportError as exc:
        raise MissingDependencyError(
            f"the agent check needs the MCP SDK ({exc.name or 'mcp'} is missing): pip install 'mcp>=2.3,<3', "
            "or leave `agent` out of --only"
        ) from None
    return ClientSession, StdioServerParameters, stdio_client


async def run_case(
    ep: WireClient, model: str, case: AgentCase, runs: int, opts: CheckOptions, errlog_path: Path | None = None
) -> list[tuple[AgentRun, Transcript]]:
    """Run `case` `runs` times against `ep`'s server, with one MCP server (stdio subprocess) for the case.

    Raises MissingDependencyError when the MCP SDK is not installed."""
    session_cls, params_cls, stdio_client = _mcp_client()
    params = params_cls(
        command=sys.executable,
        args=["-m", "onechip.checks.mcp_server", "--ids", ",".join(map(str, case.ids))],
    )
    out: list[tuple[AgentRun, Transcript]] = []
    with open(errlog_path or os.devnull, "a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            session_cls(read, write) as session,
        ):
            await session.initialize()
            for run in range(1, runs + 1):
                tr = Transcript()
                t0 = time.perf_counter()
                try:
                    await _agent_turns(session, ep, model, case, opts, tr)
                except EndpointBusyError as exc:  # nothing is known of the answer it would have given
                    tr.error, tr.busy = str(exc), True
                except EndpointStatusError as exc:
                    if exc.status_code == 400 and tr.turns == 1:  # it refused `tools`: blocked, not a model error
                        tr.error = tr.blocked = exc.server_message
                    else:
                        tr.error = str(exc)
                except EndpointError as exc:
                    tr.error = str(exc)
                out.append((score(case, run, tr, time.perf_counter() - t0), tr))
    return out


def run_case_loop(
    ep: WireClient, model: str, case: AgentCase, runs: int, opts: CheckOptions, errlog_path: Path | None = None
) -> list[tuple[AgentRun, Transcript]]:
    """`run_case` from synchronous code: the OpenAI-SDK-style loop (the default agent)."""
    return run_to_end(run_case(ep, model, case, runs, opts, errlog_path))


def _run_cases(
    ep: WireClient, model: str, opts: CheckOptions, out_dir: Path | None, on_progress: ProgressFn, runner: CaseRunner
) -> tuple[list[AgentCase], list[tuple[AgentRun, Transcript]], str | None]:
    """(cases, every run with its transcript, the MCP failure that stopped them or None)."""
    cases = make_cases(opts.agent_cases, opts.agent_seed)
    results: list[tuple[AgentRun, Transcript]] = []
    errlog = out_dir / "mcp_server.log" if out_dir else None
    for i, case in enumerate(cases):
        on_progress(ProgressEvent("check", f"agent: case {i + 1}/{len(cases)} ({case.name})", done=i, total=len(cases)))
        try:
            results += runner(ep, model, case, opts.agent_runs, opts, errlog)
        except (OSError, RuntimeError, ExceptionGroup) as exc:  # MCP server failed to start or broke
            return cases, results, f"MCP session failed: {exc!r}"[:500]
    return cases, results, None


AGENT_STACKS = {
    "loop": "onechip's chat-completions loop + MCP ClientSession (stdio)",
    "adk": "google-adk LlmAgent + LiteLlm(hosted_vllm) + McpToolset (stdio), streaming SSE",
}
_TOKEN_METRICS = ("vllm:prompt_tokens_total", "vllm:generation_tokens_total")


def _served_tokens(ep: WireClient) -> dict[str, float] | None:
    """The server's prompt/generation token counters from /metrics (None when it serves none): the token
    count of agent runs, since streamed usage does not reach ADK's events."""
    try:
        metrics = ep.metrics()
    except EndpointError:
        return None
    return {name: metrics[name] for name in _TOKEN_METRICS if name in metrics} or None


def _token_delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, str]:
    """{'prompt_tokens': ..., 'generation_tokens': ...} spent on the server between two readings."""
    if not before or not after:
        return {}
    return {
        name.removeprefix("vllm:").removesuffix("_total"): str(int(after[name] - before[name]))
        for name in _TOKEN_METRICS
        if name in before and name in after
    }


def _probe(r: AgentRun, tr: Transcript) -> Probe:
    return Probe(
        name=f"{r.case}#{r.run}",
        verdict="not_tested" if tr.busy else "pass" if r.outcome == "correct" else "fail",
        latency_ms=round(r.duration_s * 1000, 1),
        observed={
            "outcome": r.outcome,
            "filters": r.filters,
            "answer": r.answer[:200],
            "tool_counts": r.tool_counts,
            "error": r.error,
        },
        expected={"count": r.expected_count, "filter": r.true_filter},
        note=r.outcome + (f": {r.error}" if r.error else "") + (f" ({r.note})" if r.note else ""),
    )


def _verdict(
    results: list[tuple[AgentRun, Transcript]], row: AgentTableRow, infra_error: str | None
) -> tuple[Verdict, str]:
    """(verdict, note): MCP failure → fail; every run refused with HTTP 400 → blocked; every run the server stayed
    busy for → not_tested (as checks.verdicts.failed); else by the outcomes of the runs the server answered, the note
    naming the first tool error and the first other run note (a call sent as text, an answer in reasoning only)."""
    runs = [r for r, tr in results if not tr.busy]
    blocked = [tr.blocked for _, tr in results if tr.blocked]
    if infra_error:
        return "fail", infra_error
    if runs and len(blocked) == len(runs):
        return "blocked", blocked[0] or ""
    if not runs:
        busy = [r.error for r, tr in results if tr.busy]
        return "not_tested", f"server busy on all {len(busy)} runs: {busy[-1]}" if busy else "no agent cases requested"
    n_ok = sum(r.outcome == "correct" for r in runs)
    verdict: Verdict = "pass" if n_ok == len(runs) else "fail" if n_ok == 0 else "partial"
    tally = Counter(r.outcome for r in runs)
    note = f"correct {row.correct}/{row.runs}, right filter {row.right_filter}/{row.runs}; " + ", ".join(
        f"{k} {v}" for k, v in tally.most_common()
    )
    errored = [tr.tool_errors[0] for _, tr in results if tr.tool_errors and not tr.busy]
    if errored:  # a right number after a failed call is a guess: say the call failed, and how
        note += f"; tool errors in {len(errored)}/{len(runs)} runs, first: {errored[0][:200]}"
    # the other run notes (a call sent as text, an answer in reasoning only) say what to fix, as the tool errors do
    other = [r.note for r, tr in results if r.note and not tr.tool_errors and not tr.busy]
    if other:
        note += f"; {len(other)}/{len(runs)} runs: {other[0][:200]}"
    n_busy = len(results) - len(runs)
    return verdict, note + (f"; {n_busy} not_tested (server busy)" if n_busy else "")


def check_agent(
    ep: WireClient,
    model: str,
    opts: CheckOptions,
    out_dir: Path | None = None,
    on_progress: ProgressFn = no_progress,
    runner: CaseRunner | None = None,
) -> CheckResult:
    """Domain `agent`: one probe per run (pass = outcome 'correct'), the runs and the seed's table.

    All runs refused with HTTP 400 → blocked (server message in `note`). Transcripts are written to
    `out_dir/agent_transcripts.json` when `out_dir` is given. Must not be called from a running event loop.
    Raises MissingDependencyError when the MCP SDK is not installed. `runner`: how one case is run
    (default: run_case_loop, the OpenAI-SDK-style loop; checks.adk_agent.run_case_adk for `--agent adk`).
    """
    tokens_before = _served_tokens(ep)
    cases, results, infra_error = _run_cases(ep, model, opts, out_dir, on_progress, runner or run_case_loop)
    runs = [r for r, _ in results]
    transcript_path = None
    if out_dir is not None:
        transcript_path = out_dir / "agent_transcripts.json"
        saved = [{"run": r.model_dump(), "messages": tr.messages} for r, tr in results]
        write_text_atomic(transcript_path, json.dumps(saved, indent=2, default=str) + "\n")
    row = table(runs)
    verdict, note = _verdict(results, row, infra_error)
    return CheckResult(
        domain="agent",
        verdict=verdict,
        probes=[_probe(r, tr) for r, tr in results],
        note=note,
        agent_runs=runs,
        agent_table=row,
        transcript_path=str(transcript_path) if transcript_path else None,
        conditions={
            "tool": "mcp count_ids (stdio)",
            "tool_choice": opts.agent_tool_choice,
            "strict_tools": str(opts.strict_tools).lower(),
            "max_turns": str(opts.agent_max_turns),
            "cases": str(len(cases)),
            "runs_per_case": str(opts.agent_runs),
            "agent": AGENT_STACKS[opts.agent],
            **_token_delta(tokens_before, _served_tokens(ep)),
        },
    )
