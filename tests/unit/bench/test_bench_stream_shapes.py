"""Every streaming shape an OpenAI-compatible server sends, one table, each figure against the value its definition
gives for the script's known timings (test_bench_known_timings.Wire: the role event at once, content event k at
W_TTFT_S + k x W_ITL_S = 30 + k x 10 ms after the request arrived, then the finish, usage and [DONE] the row's server
writes). `measure` holds each median to the one computed from the fake's own writes, and TTFT and E2E never below
the set value; the counts (ITL samples, tokens, requests) and the throughputs are exact.

The definitions are vllm bench serve 0.34's (read in the 0.34.0 sdist): vllm/benchmarks/lib/endpoint_request_func.py
`async_request_openai_chat_completions` times a chunk only when `_choice_has_streamed_output` (content, reasoning,
reasoning_content, tool_calls or function_call, or `content: ""` without a role: a token that decoded to no text), so
never the role chunk, a finish chunk with an empty or all-null delta, or the usage-only chunk; TTFT is the first timed
chunk, ITL one sample per gap between timed chunks however many tokens a chunk carries, E2EL the last timed chunk;
serve.py `calculate_metrics` takes the output tokens from usage (else the generated content tokenized), TPOT = (E2EL -
TTFT) / (tokens - 1), and output tok/s and requests/s over the run's duration. Where onechip gives another value on
purpose the row's comment says which and why: an answer whose EOS comes in a finish chunk without output while usage
counts the EOS (llama.cpp's server, Ollama, SGLang) has E2E and TPOT to the EOS's step (vllm bench serve stops them one
step early while counting the token: E2E 60 and TPOT 7.5 ms here, where the server took 70 and 10), and a reasoning
model without usage has its reasoning counted with its content (vllm bench serve counts the content alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_bench_known_timings import W_ITL_S, W_TIMEOUT_S, Wire, bench, measure, whole_run_by_hand

from fakes.vllm_server import FakeVllm
from onechip.bench import client
from onechip.schemas.bench import RequestSample


@dataclass(frozen=True)
class Row:
    """One server's stream: its `wire`, the completion tokens it counts, how they are counted, and whether a finish
    chunk without output comes at the EOS's step, W_ITL_S after the last content, with usage counting the EOS."""

    wire: Wire
    tokens: int
    counted_by: str = "usage"
    eos_step: bool = False
    server: dict[str, Any] = field(default_factory=dict)

    def set_ms(self) -> dict[str, float]:
        """The figures by the definitions above: Wire.set_ms, E2E and TPOT to the EOS's step where it is one."""
        out = self.wire.set_ms()
        if self.eos_step:
            decode = len(self.wire.plan) * W_ITL_S * 1000
            out |= dict(e2e=out["ttft"] + decode, tpot=decode / (self.tokens - 1))
        return out


