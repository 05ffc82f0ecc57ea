"""Capability checks: the options a check run takes, and its verdicts per domain, each backed by probes.

A `CheckReport` holds one `CheckResult` per domain (chat, tool_calling, agent, long_context,
determinism); each result holds the `Probe`s its verdict was drawn from. Agent runs are kept one per
row (`AgentRun`) so the seed demo's table (runs, correct, right-filter, errors, median s, filters sent)
can be re-rendered from the stored report.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from onechip.schemas.bench import MAX_TOKENS, MAX_TURNS
from onechip.schemas.common import ResultModel, Said, StoredResult, StrictModel
from onechip.schemas.inputs import INT64_MAX

Verdict = Literal["pass", "partial", "fail", "blocked", "not_tested"]
Domain = Literal["chat", "tool_calling", "agent", "long_context", "determinism", "multimodal"]
ToolChoice = Literal["auto", "required", "named"]
AgentOutcome = Literal[
    "correct", "correct-no-call", "no-call", "not-quoted", "quoted-no-filter", "wrong-filter", "error"
]

# The most probes of one kind a check run sends (agent cases, runs of each, determinism prompts): the defaults are
# 1 to 3, and 1,000 at the default 180 s request timeout is up to 50 hours. Unbounded, `agent_cases: 10**9` built
# a billion cases in memory before the first request and `determinism_prompts: 10**9` never ended.
MAX_PROBES = 1000
# The longest request timeout a check takes: a day (CheckRequest.request_timeout_s's bound).
MAX_TIMEOUT_S = 86_400

#: The names `--only` accepts, mapped to the domain each one fills.
CHECK_NAMES: dict[str, Domain] = {
    "smoke": "chat",
    "tools": "tool_calling",
    "agent": "agent",
    "needle": "long_context",
    "determinism": "determinism",
    "multimodal": "multimodal",
}


class CheckOptions(StrictModel):
    """Knobs of one `onechip check` run. Defaults are sized for a slow CPU engine (a few tokens/s)."""

    request_timeout_s: float = Field(
        default=180.0, gt=0, le=MAX_TIMEOUT_S, description="Timeout of one HTTP request, seconds."
    )
    tool_choice: list[ToolChoice] = Field(
        default=["auto", "named"],
        description="tool_choice modes the tool_calling probe tries: 'auto', 'required', or 'named' "
        "(forces the expected function; vLLM serves 'required' and named choices with structured decoding).",
    )
    strict_tools: bool = Field(
        default=False,
        description="Send each tool with the OpenAI field `strict: true`. vLLM 0.32 then pins the argument "
        "schema in its structural tag; the server-wide equivalent is `--tool-strict-level parameter`.",
    )
    tool_max_tokens: int = Field(
        default=96, ge=1, le=MAX_TOKENS, description="max_tokens of each tool-calling request."
    )
    agent_cases: int = Field(
        default=1,
        ge=0,
        le=MAX_PROBES,
        description="Agent cases to run: the seed case first, then the seeded phrasings.",
    )
    agent_runs: int = Field(
        default=1, ge=1, le=MAX_PROBES, description="Runs of each agent case (the seed demo ran 3)."
    )
    agent: Literal["loop", "adk"] = Field(
        default="loop",
        description="Agent stack of the agent check: 'loop' (onechip's chat-completions loop) or 'adk' (the "
        "seed's google-adk LlmAgent + LiteLlm + McpToolset; needs the onechip[adk] extra).",
    )
    agent_tool_choice: Literal["auto", "required-first"] = Field(
        default="auto",
        description="tool_choice of the agent's turns: 'auto' throughout (the seed demo), or 'required' on "
        "the first turn and 'auto' after it.",
    )
    agent_max_turns: int = Field(
        default=4, ge=1, le=MAX_TURNS, description="Model turns per agent run before it is cut off."
    )
    agent_max_tokens: int = Field(default=96, ge=1, le=MAX_TOKENS, description="max_tokens of each agent model turn.")
    agent_seed: int = Field(default=0, description="Seed of the generated agent cases and id tables.")
    needle_lengths: list[Annotated[int, Field(ge=1, le=MAX_TOKENS)]] = Field(
        default=[1000],
        description="Needle prompt lengths in tokens, as the server counts them (chat template).",
    )
    needle_depths: list[Annotated[float, Field(ge=0, le=1)]] = Field(
        default=[0.5], description="Depths (0..1) at which the passphrase is buried in each needle prompt."
    )
    needle_max_tokens: int = Field(
        default=32,
        ge=1,
        le=MAX_TOKENS,
        description="max_tokens of each needle answer (16 cut SmolLM2's 'violet-harbor-7341' off mid-word).",
    )
    kv_tokens: int | None = Field(
        default=None,
        ge=1,
        le=INT64_MAX,
        description="The engine's KV cache size in tokens, when known; caps needle lengths.",
    )
    max_model_len: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS, description="Max model length; None = read `max_model_len` from /v1/models."
    )
    over_limit: bool = Field(default=True, description="Send one prompt just over the limit; expect HTTP 400.")
    over_limit_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="How long the over-limit request may take before it counts as hanging.",
    )
    determinism_prompts: int = Field(default=2, ge=1, le=MAX_PROBES, description="Prompts sent twice at temperature 0.")
    determinism_max_tokens: int = Field(
        default=24, ge=1, le=MAX_TOKENS, description="max_tokens of each determinism request."
    )


class Probe(ResultModel):
    """One probe of a capability check: what came back against what was expected, its latency and verdict."""

    model_config = ConfigDict(validate_assignment=True)  # a note set after the fact is redacted too (Said)

    name: str = Field(description="What was probed, e.g. 'chat_nonempty' or 'needle_2000_d0.5'.")
    verdict: Verdict = Field(description="Verdict of this probe alone.")
    latency_ms: float | None = Field(default=None, description="Client-side wall time of the probe, ms.")
    observed: Any = Field(default=None, description="What came back (text, arguments, counts).")
    expected: Any = Field(default=None, description="What a correct endpoint returns.")
    note: Said = Field(default="", description="Why the verdict, in one line; server messages go here (redacted).")
    informational: bool = Field(
        default=False,
        description="True when the probe is reported but does not count toward the domain verdict.",
    )


class AgentRun(ResultModel):
    """One agent run: one question, the tool calls the model sent, the answer, and how it scored."""

    case: str = Field(description="Case id, e.g. 'seed' or 'at-least-110-3'.")
    run: int = Field(description="Run index within the case, from 1.")
    question: str = Field(description="The question the model was asked.")
    expected_count: int = Field(description="The true count over the hidden table.")
    true_filter: str = Field(description="The filter that selects exactly the asked ids.")
    filters: list[str] = Field(default_factory=list, description="`where` of each count_ids call sent.")
    tool_counts: list[int] = Field(default_factory=list, description="Counts the tool returned.")
    answer: str = Field(default="", description="The model's final text.")
    answer_number: int | None = Field(default=None, description="The number read from the answer.")
    correct: bool = Field(default=False, description="answer_number == expected_count.")
    right_filter: bool = Field(default=False, description="Some sent filter selects the true id set.")
    quoted: bool = Field(default=False, description="The answer quotes a count the tool returned.")
    outcome: AgentOutcome = Field(description="Classification of the run.")
    turns: int = Field(default=0, description="Model turns used.")
    duration_s: float = Field(default=0.0, description="Wall time of the run, seconds.")
    error: Said | None = Field(default=None, description="Why the run errored (HTTP, turn cap, MCP; redacted).")
    note: str = Field(default="", description="A caveat, e.g. a tool call that came back as text.")


class AgentTableRow(ResultModel):
    """The seed demo's summary table: `backend runs correct right-filter errors median-s filters-sent`."""

    runs: int = Field(description="Agent runs.")
    correct: int = Field(description="Runs whose answer equals the true count.")
    right_filter: int = Field(description="Runs that sent a filter equivalent to the true one.")
    errors: int = Field(description="Runs classified 'error'.")
    median_s: float | None = Field(default=None, description="Median wall time of a run, seconds.")
    filters_sent: list[str] = Field(default_factory=list, description="Distinct filters sent, first-seen order.")


