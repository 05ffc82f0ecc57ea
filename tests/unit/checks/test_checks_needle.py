"""Long-context needle probe (exact lengths via /tokenize, cap, over-limit 400) and determinism."""

from __future__ import annotations

import json

from fakes.vllm_server import FakeVllm, Reply, count_tokens
from onechip.checks import run_checks
from onechip.checks.needle import PASSPHRASE, fit_length, needle_messages


def _reads_the_needle(body):
    text = body["messages"][-1]["content"]
    return Reply(PASSPHRASE if PASSPHRASE in text else "I do not know.")


def test_fit_length_hits_the_exact_count_and_keeps_the_unique_first_line():
    for target in (40, 200, 1001):
        messages, tokens = fit_length(count_tokens, "Document abc123", 0.5, target)
        assert tokens == target == count_tokens(messages)
        assert messages[0]["content"].startswith("Document abc123\n")
        body = messages[0]["content"].split("\n")[1]
        words = body.split()
        before = words.index(PASSPHRASE + ".") - 3  # "The passphrase is violet-harbor-7341."
        assert before == round(0.5 * (len(words) - 4))  # the needle sits at half the filler words


def test_needle_found_at_each_depth_with_exact_lengths_and_over_limit_400():
    with FakeVllm(_reads_the_needle, max_model_len=600) as srv:
        report = run_checks(srv.url, only=["needle"], needle_lengths=[300, 5000], needle_depths=[0.1, 0.9])
        firsts = [b["messages"][0]["content"].splitlines()[0] for b in srv.chat_requests]
    result = report.results[0]
    assert result.verdict == "pass", [p.note for p in result.probes]
    # 5000 is capped at max_model_len 600 minus the 32-token answer budget; the cap is reported
    assert result.conditions["cap_tokens"] == "568" and result.conditions["lengths"] == "300,568"
    needles = [p for p in result.probes if p.name.startswith("needle_")]
    # usage.prompt_tokens agrees with /tokenize, and both hit the asked length exactly
    assert [p.observed["prompt_tokens"] for p in needles] == [300, 300, 568, 568]
    assert all(p.observed["found"] for p in needles)
    over = result.probes[-1]
    assert over.name == "over_limit_400" and over.observed["status"] == 400
    assert over.observed["prompt_tokens"] == 601 and over.observed["healthy_after"]
    assert len(set(firsts)) == len(firsts)  # every prompt opens with its own line: no prefix-cache reuse


def test_needle_not_found_fails_and_kv_tokens_cap_the_length():
    with FakeVllm(lambda body: Reply("blue"), max_model_len=4096) as srv:
        report = run_checks(srv.url, only=["needle"], needle_lengths=[1000], kv_tokens=232, over_limit=False)
    result = report.results[0]
    assert result.verdict == "fail" and result.note == "needle found 0/1"
    assert result.probes[0].observed["prompt_tokens"] == 200  # min(4096, 232) - 32


def test_a_server_that_hangs_on_an_over_limit_prompt_fails():
    # the fake holds the over-limit prompt 30 s, far past the 0.5 s timeout however loaded the machine
    with FakeVllm(_reads_the_needle, max_model_len=300, over_limit="hang", hang_s=30) as srv:
        report = run_checks(srv.url, only=["needle"], needle_lengths=[100], over_limit_timeout_s=0.5)
    over = report.results[0].probes[-1]
    assert over.verdict == "fail" and over.note == "request hung past the timeout"
    assert report.results[0].verdict == "partial"


def test_unknown_max_model_len_leaves_over_limit_not_tested():
    with FakeVllm(_reads_the_needle, max_model_len=None) as srv:
        report = run_checks(srv.url, only=["needle"], needle_lengths=[100])
    assert report.results[0].probes[-1].verdict == "not_tested"
    assert report.results[0].verdict == "pass"


def test_determinism_counts_byte_identical_pairs():
    replies = [
        Reply("red, orange, yellow"),
        Reply("red, orange, yellow"),
        Reply("The sea."),
        Reply("The sea!"),
    ]
    with FakeVllm(replies) as srv:
        report = run_checks(srv.url, only=["determinism"], determinism_prompts=2)
        bodies = srv.chat_requests
    result = report.results[0]
    assert (result.verdict, result.note) == ("partial", "1/2 byte-identical")
    assert all(b["temperature"] == 0 for b in bodies) and bodies[0] == bodies[1]


