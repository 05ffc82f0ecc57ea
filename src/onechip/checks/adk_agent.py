"""The agent check with the seed's own agent stack: google-adk `LlmAgent` + `LiteLlm(model="hosted_vllm/...",
api_base=URL/v1)` + an `McpToolset` that starts our count_ids server (onechip.checks.mcp_server) over stdio,
as the survey's demo ends (article-zh-v5e-v6e-gemma4-survey). Each run is scored exactly like the
OpenAI-SDK loop in checks.agent (same cases, same `score`, same table).

Pitfalls handled (ADK / LiteLLM issue trackers):
- a tool-call parser mismatch on the server returns the call as text: the run scores as it reads (no
  call), and its `note` says the answer looks like a tool call sent as text;
- streaming needs `RunConfig(streaming_mode=SSE)`; streamed usage does not reach ADK events, so tokens come
  from the server's /metrics delta (vllm:prompt_tokens_total, vllm:generation_tokens_total) when served;
- LiteLLM 1.82.7 and 1.82.8 were compromised on PyPI: the `adk` extra excludes them.
google-adk and litellm are an optional extra (`pip install 'onechip[adk]'`), imported only here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from onechip.aio import run_to_end
from onechip.checks.agent import SYSTEM_PROMPT, AgentCase, Transcript, score
from onechip.errors import MissingDependencyError, redact
from onechip.schemas.checks import AgentRun, CheckOptions
from onechip.vllm.wire import BUSY_STATUSES, WireClient, api_key_from_env


def _adk() -> dict[str, Any]:
    """The ADK and MCP names this check uses; MissingDependencyError naming the extra when absent."""
    try:
        from google.adk.agents import LlmAgent
        from google.adk.agents.run_config import RunConfig, StreamingMode
        from google.adk.models.lite_llm import LiteLlm
        from google.adk.runners import InMemoryRunner
        from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
        from google.genai import types
        from mcp.client.stdio import StdioServerParameters
    except ImportError as exc:
        raise MissingDependencyError(
            f"--agent adk needs google-adk and litellm ({exc.name or 'google-adk'} is missing): "
            "pip install 'onechip[adk]'"
        ) from None
    return dict(LlmAgent=LlmAgent, RunConfig=RunConfig, StreamingMode=StreamingMode, LiteLlm=LiteLlm,
                InMemoryRunner=InMemoryRunner, McpToolset=McpToolset, StdioConnectionParams=StdioConnectionParams,
                types=types, StdioServerParameters=StdioServerParameters)  # fmt: skip


def build_agent(
    adk: dict[str, Any], base_root: str, model: str, ids: list[int], opts: CheckOptions, errlog: Any
) -> Any:
    """(agent, toolset): the seed's LlmAgent(LiteLlm hosted_vllm at base_root/v1) with the count_ids
    McpToolset (the caller closes the toolset)."""
    server = adk["StdioServerParameters"](
        command=sys.executable, args=["-m", "onechip.checks.mcp_server", "--ids", ",".join(map(str, ids))]
    )
    toolset = adk["McpToolset"](
        connection_params=adk["StdioConnectionParams"](server_params=server, timeout=60.0), errlog=errlog
    )
    llm = adk["LiteLlm"](
        model=f"hosted_vllm/{model}", api_base=f"{base_root}/v1", api_key=api_key_from_env(base_root) or "none",
        max_tokens=opts.agent_max_tokens, temperature=0.0, timeout=opts.request_timeout_s,
    )  # fmt: skip
    return adk["LlmAgent"](name="onechip_counter", model=llm, instruction=SYSTEM_PROMPT, tools=[toolset]), toolset


def _record(event: Any, tr: Transcript) -> None:
    """Fold one ADK event into the transcript: calls sent, counts returned, the final text. A partial event (SSE
    streaming: a piece of text, or of a call's arguments, `partial_args`) is skipped: the whole one follows it."""
    if getattr(event, "partial", False):
        return
    content = getattr(event, "content", None)
    for part in getattr(content, "parts", None) or []:
        call, response = getattr(part, "function_call", None), getattr(part, "function_response", None)
        if call is not None:
            tr.calls += 1
            args = dict(call.args or {})
            if call.name == "count_ids" and isinstance(args.get("where"), str):
                tr.filters.append(args["where"])
            tr.messages.append({"role": "assistant", "tool_call": {"name": call.name, "arguments": args}})
        elif response is not None:
            data = _structured(response.response)
            if (error := _call_error(response.response)) is not None:
                tr.tool_failed(str(response.name), error)
            elif isinstance(data, dict) and isinstance(data.get("count"), int):
                tr.counts.append((str(data.get("where", "")), data["count"]))
            tr.messages.append({"role": "tool", "name": response.name, "content": response.response})
        elif getattr(part, "text", None):
            tr.answer = part.text if getattr(event, "is_final_response", lambda: False)() else tr.answer
            tr.messages.append({"role": "assistant", "content": part.text})


def _call_error(response: Any) -> str | None:
    """The error text of a failed tool call's ADK function response, None for a result: an MCP CallToolResult dump
    with `isError` (its text blocks: the SDK's 'Error executing tool count_ids: ...'), or ADK's own
    `{"error": ...}` (google-adk 2.13 McpTool.run_async: an MCP-level failure, a rejected call)."""
    if not isinstance(response, dict):
        return None
    if isinstance(response.get("error"), str):
        return response["error"]
    if response.get("isError") or response.get("is_error"):
        blocks = response.get("content") or []
        return " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict)).strip() or "isError"
    return None


def _structured(response: Any) -> Any:
    """count_ids' {where, count, min, max} out of an ADK function response (an MCP CallToolResult dump)."""
    if not isinstance(response, dict):
        return None
    data = response.get("structuredContent") or response.get("structured_content") or response
    if isinstance(data, dict) and isinstance(data.get("result"), dict):
        data = data["result"]
    return data


async def _one_run(adk: dict[str, Any], agent: Any, case: AgentCase, opts: CheckOptions, tr: Transcript) -> None:
    runner = adk["InMemoryRunner"](agent=agent, app_name="onechip")
    session = await runner.session_service.create_session(app_name="onechip", user_id="onechip")
    message = adk["types"].Content(role="user", parts=[adk["types"].Part(text=case.question)])
    config = adk["RunConfig"](streaming_mode=adk["StreamingMode"].SSE, max_llm_calls=opts.agent_max_turns)
    tr.messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": case.question}]
    try:
        async for event in runner.run_async(
            user_id="onechip", session_id=session.id, new_message=message, run_config=config
        ):
            tr.turns += 1 if getattr(event, "author", "") == agent.name and not getattr(event, "partial", False) else 0
            if getattr(event, "error_message", None):
                tr.error = redact(str(event.error_message))[:500]
            _record(event, tr)
    except Exception as exc:  # noqa: BLE001 - ADK/LiteLLM raise their own trees; the run is scored 'error'
        tr.error = redact(f"{type(exc).__name__}: {exc}")[:500]  # LiteLLM's text holds the server's body as sent
        # LiteLLM's RateLimitError / ServiceUnavailableError carry the answer's status: a busy server is not_tested,
        # as in the loop (checks.verdicts.failed)
        tr.busy = getattr(exc, "status_code", None) in BUSY_STATUSES
    finally:
        await runner.close()


async def _run_case(
    adk: dict[str, Any], base_root: str, model: str, case: AgentCase, runs: int, opts: CheckOptions, errlog: Any
) -> list[tuple[AgentRun, Transcript]]:
    agent, toolset = build_agent(adk, base_root, model, case.ids, opts, errlog)
    out: list[tuple[AgentRun, Transcript]] = []
    try:
        for run in range(1, runs + 1):
            tr = Transcript()
            t0 = time.perf_counter()
            await _one_run(adk, agent, case, opts, tr)
            out.append((score(case, run, tr, time.perf_counter() - t0), tr))
    finally:
        await toolset.close()
        await _close_litellm_clients()
    return out


async def _close_litellm_clients() -> None:
    """Close and forget LiteLLM's cached HTTP clients: they belong to this event loop, which run_to_end is
    about to close (left open, their sockets leak and the next run would reuse a dead loop's client)."""
    import litellm

    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()


def run_case_adk(
    ep: WireClient, model: str, case: AgentCase, runs: int, opts: CheckOptions, errlog_path: Path | None = None
) -> list[tuple[AgentRun, Transcript]]:
    """Run `case` `runs` times with the ADK agent against `ep`'s server; one MCP server (stdio subprocess)
    per case. The same signature as checks.agent.run_case_loop. Raises MissingDependencyError when
    google-adk/litellm are not installed."""
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    # LiteLLM fetches a price list from GitHub at import (three tries, ~10 s offline); its bundled copy will do
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # google-adk 2.13 / litellm 1.110 warn on import and per call (pydantic ReadOnly TypedDicts, deprecated
    # model_fields access): theirs to fix, and fatal where warnings are errors (our test suite)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        adk = _adk()
        with open(errlog_path or os.devnull, "a") as errlog, _logs_to(errlog):
            return run_to_end(_run_case(adk, ep.root, model, case, runs, opts, errlog))


# The loggers ADK and LiteLLM report a failed call on, each with its traceback (google-adk 2.13
# workflow/_node_runner.py `logger.exception("Node execution failed ...")`; litellm/_logging.py): against a
# silent server that is hundreds of lines on the terminal. The run is scored 'error' with its one-line
# cause (see _one_run); the tracebacks go to the check's error log.
_CHATTY_LOGGERS = ("google_adk", "LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


class _Redacted(logging.Formatter):
    """A log record as text, redacted (errors.redact): LiteLLM logs a failed call with the server's body as sent."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


@contextlib.contextmanager
def _logs_to(errlog: Any) -> Iterator[None]:
    """Send _CHATTY_LOGGERS to `errlog` (not the terminal) for the block, and silence LiteLLM's printed
    "Give Feedback / Get Help" lines (litellm.suppress_debug_info)."""
    import litellm

    handler = logging.StreamHandler(errlog)
    handler.setFormatter(_Redacted())
    saved = [(logging.getLogger(n), logging.getLogger(n).propagate) for n in _CHATTY_LOGGERS]
    quiet = litellm.suppress_debug_info
    litellm.suppress_debug_info = True
    for log, _ in saved:
        log.addHandler(handler)
        log.propagate = False
    try:
        yield
    finally:
        litellm.suppress_debug_info = quiet
        for log, propagate in saved:
            log.removeHandler(handler)
            log.propagate = propagate