SHAPES = {
    # vLLM: the role chunk (`content: ""`, not a token), one token a chunk, the finish_reason on the last, the
    # include_usage chunk with empty choices, [DONE]: TTFT 30, ITL 10 x 3, TPOT 10, E2E 60, 4 tokens
    "vllm": Row(Wire(), 4),
    # vLLM's EOS: `content: ""` without a role, finish "stop", timed by vllm bench serve as a token (usage counts it)
    "vllm-eos": Row(Wire(eos=True, finish="stop"), 4),
    # several tokens a chunk (speculative decoding, a stream interval), usage at the end only: ITL one sample per
    # chunk gap (10 x 2), as vllm bench serve; TPOT per token, 20 / 5 = 4
    "batched": Row(Wire(plan=(2, 2, 2)), 6),
    # ... with per-chunk usage (vLLM's continuous_usage_stats): per-token ITL too (3 x 3.3 and 2 x 5 a request);
    # vllm bench serve's per-chunk ITL is itl_chunk_ms
    "batched-per-chunk-usage": Row(Wire(plan=(1, 3, 2), usage="per_event", role_usage=0), 6),
    # ... the finish_reason in a chunk of its own, `delta: {}`, written with the last tokens (OpenAI's final chunk),
    # usage at the end only: not a token chunk, so no ITL sample (vllm bench serve 0.34's rule). It was one, ~0 ms
    # after the last chunk (usage counts more tokens than chunks, as every batched stream does): 3 ITL a request
    "batched-stop-chunk": Row(Wire(plan=(2, 2, 2), finish="stop", finish_event="with_last"), 6),
    "stop-chunk": Row(Wire(finish="stop", finish_event="with_last"), 4),  # one token a chunk: usage = chunks
    # SGLang: every delta field written, null where unset; its EOS step streams no content chunk (serving_chat.py
    # `_generate_stream_content`: `if delta:`), then the all-null finish chunk (DeltaMessage() / build_sse_content
    # with finish_reason alone) and the usage chunk, whose completion_tokens is len(req.output_ids)
    # (scheduler_output_processor_mixin.py), the EOS included (schedule_batch.py Req.check_finished reads it as
    # output_ids[-1]): E2E 70 and TPOT 10 to the EOS's step, ITL 10 x 3 between the content chunks (vllm bench serve
    # 0.34: E2E 60, TPOT 7.5, the same ITL)
    "sglang-eos": Row(Wire(shape="sglang", finish_event="eos", finish="stop"), 5, eos_step=True),
    "sglang-batched": Row(Wire(shape="sglang", plan=(2, 2, 2), finish="stop", finish_event="with_last"), 6),
    # llama.cpp's server: the role chunk with `content: null`, `delta: {}` at the EOS's step (its EOS piece is empty)
    # with `timings`, usage counting the EOS (n_decoded), [DONE]; older builds: usage on the finish chunk, no
    # [DONE]; a proxy before it may repeat [DONE] (vllm bench serve 0.34: E2E 60, TPOT 7.5 for each)
    "llamacpp": Row(Wire(shape="llamacpp", finish_event="eos", finish="stop"), 5, eos_step=True),
    "llamacpp-no-done": Row(
        Wire(shape="llamacpp", usage="on_finish", done=0, finish_event="eos", finish="stop"), 5, eos_step=True
    ),
    "llamacpp-done-twice": Row(Wire(shape="llamacpp", done=2, finish_event="eos", finish="stop"), 5, eos_step=True),
    # Ollama since #17485: the role on the first token, `delta: {}` at the EOS's step, eval_count counting the EOS
    "ollama": Row(Wire(shape="ollama17485", finish_event="eos", finish="stop"), 5, eos_step=True),
    "ollama-batched": Row(
        Wire(shape="ollama17485", plan=(2, 2, 2), finish_event="eos", finish="stop"), 7, eos_step=True
    ),
    # ... at a length stop the same chunk comes with the last token, and usage counts no token for it: not timed
    "ollama-length": Row(Wire(shape="ollama17485", finish_event="with_last"), 4),
    "ollama-length-batched": Row(Wire(shape="ollama17485", plan=(2, 2, 2), finish_event="with_last"), 6),
    # ... without usage: nothing counts the EOS, the chunk is not timed; the text tokenized (the fake's /tokenize),
    # or without /tokenize (Ollama has none) one token a content chunk
    "ollama-no-usage": Row(Wire(shape="ollama17485", usage="none", finish_event="eos", finish="stop"), 4, "tokenize"),
    "ollama-no-usage-no-tokenize": Row(
        Wire(shape="ollama17485", usage="none", finish_event="eos", finish="stop"),
        4,
        "chunks",
        server=dict(has_tokenize=False),
    ),  # fmt: skip
    # per-chunk usage (vLLM's continuous_usage_stats) rising on a chunk without output, `delta: {}`: a token its tool
    # or reasoning parser gave no text (vLLM 0.34 chat_completion/serving.py `delta_message = DeltaMessage()`, sent so
    # when logprobs are asked; else the chunk is skipped and the next one's count rises by two). vllm bench serve 0.34
    # does not time it (`_choice_has_streamed_output`), nor does onechip without per-chunk usage; its token goes with
    # the next chunk with output. Mid-stream (content at 30, 40, {} at 50, 60, 70): TTFT 30, E2E 70, TPOT 40 / 4 = 10,
    # ITL per chunk 10, 20, 10 (median 10, mean 13.3), per token 10, 20 / 2 twice, 10: 10. It was timed as a token
    # chunk: ITL per chunk 10 x 4 (mean 10), 5 chunks
    "blank-per-chunk-usage": Row(Wire(plan=(1, 1, 1, 1, 1), blank=(2,), usage="per_event", role_usage=0), 5),
    # ... first ({} at 30, content at 40 - 70): TTFT 40 (vllm bench serve's, and onechip's without per-chunk usage),
    # E2E 70, TPOT 30 / 4 = 7.5; it was TTFT 30
    "blank-first-per-chunk-usage": Row(Wire(plan=(1, 1, 1, 1, 1), blank=(0,), usage="per_event", role_usage=0), 5),
    # ... at the EOS's step (vLLM behind a parser: finish "stop" on `{}`, usage counting the EOS): as the final-usage
    # rows above, E2E 70 and TPOT 10 to the EOS's step, no ITL sample for it; it was one (ITL 4 a request, not 3)
    "eos-step-per-chunk-usage": Row(
        Wire(finish_event="eos", finish="stop", usage="per_event", role_usage=0), 5, eos_step=True
    ),
    # a reasoning model (vLLM 0.34's reasoning parsers write `reasoning`): 2 reasoning tokens, then 2 of content;
    # the first reasoning token is the first token (vllm bench serve 0.34 `_choice_has_streamed_output` too): TTFT 30
    "reasoning-then-content": Row(Wire(field="reasoning", thinks=2), 4),
    # ... `reasoning_content` (SGLang, older vLLM), no usage: the reasoning and the content tokenized, 4 tokens, TPOT
    # 10 (vllm bench serve tokenizes the content alone: 2 tokens, TPOT 30)
    "reasoning_content-no-usage": Row(Wire(field="reasoning_content", thinks=2, usage="none"), 4, "tokenize"),
    # reasoning tokens are output tokens, as vllm bench serve 0.34 counts them against vLLM: serve.py calculate_metrics
    # takes usage.completion_tokens (it always asks include_usage), which vLLM counts from every generated token id
    # (chat_completion/stream_processor.py `num_output_tokens += len(delta_token_ids)`), the reasoning's included; only
    # its fallback for a server without usage tokenizes the content alone. So one count whatever the server sends:
    # per-chunk usage, the final usage, /tokenize of reasoning and content, or one a chunk without /tokenize
    "reasoning_content-per-chunk-usage": Row(
        Wire(field="reasoning_content", thinks=2, usage="per_event", role_usage=0), 4
    ),
    "reasoning_content-no-usage-no-tokenize": Row(
        Wire(field="reasoning_content", thinks=2, usage="none"), 4, "chunks", server=dict(has_tokenize=False)
    ),
}