class CheckResult(ResultModel):
    """The verdict of one capability domain (chat, tool calling, agent, needle, determinism) with its probes."""

    model_config = ConfigDict(validate_assignment=True)  # a note set after the fact is redacted too (Said)

    domain: Domain = Field(description="Capability domain.")
    verdict: Verdict = Field(description="Verdict of the domain, drawn from its non-informational probes.")
    conditions: dict[str, str] = Field(default_factory=dict, description="What the verdict depends on.")
    probes: list[Probe] = Field(default_factory=list, description="The probes behind the verdict.")
    note: Said = Field(default="", description="One line on the verdict (server message when blocked; redacted).")
    agent_runs: list[AgentRun] = Field(default_factory=list, description="Agent domain: one row per run.")
    agent_table: AgentTableRow | None = Field(default=None, description="Agent domain: the seed's table.")
    transcript_path: str | None = Field(default=None, description="Saved transcripts (JSON), when out_dir was given.")

    def probes_passed(self) -> str:
        """'passed/counted' over the probes that count toward the verdict (informational ones do not), with
        the partial ones named: '0/8, 5 partial' is why a domain reads partial with no probe passed. The one
        count the console table and the report both show."""
        counted = [p for p in self.probes if not p.informational]
        text = f"{sum(p.verdict == 'pass' for p in counted)}/{len(counted)}"
        partial = sum(p.verdict == "partial" for p in counted)
        return f"{text}, {partial} partial" if partial else text


class CheckReport(StoredResult):
    """What `onechip check` writes (checks.json): the endpoint and model checked, the options, one result per domain."""

    model_config = ConfigDict(validate_assignment=True)  # a note set after the fact is redacted too (Said)

    base_url: str = Field(description="The endpoint checked.")
    model: str = Field(description="The served model name checked.")
    started_at: str | None = Field(default=None, description="UTC start time, ISO 8601.")
    duration_s: float | None = Field(default=None, description="Wall time of the whole check run, seconds.")
    options: dict[str, Any] = Field(default_factory=dict, description="The resolved CheckOptions.")
    results: list[CheckResult] = Field(default_factory=list, description="One result per domain checked.")
    interrupted: bool = Field(
        default=False, description="True when Ctrl-C stopped the run: `results` holds the domains that finished."
    )
    endpoint_failing: Said | None = Field(
        default=None,
        description="Set when the server failed every request the probes sent after /v1/models (each a 5xx or "
        "no answer): the verdicts (all fail) say nothing of the model, and `check` exits 6 with this line.",
    )
    server_busy: Said | None = Field(
        default=None,
        description="Set when requests the probes sent were answered 429 or 503 (busy) on every try, Retry-After "
        "honoured: their probes are not_tested, not failed; `check` exits 6 with this line when no other verdict "
        "failed.",
    )