def test_a_length_the_bare_needle_prompt_exceeds_is_not_tested_not_failed_by_the_model():
    # needle_lengths 1 was a failed needle probe ('needle found 0/1', long_context partial): a model judged on a
    # prompt it was never sent. The bare prompt (the first line, the needle, the question and the fake's 7-token
    # template) counts more than 1 token by the fake's one tokenizer rule, so nothing is asked and it says so
    with FakeVllm(_reads_the_needle, max_model_len=4096) as srv:
        report = run_checks(srv.url, only=["needle"], needle_lengths=[1, 300], over_limit=False)
        sent = len(srv.chat_requests)
    result = report.results[0]
    short, kept = result.probes
    bare = count_tokens(needle_messages("Document " + "0" * 32, 0, 0.5))
    assert (
        short.verdict == "not_tested"
        and short.note == f"the bare needle prompt is {bare} tokens, over the target 1: not asked"
    )
    assert kept.verdict == "pass" and sent == 1  # only the 300-token prompt reached the model
    assert result.verdict == "pass" and result.note == "needle found 1/2 (1 not tested)"


def test_the_passphrase_in_another_case_dash_or_quotes_or_in_the_reasoning_is_found():
    # a model that recalls it uppercased, with U+2011 hyphens, spaced out, in curly quotes, or only in its reasoning
    # (a reasoning model spends needle_max_tokens thinking) was judged "passphrase not in answer"
    answers = [
        Reply("VIOLET-HARBOR-7341"),
        Reply("violet\u2011harbor\u20117341"),
        Reply("The passphrase is \u201cviolet harbor 7341\u201d."),
        Reply("", reasoning="The text says the passphrase is Violet-Harbor-7341"),
        Reply("violet-harbor-7314"),  # another number: not recalled
    ]
    with FakeVllm(lambda body: answers.pop(0), max_model_len=4096) as srv:
        report = run_checks(srv.url, only=["needle"], needle_lengths=[100], needle_depths=[0, 0.25, 0.5, 0.75, 1],
                            over_limit=False)  # fmt: skip
    probes = report.results[0].probes
    assert [p.verdict for p in probes] == ["pass", "pass", "pass", "pass", "fail"]
    assert [p.note for p in probes[:2]] == ["passphrase found, written differently"] * 2
    assert probes[3].note.startswith("passphrase in the reasoning only (content '', finish_reason stop")
    assert probes[3].observed["reasoning"].endswith("Violet-Harbor-7341")
    assert probes[4].note == "passphrase not in answer"


def test_a_needle_the_engine_refuses_as_too_long_is_not_tested_not_failed():
    # /v1/models without max_model_len (so nothing is capped): the 8000-token needle was refused with vLLM's 400
    # "maximum context length is 4096 tokens" and judged a fail of the model, the domain partial and check exit 10
    models = json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}).encode()
    with FakeVllm(_reads_the_needle, max_model_len=4096, raw_answers={"/v1/models": (200, models, None)}) as srv:
        report = run_checks(srv.url, only=["needle"], needle_lengths=[300, 8000])
    result = report.results[0]
    refused = result.probes[1]
    assert (refused.name, refused.verdict) == ("needle_8000_d0.5", "not_tested")
    assert refused.note.startswith("not asked: beyond the engine's limit (This model's maximum context length is 4096")
    assert result.verdict == "pass" and result.note == "needle found 1/2 (1 not tested)"


def test_a_max_model_len_under_the_needle_prompt_leaves_long_context_not_tested_saying_why():
    # max_model_len 40 caps the needle at 40 - needle_max_tokens tokens, under the bare needle prompt: no needle was
    # asked, yet long_context read 'pass' on the strength of the over-limit probe (a refusal of the server's, no
    # recall of the model's)
    with FakeVllm(_reads_the_needle, max_model_len=40) as srv:
        report = run_checks(srv.url, only=["needle"], needle_depths=[0.5])
    result = report.results[0]
    over = result.probes[-1]
    assert over.name == "over_limit_400" and over.verdict == "pass"
    assert {p.verdict for p in result.probes[:-1]} == {"not_tested"}
    assert result.verdict == "not_tested"
    assert result.note.startswith("needle found 0/1 (1 not tested): no needle asked: the bare needle prompt is "), (
        result.note
    )