@pytest.mark.parametrize("row", SHAPES.values(), ids=SHAPES.keys())
def test_every_figure_of_each_shape_is_the_definitions(tmp_path: Path, row: Row) -> None:
    """1 client, 4 requests of `row`'s stream: every request ok with the row's tokens; TTFT, TPOT, E2E, ITL per token
    and per chunk (means too) as the definitions give them; one ITL sample per chunk gap (per token with per-chunk
    usage), none for a chunk without output; whole-run and steady tok/s and requests/s the tokens and requests over
    the run's span (one stream: the steady window is the whole run)."""
    wire = row.wire
    cell, _, measured = measure(
        tmp_path, {"wire_script": wire, **row.server}, row.set_ms(), ("itl_chunk.mean", "itl.mean"),
        output_tokens=row.tokens, request_timeout_s=W_TIMEOUT_S,
    )  # fmt: skip
    assert cell.status == "ok" and cell.requests_ok == 4 and cell.requests_failed == 0
    assert {(s.completion_tokens, s.completion_tokens_from, s.finish_reason) for s in measured} == {
        (row.tokens, row.counted_by, wire.finish)
    }
    timed = wire.timed()
    chunks = len(timed)
    # per token: the tokens the timed chunks after the first carry (a blank event's folded into the next; no EOS step)
    per_token = sum(wire.plan) - sum(wire.plan[: timed[0] + 1]) if wire.usage == "per_event" else chunks - 1
    assert (cell.itl_chunk_ms.n, cell.itl_ms.n) == (4 * (chunks - 1), 4 * per_token)
    assert {len(s.chunk_times) for s in measured} == {chunks}
    assert cell.requests_ended_early == cell.requests_over_max_tokens == 0
    duration, tokens, ok = whole_run_by_hand(measured)
    assert (tokens, ok) == (4 * row.tokens, 4)
    assert cell.whole_run_tok_per_s == pytest.approx(tokens / duration)
    assert cell.whole_run_request_rate_per_s == pytest.approx(ok / duration)
    assert cell.output_tok_per_s == pytest.approx(tokens / duration)
    assert cell.request_rate_per_s == pytest.approx(ok / duration)


FAILING = {
    # the body ends after 4 tokens with no finish_reason, no usage and no [DONE] (the server closed it): vllm bench
    # serve 0.34 calls it a success (it asks only for a first timed chunk); the answer is not known to be whole
    "closed-without-done-or-finish": (Wire(finish=None, done=0, usage="none"), 4, client.STREAM_CUT),
    # 200, 2 tokens, then vLLM's error chunk and [DONE] (chat_completion/serving.py); vllm bench serve 0.34 fails it
    "error-after-200": (Wire(error="openai"), 2, "HTTP 200: engine died"),
}


@pytest.mark.parametrize(("wire", "chunks", "error"), FAILING.values(), ids=FAILING.keys())
def test_a_stream_that_fails_after_its_first_tokens_is_failed_with_what_it_measured_kept(
    tmp_path: Path, wire: Wire, chunks: int, error: str
) -> None:
    """Chat request 3 of 2-4 (1 is the probe) streams `chunks` tokens and fails as `wire` says: it is failed with the
    reason, its times kept in requests.jsonl (first token, each chunk, the end), its tokens counted nowhere; the two
    others are ok, and the whole run's span holds the failed request too (vllm bench serve's duration: the run's)."""
    with FakeVllm(wire_script=lambda n, body: (wire if n == 3 else Wire())(n, body)) as srv:
        cell, _, measured = bench(srv, tmp_path, requests_per_client=3, output_tokens=4, request_timeout_s=W_TIMEOUT_S)
    assert [s.status for s in measured] == ["ok", "failed", "ok"] and cell.requests_failed == 1
    failed: RequestSample = measured[1]
    assert failed.error == error and failed.completion_tokens is None
    assert failed.t_first == failed.chunk_times[0] and failed.t_last == failed.chunk_times[-1]
    assert len(failed.chunk_times) == chunks and failed.t_done is not None and failed.t_done >= failed.t_last
    assert cell.ttft_ms.n == cell.e2e_ms.n == 2 and cell.itl_chunk_ms.n == 2 * 3
    duration, tokens, ok = whole_run_by_hand(measured)
    assert (tokens, ok) == (2 * 4, 2) and cell.whole_run_request_rate_per_s == pytest.approx(ok / duration)
