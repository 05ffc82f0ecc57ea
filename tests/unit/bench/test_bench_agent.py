"""The agent workload against the fake server: session shape, growing turns, cached tokens from usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import one_error_line
from fakes.vllm_server import TEMPLATE_TOKENS, FakeVllm
from onechip.bench import run_grid
from onechip.bench.agent import CALL_OVERHEAD_TOKENS
from onechip.bench.runner import load_samples
from onechip.errors import ConfigError
from onechip.schemas.bench import BenchConfig
from onechip.schemas.inputs import build_request


def agent_config(server: FakeVllm, **kw: object) -> BenchConfig:
    base: dict[str, object] = dict(
        base_url=server.url,
        workload="agent",
        contexts=[200],
        clients=[2],
        reps=1,
        output_tokens=3,
        warmup_requests=1,
        turns=3,
        user_tokens=10,
        call_tokens=20,
        result_tokens=30,
        sessions_per_client=2,
    )
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


def test_sessions_share_the_system_prompt_and_grow_by_each_turn(fake_server: FakeVllm, tmp_path: Path) -> None:
    run = run_grid(agent_config(fake_server), tmp_path)
    samples = [s for s in load_samples(tmp_path / "requests.jsonl") if not s.warmup]
    # 2 clients x 2 sessions x 3 turns
    assert len(samples) == 12 and all(s.status == "ok" for s in samples)
    bodies = [b for b in fake_server.chat_requests if len(b["messages"]) > 1]
    systems = {b["messages"][0]["content"] for b in bodies}
    assert len(systems) == 1  # one shared system prompt per rep
    assert all(b["messages"][0]["role"] == "system" for b in bodies)
    # the shared prefix is fitted as the server counts it: system message + template = 200 tokens
    assert len(next(iter(systems)).split()) + TEMPLATE_TOKENS == 200
    # turn t sends system + t x (user, call, result) + user
    assert sorted({len(b["messages"]) for b in bodies}) == [2, 5, 8]
    roles = [m["role"] for m in max(bodies, key=lambda b: len(b["messages"]))["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant", "tool", "user"]
    # each turn adds user + call + result words (fake tokenizer: one token per word), whatever was answered
    by_turn = {s.turn: s.prompt_tokens for s in samples}
    step = by_turn[1] - by_turn[0]  # type: ignore[operator]
    assert step == by_turn[2] - by_turn[1]  # type: ignore[operator]
    longest = max(bodies, key=lambda b: len(b["messages"]))["messages"]
    user, call, result = longest[1:4]
    assert step == sum(len(m["content"].split()) for m in (user, call, result))
    assert len(result["content"].split()) == 30  # filler words: one token each
    assert call["content"].startswith("<tool_call>") and "search_docs" in call["content"]
    assert len(call["content"].split()) >= 20 - CALL_OVERHEAD_TOKENS
    cell = run.cells[0]
    assert [t.turn for t in cell.turns] == [0, 1, 2]
    assert all(t.requests == 4 for t in cell.turns)
    assert cell.turns[0].prompt_tokens.median == 200 + 10


def test_cached_share_per_turn_comes_from_usage(fake_server: FakeVllm, tmp_path: Path) -> None:
    fake_server.prefix_cache_block = 16
    run = run_grid(agent_config(fake_server, clients=[1], sessions_per_client=2), tmp_path)
    samples = [s for s in load_samples(tmp_path / "requests.jsonl") if not s.warmup]
    first = [s for s in samples if s.session == 0 and s.turn == 0][0]
    second = [s for s in samples if s.session == 1 and s.turn == 0][0]
    assert first.cached_tokens == 0  # nothing seen before: the warm-up shares no prefix with it
    assert second.cached_tokens is not None and second.cached_tokens >= 176  # the 200-token prefix, whole blocks
    later = [s for s in samples if s.turn == 2]
    assert all(s.cached_tokens and s.cached_tokens > (s.prompt_tokens or 0) // 2 for s in later)
    cell = run.cells[0]
    shares = [t.cached_share for t in cell.turns]
    assert all(x is not None for x in shares) and shares[2] > shares[0]  # type: ignore[operator]
    total = sum(s.cached_tokens or 0 for s in samples) / sum(s.prompt_tokens or 0 for s in samples)
    assert cell.cached_share == total
    # the server's own counters agree with usage (the fake counts both from one cache)
    delta = cell.server_metrics_delta
    assert delta["prefix_cache_hits_delta"] >= sum(s.cached_tokens or 0 for s in samples)


def test_without_a_cache_report_the_share_is_unknown_not_zero(fake_server: FakeVllm, tmp_path: Path) -> None:
    run = run_grid(agent_config(fake_server, turns=1, sessions_per_client=1), tmp_path)
    assert run.cells[0].cached_share is None
    assert run.cells[0].turns[0].cached_share is None


def test_think_time_spaces_the_turns(fake_server: FakeVllm, tmp_path: Path) -> None:
    run_grid(agent_config(fake_server, clients=[1], sessions_per_client=1, turns=2, think_time_s=0.3), tmp_path)
    turns = sorted((s for s in load_samples(tmp_path / "requests.jsonl") if not s.warmup), key=lambda s: s.seq)
    assert turns[1].t_send - turns[0].t_done >= 0.3  # type: ignore[operator]


def test_a_finished_agent_rep_is_reused_on_resume(fake_server: FakeVllm, tmp_path: Path) -> None:
    cfg = agent_config(fake_server, turns=2, sessions_per_client=1)
    first = run_grid(cfg, tmp_path)
    sent = len(fake_server.chat_requests)
    again = run_grid(cfg, tmp_path, resume=True)
    assert len(fake_server.chat_requests) == sent + 1  # the probe only: 2 clients x 1 session x 2 turns kept
    assert [t.model_dump() for t in again.cells[0].turns] == [t.model_dump() for t in first.cells[0].turns]


def test_a_workload_file_gives_the_agent_shape_and_typed_flags_win(tmp_path: Path) -> None:
    shape = tmp_path / "shape.json"
    shape.write_text(json.dumps({"contexts": [300], "turns": 6, "user_tokens": 12, "result_tokens": 200}))
    cfg = build_request(BenchConfig, {"base_url": "http://127.0.0.1:1", "workload_file": shape, "turns": 2})
    assert (cfg.workload, cfg.contexts, cfg.turns, cfg.user_tokens, cfg.result_tokens) == ("agent", [300], 2, 12, 200)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"rate_per_s": 3}', "unknown key 'rate_per_s'"),
        ("[1]", "an object of workload keys"),
        ("{", "--workload-file"),
    ],
)
def test_a_bad_workload_file_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    shape = tmp_path / "shape.json"
    shape.write_text(content)
    with pytest.raises(ConfigError, match=message) as err:
        build_request(BenchConfig, {"base_url": "http://127.0.0.1:1", "workload_file": shape})
    assert "\n" not in str(err.value)


def test_a_workload_file_in_yaml_gives_the_same_shape(tmp_path: Path) -> None:
    shape = tmp_path / "shape.yaml"
    shape.write_text("# the agent sessions of the seed\ncontexts: [300]\nturns: 6\nuser_tokens: 12\n")
    cfg = build_request(BenchConfig, {"base_url": "http://127.0.0.1:1", "workload_file": shape})
    assert (cfg.workload, cfg.contexts, cfg.turns, cfg.user_tokens) == ("agent", [300], 6, 12)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        # YAML: the line and column of the problem, what the parser found, and where the construct opened
        ("workload: agent\nturns: [3\n", "not valid YAML at line 3, column 1: expected ',' or ']', but got "
         "'<stream end>' (while parsing a flow sequence from line 2, column 8)"),
        ("turns: 3\n  clients: 4\n", "not valid YAML at line 2, column 10: mapping values are not allowed here"),
        ("turns:\t3\n\tclients: 4\n", "not valid YAML at line 1, column 7: found character '\\t' that cannot start "
         "any token"),
        # JSON (it opens with a brace): the JSON parser's line, column and message, not YAML's
        ('{"turns": 3,\n "clients": [1, 2\n', "not valid JSON at line 3, column 1: Expecting ',' delimiter"),
        ("", "is empty; give a JSON or YAML object of workload keys, e.g. turns: 4"),
        (" \n\n", "is empty; give a JSON or YAML object of workload keys, e.g. turns: 4"),
        (b"\xff\xfeturns", "not UTF-8 text (a JSON or YAML object of workload keys)"),
        ("just words", "must hold an object of workload keys (JSON or YAML), e.g. turns: 4"),
        # YAML keys need not be text: unknown ones of several types are named, not compared
        ("1: 2\nfoo: 3\n", "unknown key 'foo'; use workload, contexts, clients, output_tokens, turns, user_tokens, "
         "call_tokens, result_tokens, think_time_s, sessions_per_client"),
        # a boolean is no count (validation would read it as 1): YAML's yes, JSON's true, in a list too
        ("turns: yes\n", "turns is true, a boolean (YAML reads yes, no, on and off as true or false); give a number"),
        ('{"contexts": [512, false]}', "contexts is [512, false], a boolean (YAML reads yes, no, on and off as true "
         "or false); give a number"),
        ("turns: 4\n" + "# a comment\n" * 100_000, "larger than 1,048,576 bytes; a workload file holds a few "
         "workload keys, e.g. turns: 4"),
    ],
)  # fmt: skip
def test_an_unparsable_workload_file_is_one_line_naming_the_file_line_and_column(
    tmp_path: Path, run, content: str | bytes, said: str
) -> None:
    shape = tmp_path / "shape.yaml"
    shape.write_bytes(content if isinstance(content, bytes) else content.encode())
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--workload-file", str(shape))
    assert line == f"--workload-file {shape}: {said}"


def test_a_workload_file_that_is_a_directory_or_missing_is_one_line(tmp_path: Path, run) -> None:
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--workload-file", str(tmp_path))
    assert line == f"--workload-file {tmp_path}: not a regular file"  # paths.open_regular: a directory is not
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--workload-file", str(tmp_path / "nope.yaml"))
    assert line == f"--workload-file {tmp_path / 'nope.yaml'}: No such file or directory"


def test_sessions_that_outgrow_the_servers_max_model_len_are_infeasible_before_sending(tmp_path: Path) -> None:
    # turn t's prompt is ~200 + 10 (t + 1) + 50 t tokens: turn 3 (~390) is past the server's 340. The check read the
    # shared prefix alone (200): every session's last turn was sent, answered 400, and the cell said 'ok', 1 failed
    with FakeVllm(max_model_len=340) as srv:
        cell = run_grid(agent_config(srv, clients=[1], sessions_per_client=1, turns=4, warmup_requests=0), tmp_path)
        cell = cell.cells[0]
        assert cell.status == "infeasible" and len(srv.chat_requests) == 1  # the probe request only
    assert cell.reason == (
        "390 prompt at a session's last turn (200 shared prefix + 4 turns, ~) + 3 output = 393 tokens "
        "> max_model_len 340 (server /v1/models)"
    )
    with FakeVllm(max_model_len=400) as srv:  # the longest prompt fits: measured
        assert (
            run_grid(agent_config(srv, clients=[1], sessions_per_client=1, turns=4), tmp_path / "fits").cells[0].status
            == "ok"
        )


def test_a_turn_failing_mid_session_is_counted_at_its_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    # request 1 is the probe, 2-5 the session's 4 turns: the third turn fails. The turn tables said '0' requests at
    # that turn, as if none had been sent: the failed one was in no per-turn figure, the report's nor the console's
    from rich.console import Console

    from onechip.cli.bench_cmd import turn_tables
    from onechip.report.write import write_report

    with FakeVllm(fail_status={4: 500}) as srv:
        run = run_grid(agent_config(srv, clients=[1], sessions_per_client=1, turns=4, warmup_requests=0), tmp_path)
        assert len(srv.chat_requests) == 5 and len(srv.chat_requests[4]["messages"]) == 11  # turn 4: whole history
    samples = load_samples(tmp_path / "requests.jsonl")
    assert [(s.turn, s.status) for s in samples] == [(0, "ok"), (1, "ok"), (2, "failed"), (3, "ok")]
    assert samples[2].error == "HTTP 500: fake failure of request 4"
    turns = run.cells[0].turns
    assert [(t.requests, t.requests_failed) for t in turns] == [(1, 0), (1, 0), (0, 1), (1, 0)]
    assert turns[2].ttft_ms.n == 0 and run.cells[0].requests_failed == 1
    (md,) = write_report(tmp_path, ["md"])
    assert "| 3 | 0 (1 failed) |" in md.read_text() and "| 4 | 1 |" in md.read_text()
    out = Console(record=True, width=200)
    for table in turn_tables(run):
        out.print(table)
    assert "0 (1 failed)" in out.export_text()


def test_without_tokenize_later_reps_keep_the_shared_prefix_asked(tmp_path: Path) -> None:
    # without /tokenize the prompt builder estimates, then corrects its template overhead by usage after each rep: it
    # read the median agent turn's prompt (prefix + history, ~260) as the fitted 200-token prefix, and every later rep
    # and cell got a prefix ~60 tokens shorter (the first turn's prompt 207, then 150)
    with FakeVllm(has_tokenize=False) as srv:
        cfg = agent_config(srv, clients=[1, 2], reps=2, sessions_per_client=1, warmup_requests=0)
        run = run_grid(cfg, tmp_path)
    firsts = {
        (s.clients, s.rep, s.stream): s.prompt_tokens for s in load_samples(tmp_path / "requests.jsonl") if s.turn == 0
    }
    assert len(firsts) == 6 and len(set(firsts.values())) == 1, firsts
    assert 200 < next(iter(firsts.values())) <= 200 + 10  # the prefix asked, then the first user text
    assert [c.turns[0].prompt_tokens.median for c in run.cells] == [firsts[(1, 0, 0)]] * 2


def test_the_report_and_the_json_say_which_chunk_ends_ttft(fake_server: FakeVllm, tmp_path: Path) -> None:
    # the rule (the first chunk with a generated token, never the role-only chunk: vllm bench serve 0.34's) was said
    # only in client.py: report.md said the ITL convention, not this one, and the JSON 'time to first content
    # chunk', which a reasoning or tool-call chunk is not
    from onechip.report.write import write_report
    from onechip.schemas.bench import CellResult, TurnResult

    run_grid(agent_config(fake_server, clients=[1], turns=1, sessions_per_client=1), tmp_path)
    (md,) = write_report(tmp_path, ["md"])
    said = "TTFT ends at the first chunk carrying a generated token: content (an empty-content chunk without the role"
    assert (
        said in md.read_text() and "never the role-only opening chunk (vllm bench serve 0.34's rule)" in md.read_text()
    )
    for model in (CellResult, TurnResult):
        assert said in (model.model_fields["ttft_ms"].description or "")
