"""The agent workload's conversations: a shared system prompt with tool schemas, then turns that grow it.

A session of `turns` turns sends, at turn t, the system prompt and the history so far plus the new user text:

    [system] [user 0] [call 0] [result 0] [user 1] [call 1] [result 1] ... [user t]

The system prompt (rep tag, tool schemas, filler words up to `context_tokens` as the server counts it, see
bench.runner) is the same for every session of a repetition, so a prefix cache can serve it to all but the
first; the user text of turn 0 starts with the stream and session numbers, so sessions share nothing after
it. The tool call and its result are replayed, not generated: the workload does not change with what the
model answers (its answer only costs `output_tokens` of decode). Lengths of the user text, the call and the
result are filler words, one token each for the tokenizers bench.prompts names, plus a few tokens of digits
and JSON; the real prompt length of every turn is the server's usage.prompt_tokens (TurnResult).

Pure functions: no I/O. Message shapes (role, the call's text form) are vllm.wire's.
"""

from __future__ import annotations

import json
from typing import Any

from onechip.bench.prompts import build_content, filler
from onechip.vllm.wire import replayed_tool_call, system_message

TOOL_NAME = "search_docs"
TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Search the team's documents and return the matching passages.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to look for."}},
                "required": ["query"],
            },
        },
    }
]
# tokens of the call's JSON around its filler words ({"name": "search_docs", "arguments": {"query": ...}}),
# roughly, for SmolLM2's tokenizer; the call's real length shows in the next turn's usage.prompt_tokens
CALL_OVERHEAD_TOKENS = 16


def system_head(tag: str) -> str:
    """The fixed part of the shared system prompt: the rep's tag (a new prefix each rep, so one rep never
    reads another's cache), then the tool schemas. Filler words follow (bench.prompts.build_content)."""
    return f"Agent {tag}. You can call these tools: {json.dumps(TOOL_SCHEMAS)}"


def system_prompt(tag: str, filler_words: int) -> dict[str, Any]:
    """The shared system message: `system_head(tag)`, a newline, `filler_words` filler words."""
    return system_message(build_content(system_head(tag), filler_words))


def user_text(stream: int, session: int, turn: int, words: int) -> str:
    """Turn `turn`'s user text: unique numbers first (sessions diverge right after the system prompt)."""
    return f"{stream:05d}-{session:04d}-{turn:03d}. {filler(max(0, words - 1))}".rstrip()


def turn_history(stream: int, session: int, turn: int, call_tokens: int, result_tokens: int) -> list[dict[str, Any]]:
    """The replayed assistant tool call after turn `turn` and the tool's result: two messages."""
    call_id = f"call_{stream}_{session}_{turn}"
    query = filler(max(1, call_tokens - CALL_OVERHEAD_TOKENS))
    call, result = replayed_tool_call(call_id, TOOL_NAME, {"query": query})
    result["content"] = filler(result_tokens)
    return [call, result]
