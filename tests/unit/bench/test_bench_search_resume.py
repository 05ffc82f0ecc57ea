"""An interrupted `--find-max` search resumes into the same directory: finished probes are read back (nothing sent
again), the torn probe is resumed as a grid is, and the answer is the uninterrupted search's; another command into
that directory is refused in one line before anything is sent."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factories import embedded_plan
from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.bench import find_max, run_grid
from onechip.bench.runner import REPLACED_FILE
from onechip.cli import bench_cmd
from onechip.cli.main import app
from onechip.errors import BusyError, ConfigError, EndpointError, Interrupted
from onechip.progress import ProgressEvent
from onechip.schemas.bench import BenchConfig, SearchResult
from onechip.schemas.inputs import build_request

KNEE = 6  # the fake answers probes of up to 6 clients, and fails every request of a larger one (HTTP 500)
# so 6 clients meet it and 7 miss it by what the server did, not by a margin of time: with TTFT 20 ms against 150 ms, a
# busy machine's own delays (>130 ms) made a probe of 4 miss (answer 3, not 6)
SLO = {"ttft_ms": 60_000.0}
_TAG = re.compile(r"Request (\w+)-\d+-(\d+)-\d+")  # the rep's prompt tag: nonce-context-clients-rep (runner.rep_jobs)


def _clients_of(body: dict[str, Any]) -> int | None:
    """The clients of the probe a chat request belongs to (from its prompt tag); None for the untagged probe request."""
    found = _TAG.search(json.dumps(body["messages"]))
    return int(found.group(2)) if found else None


def _nonce_of(body: dict[str, Any]) -> str | None:
    """The nonce of the probe run a chat request belongs to (a new one each run_grid); None for the probe request."""
    found = _TAG.search(json.dumps(body["messages"]))
    return found.group(1) if found else None


def _server() -> FakeVllm:
    """A server whose verdict is known from the probe's clients, whatever the machine's timing: past KNEE it fails
    every request (a miss whatever the latency, search.judge), up to it it answers."""
    past = Reply(status=500, error="past the knee")
    return FakeVllm(replies=lambda body: past if (_clients_of(body) or 0) > KNEE else Reply("tok tok"))


def _config(srv: FakeVllm, **kw: Any) -> BenchConfig:
    base: dict[str, Any] = dict(
        base_url=srv.url, contexts=[16], reps=1, output_tokens=2, requests_per_client=2, warmup_requests=0,
        find_max="clients", slo=SLO, slo_percentile=100, find_max_limit=16,
    )  # fmt: skip
    return BenchConfig(**{**base, **kw})


def _path(result: SearchResult) -> list[tuple[float, bool]]:
    return [(p.load, p.meets_slo) for p in result.probes]


def test_an_interrupted_search_resumes_without_measuring_its_finished_probes_again(tmp_path: Path) -> None:
    with _server() as srv:
        whole = find_max(_config(srv), tmp_path / "whole")
        assert whole.max_clients == 6  # 1, 2, 4 meet, 8 misses; bisecting: 6 meets, 7 misses
        assert _path(whole) == [(1, True), (2, True), (4, True), (8, False), (6, True), (7, False)]

        def ctrl_c_in_the_fourth_probe(event: ProgressEvent) -> None:  # the 3rd of clients-8's 16 requests ended
            if event.message.startswith("context 16 x 8 clients, rep 1/1: 3 requests"):
                raise KeyboardInterrupt

        out = tmp_path / "search"
        with pytest.raises(Interrupted) as err:
            find_max(_config(srv), out, on_progress=ctrl_c_in_the_fourth_probe)
        assert f"run the same --find-max search into {out} again" in str(err.value)
        assert "--resume" not in str(err.value)  # resuming the probe alone would not resume the search
        sent = len(srv.chat_requests)
        torn = (out / "clients-8" / "requests.jsonl").read_text().splitlines()  # 3 ended, and those cut by Ctrl-C
        resumed_events: list[str] = []
        resumed = find_max(_config(srv), out, on_progress=lambda e: resumed_events.append(e.message))
        # by run, not by arrival: requests Ctrl-C cut may reach the server after `sent` was read (a busy machine)
        old = {n for b in srv.chat_requests[:sent] if (n := _nonce_of(b)) is not None}
        again = [_clients_of(b) for b in srv.chat_requests[sent:] if _nonce_of(b) not in old]

    assert resumed.max_clients == whole.max_clients and _path(resumed) == _path(whole)
    assert resumed.bound_reason == whole.bound_reason
    assert {1, 2, 4}.isdisjoint(again)  # the finished probes were read back, not sent again
    assert again.count(8) == 16 and again.count(6) == 12 and again.count(7) == 14  # the torn probe measured whole
    assert again.count(None) == 3  # one untagged probe request per probe run: 8, 6, 7
    assert sum(f"find-max: clients-{n} read back" in m for m in resumed_events for n in (1, 2, 4)) == 3
    assert len(torn) >= 3 and (out / "clients-8" / REPLACED_FILE).read_text().splitlines() == torn  # kept, not lost
    assert json.loads((out / "search.json").read_text())["max_clients"] == 6


def test_a_finished_search_run_again_is_read_back_whole(fake_server: FakeVllm, tmp_path: Path) -> None:
    cfg = _config(fake_server, slo={"ttft_ms": 10_000.0}, find_max_limit=2)
    first = find_max(cfg, tmp_path)
    sent = len(fake_server.chat_requests)
    again = find_max(cfg, tmp_path)
    assert len(fake_server.chat_requests) == sent  # nothing sent: every probe was finished
    assert again.max_clients == first.max_clients == 2 and _path(again) == _path(first)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"slo": {"ttft_ms": 400.0}}, r"\(clients-1\): --slo was ttft_ms=10000.0, now ttft_ms=400.0"),
        ({"find_max_limit": 8}, r"\(clients-1\): --find-max-limit was 1.0, now 8.0"),
        ({"output_tokens": 3}, r"\(clients-1\): --output-tokens was 2, now 3"),
        ({"find_max": "rate", "clients": [1]}, "clients-1 is a --find-max clients probe, now --find-max rate"),
    ],
)
def test_another_search_into_the_directory_is_refused_in_one_line(
    fake_server: FakeVllm, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    find_max(_config(fake_server, slo={"ttft_ms": 10_000.0}, find_max_limit=1), tmp_path)
    sent = len(fake_server.chat_requests)
    cfg = _config(fake_server, **{"slo": {"ttft_ms": 10_000.0}, "find_max_limit": 1, **change})
    with pytest.raises(ConfigError, match=message) as err:
        find_max(cfg, tmp_path)
    assert "\n" not in str(err.value) and f"cannot resume the SLO search in {tmp_path}" in str(err.value)
    assert len(fake_server.chat_requests) == sent


def test_a_search_into_a_bench_run_is_refused(fake_server: FakeVllm, tmp_path: Path) -> None:
    run_grid(BenchConfig(base_url=fake_server.url, contexts=[16], clients=[1], reps=1, output_tokens=2), tmp_path)
    sent = len(fake_server.chat_requests)
    with pytest.raises(ConfigError, match="holds a bench run, not a --find-max search"):
        find_max(_config(fake_server), tmp_path)
    assert len(fake_server.chat_requests) == sent and not list(tmp_path.glob("clients-*"))


def test_the_cli_resumes_the_same_command(fake_server: FakeVllm, tmp_path: Path) -> None:
    args = ["bench", fake_server.url, "--contexts", "16", "--reps", "1", "--output-tokens", "3", "--find-max"]
    args += ["clients", "--slo", "ttft_ms=10000", "--find-max-limit", "2", "--out", str(tmp_path), "--json"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    sent = len(fake_server.chat_requests)
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert len(fake_server.chat_requests) == sent
    answer = json.loads(again.stdout[again.stdout.index("{") :])
    assert answer["max_clients"] == 2 and [p["load"] for p in answer["probes"]] == [1, 2]


def test_a_workload_file_edited_since_the_search_started_is_refused(fake_server: FakeVllm, tmp_path: Path) -> None:
    shape = tmp_path / "agent.yaml"
    shape.write_text("turns: 2\n")

    def search() -> BenchConfig:  # as typed: the file's shape is read into the config, its sha256 compared
        typed = {"base_url": fake_server.url, "workload_file": str(shape), "contexts": "64", "reps": 1}
        typed |= {"output_tokens": 2, "find_max": "clients", "slo": "ttft_ms=10000", "find_max_limit": 1}
        return build_request(BenchConfig, typed)

    find_max(search(), tmp_path / "s")
    shape.write_text("turns: 2  # the same turns, other bytes\n")
    with pytest.raises(ConfigError, match=r"\(clients-1\): --workload-file changed since it started"):
        find_max(search(), tmp_path / "s")


def test_a_probe_with_a_failed_request_is_measured_again_as_a_grid_rep_is(
    fake_server: FakeVllm, tmp_path: Path
) -> None:
    fake_server.fail_status = {3: 500}  # 1: the probe request, 2 and 3: the probe's two measured requests
    cfg = _config(fake_server, slo={"ttft_ms": 10_000.0}, find_max_limit=1)
    first = find_max(cfg, tmp_path)
    assert first.max_clients == 0 and first.probes[0].status == "ok" and not first.probes[0].meets_slo
    again = find_max(cfg, tmp_path)  # the server is healthy now: the failed rep is measured again, its try kept
    assert again.max_clients == 1 and len(fake_server.chat_requests) == 6
    replaced = [json.loads(line) for line in (tmp_path / "clients-1" / REPLACED_FILE).read_text().splitlines()]
    assert [s["status"] for s in replaced] == ["ok", "failed"]


def test_an_interrupted_cli_search_leaves_a_search_json_and_md_that_say_so_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run
) -> None:
    # a search stopped by Ctrl-C (or a cancelled MCP call) wrote no search.json: `report DIR` named search.md, which
    # did not exist, and nothing in the directory said what the probes so far had found
    def ctrl_c_in_the_fourth_probe(event: ProgressEvent) -> None:
        if event.message.startswith("context 16 x 8 clients, rep 1/1: 3 requests"):
            raise KeyboardInterrupt

    @contextmanager
    def progress(**_: Any) -> Iterator[Callable[[ProgressEvent], None]]:
        yield ctrl_c_in_the_fourth_probe

    out = tmp_path / "search"
    with _server() as srv:
        args = ["bench", srv.url, "--contexts", "16", "--reps", "1", "--output-tokens", "2", "--requests-per-client"]
        args += ["2", "--warmup-requests", "0", "--find-max", "clients", "--slo", "ttft_ms=60000", "--slo-percentile"]
        args += ["100", "--find-max-limit", "16", "--out", str(out)]
        with monkeypatch.context() as m:
            m.setattr(bench_cmd, "live_progress", progress)
            code, _, err = run(*args)
        assert code == 130 and "Traceback" not in err, err
        partial = SearchResult.model_validate_json((out / "search.json").read_text())
        assert partial.interrupted and partial.bound_reason.startswith("interrupted after 3 probes; run the same")
        assert _path(partial) == [(1, True), (2, True), (4, True)] and partial.max_clients == 4
        assert "Interrupted before its answer" in (out / "search.md").read_text()
        (out / "search.md").unlink()  # report DIR re-renders a search from its search.json (api._report_search)
        code, _, err = run("report", str(out))
        assert code == 0, err
        assert "Interrupted before its answer" in (out / "search.md").read_text() and (out / "search.html").is_file()

        code, stdout, err = run(*args, "--json")  # the same search into the directory resumes, to the answer
    assert code == 0, err
    whole = SearchResult.model_validate_json((out / "search.json").read_text())
    assert not whole.interrupted and whole.max_clients == KNEE and "Interrupted" not in (out / "search.md").read_text()


@pytest.mark.parametrize("leftover", ["search.json", "probes only"])
def test_a_bench_grid_into_a_search_directory_is_refused(fake_server: FakeVllm, tmp_path: Path, leftover: str) -> None:
    # a grid into a search's --out was measured there, its summary.json beside the probes: the search, run again to
    # resume, then refused the folder as 'a bench run'
    find_max(_config(fake_server, slo={"ttft_ms": 10_000.0}, find_max_limit=1), tmp_path)
    if leftover == "probes only":  # a search killed before it wrote search.json
        (tmp_path / "search.json").unlink()
    sent = len(fake_server.chat_requests)
    grid = BenchConfig(base_url=fake_server.url, contexts=[16], clients=[1], reps=1, output_tokens=2)
    with pytest.raises(ConfigError, match=f"^{re.escape(str(tmp_path))} holds a --find-max search, not a bench run"):
        run_grid(grid, tmp_path)
    assert len(fake_server.chat_requests) == sent and not (tmp_path / "summary.json").exists()


def test_a_second_search_into_the_directory_of_one_running_is_busy(fake_server: FakeVllm, tmp_path: Path) -> None:
    # each probe's run_grid locked its own folder, the search none: a second search into the same --out, started
    # between two probes, measured its probes into it too, interleaving with the first's
    cfg = _config(fake_server, slo={"ttft_ms": 10_000.0}, find_max_limit=2)
    second: list[BaseException] = []

    def start_another_after_the_first_probe(event: ProgressEvent) -> None:
        if event.message.startswith("find-max: clients-1: meets") and not second:
            try:
                find_max(cfg, tmp_path)
            except BusyError as exc:
                second.append(exc)
            else:
                second.append(AssertionError("the second search ran"))

    result = find_max(cfg, tmp_path, on_progress=start_another_after_the_first_probe)
    assert [str(e) for e in second] == [f"another bench is writing {tmp_path}; choose another --out"]
    assert result.max_clients == 2 and _path(result) == [(1, True), (2, True)]
    assert len(fake_server.chat_requests) == 2 * 1 + 2 + 4  # one probe request per probe run, then its requests


def test_a_search_stopped_by_an_error_writes_what_it_measured(tmp_path: Path) -> None:
    # the server gone after two probes: the search raised EndpointError and wrote no search.json, so the two probes
    # judged were in no summary (search.md neither)
    srv = _server().start()

    def server_gone_after_two_probes(event: ProgressEvent) -> None:
        if event.message.startswith("find-max: clients-2: meets"):
            srv.stop()

    try:
        with pytest.raises(EndpointError) as err:
            api.find_max(_config(srv), out_dir=tmp_path, on_progress=server_gone_after_two_probes)
    finally:
        if srv._thread.is_alive():
            srv.stop()
    partial = SearchResult.model_validate_json((tmp_path / "search.json").read_text())
    assert partial.interrupted and _path(partial) == [(1, True), (2, True)] and partial.max_clients == 2
    assert partial.bound_reason.startswith(f"stopped by an error ({str(err.value).splitlines()[0]}) after 2 probes")
    assert partial.bound_reason.count("run the same --find-max search") == 1
    said = (tmp_path / "search.md").read_text()
    assert "Stopped before its answer: so far the largest" in said and "Stopped: stopped by an error" in said


def test_a_resumed_search_judges_its_probes_by_the_plan_it_started_with(tmp_path: Path) -> None:
    # --plan was no part of a probe's config: the search run again without it measured the loads beyond the plan's KV
    # wall (4 clients here, then 8: answer 8, not 2), and with another plan it judged the rest by that one
    plan = embedded_plan(max_model_len=4096, block_size=4, kv_cache_memory_bytes=48 * 46_080)  # 12 blocks of 4
    another = embedded_plan(max_model_len=4096, block_size=4, kv_cache_memory_bytes=1000 * 46_080)

    def ctrl_c_in_the_second_probe(event: ProgressEvent) -> None:
        if event.message.startswith("context 16 x 2 clients, rep 1/1: 1 request,"):
            raise KeyboardInterrupt

    events: list[str] = []
    with _server() as srv:
        cfg = _config(srv, slo={"ttft_ms": 10_000.0}, find_max_limit=8)  # 16 + 2 tokens: 5 blocks a client
        with pytest.raises(Interrupted):
            find_max(cfg, tmp_path, plan=plan, on_progress=ctrl_c_in_the_second_probe)
        with pytest.raises(
            ConfigError, match=r"\(clients-1\): --plan was the plan of .*\(12 KV blocks\), now .*\(250 KV"
        ):
            find_max(cfg, tmp_path, plan=another)
        resumed = find_max(cfg, tmp_path, on_progress=lambda e: events.append(e.message))  # the same command, no --plan
    assert _path(resumed) == [(1, True), (2, True), (4, False), (3, False)]
    assert [p.status for p in resumed.probes] == ["ok", "ok", "infeasible", "infeasible"]
    assert resumed.max_clients == 2 and resumed.kv_wall_clients == 2
    assert "find-max: --plan not given: the plan the search started with is used" in events


def test_a_probe_that_lost_requests_is_said_as_such_not_as_an_slo_miss(fake_server: FakeVllm, tmp_path: Path) -> None:
    # the server failed requests in the 2-client probe (it died mid-probe, here one answers 500), whose latency met
    # the SLOs: the search ended 'stopped: 2 clients missed the SLOs', as if the latency had missed them
    fake_server.fail_status = {6: 500}  # 1-3: the 1-client probe run (its probe request, 2 measured); 4-8: 2 clients
    events: list[str] = []
    cfg = _config(fake_server, slo={"ttft_ms": 10_000.0}, find_max_limit=2)
    result = api.find_max(cfg, lambda e: events.append(e.message), out_dir=tmp_path)
    assert _path(result) == [(1, True), (2, False)] and result.max_clients == 1
    assert (
        result.probes[1].requests_failed == 1 and result.probes[1].first_error == "HTTP 500: fake failure of request 6"
    )
    said = (
        "2 clients: 1 measured request failed (first: HTTP 500: fake failure of request 6), a miss whatever the latency"
    )
    assert result.bound_reason == said
    assert any(e.startswith("find-max: clients-2: misses (ok, 1 failed; p100 ttft_ms") for e in events)
    assert "| 2 | misses (1 failed) |" in (tmp_path / "search.md").read_text()


def test_a_search_into_a_file_or_fifo_is_named_for_what_it_is(tmp_path: Path) -> None:
    # the search's own mkdir said 'cannot create X: File exists' where a bench says what X is
    cfg = BenchConfig(base_url="http://127.0.0.1:9", contexts=[8], find_max="clients", slo={"ttft_ms": 100.0})
    plain, fifo = tmp_path / "plain", tmp_path / "fifo"
    plain.write_text("x")
    os.mkfifo(fifo)
    for path, kind in ((plain, "a file"), (fifo, "a FIFO")):
        with pytest.raises(ConfigError) as info:
            find_max(cfg, path)
        assert str(info.value) == f"{path} is {kind}, not a run directory"
