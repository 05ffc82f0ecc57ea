"""Long jobs over MCP: bench reports progress notifications from the same callbacks the CLI draws, and a
cancelled bench call stops at its next request and keeps every finished request on disk (resumable)."""

from __future__ import annotations

import json
import threading
import time

import anyio
from mcp import Client

from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.mcp.server import build_server
from onechip.progress import ProgressEvent


def test_bench_reports_progress_and_returns_the_run(tmp_path):
    seen: list[tuple[float, str | None]] = []

    async def progress(done, total, message):
        seen.append((done, message))

    args = {"contexts": [64], "clients": [1, 2], "reps": 1, "output_tokens": 4, "out_dir": str(tmp_path / "run")}

    async def go(url):
        async with Client(build_server()) as client:
            return await client.call_tool("bench", {"base_url": url, **args}, progress_callback=progress)

    with FakeVllm(itl_s=0.001) as srv:
        result = anyio.run(go, srv.url)
    assert not result.is_error, result.content[0].text
    cells = result.structured_content["cells"]
    assert [(c["context_tokens"], c["clients"], c["status"]) for c in cells] == [(64, 1, "ok"), (64, 2, "ok")]
    assert result.content[0].text.startswith(
        f"{tmp_path / 'run'}: 2 cells (output tok/s: steady window; TTFT: median): 64x1 "
    )
    assert result.structured_content["run_dir"] == str(tmp_path / "run")
    assert (tmp_path / "run" / "summary.json").is_file()
    assert any(m and m.startswith("bench: ") and "requests" in m for _, m in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_cancelled_bench_keeps_finished_requests(tmp_path, monkeypatch):
    out = tmp_path / "run"
    args = {"contexts": [64], "clients": [1], "reps": 3, "output_tokens": 8, "requests_per_client": 20,
            "warmup_requests": 0, "out_dir": str(out)}  # fmt: skip
    requests = out / "requests.jsonl"
    returned = threading.Event()
    bench = api.bench

    def watched(*a, **kw):  # the worker thread's job: when it has returned, nothing more is measured
        try:
            return bench(*a, **kw)
        finally:
            returned.set()

    monkeypatch.setattr(api, "bench", watched)

    async def go(url):
        async with Client(build_server()) as client, anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "bench", {"base_url": url, **args})
            with anyio.fail_after(60):
                while not requests.is_file() or len(requests.read_text().splitlines()) < 3:
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()

    with FakeVllm(ttft_s=0.05, itl_s=0.01) as srv:
        anyio.run(go, srv.url)
        # the worker thread stops at its next request (before: a 0.5-s sleep, which a loaded machine outran)
        assert returned.wait(60)
        kept = len(requests.read_text().splitlines())
        time.sleep(0.5)
        assert len(requests.read_text().splitlines()) == kept  # stopped, not still measuring
    assert kept >= 3
    assert all(json.loads(line)["context_tokens"] == 64 for line in requests.read_text().splitlines())


def test_a_bench_that_fails_before_measuring_leaves_no_run_directory(tmp_path, monkeypatch):
    # each call against an unreachable URL left an empty runs/<run-id>/ (paths.new_run_dir) behind
    monkeypatch.chdir(tmp_path)

    async def go():
        async with Client(build_server()) as client:
            unreachable = await client.call_tool("bench", {"base_url": "http://127.0.0.1:9"})
            search = await client.call_tool(
                "find_max", {"base_url": "http://127.0.0.1:9", "find_max": "clients", "slo": {"ttft_ms": 500}}
            )
            resume = await client.call_tool("bench", {"base_url": "http://127.0.0.1:9", "resume": True})
            return unreachable, search, resume

    unreachable, search, resume = anyio.run(go)
    assert unreachable.is_error and unreachable.content[0].text.startswith("cannot reach http://127.0.0.1:9/v1/models")
    assert search.is_error and search.content[0].text.startswith("cannot reach http://127.0.0.1:9/v1/models")
    # resume without out_dir named a fresh empty directory: "cannot resume runs/2026...: no summary.json"
    assert resume.content[0].text == "resume continues the run in out_dir: give out_dir"
    assert not (tmp_path / "runs").exists()  # nor the runs/ it made for them


def test_a_second_bench_onto_the_same_out_dir_names_out_dir_not_the_cli_flag(tmp_path):
    """bench's refusal of an out_dir that already holds a run (bench.runner) says "choose another --out": over MCP
    that named a flag the tool does not take; the tool's argument is out_dir (as_parameters maps it)."""
    out = tmp_path / "run"
    args = {"contexts": [64], "clients": [1], "reps": 1, "output_tokens": 2, "requests_per_client": 1,
            "out_dir": str(out)}  # fmt: skip

    async def go(url):
        async with Client(build_server()) as client:
            return [await client.call_tool("bench", {"base_url": url, **args}) for _ in range(2)]

    with FakeVllm(itl_s=0.001) as srv:
        first, second = anyio.run(go, srv.url)
    assert not first.is_error, first.content[0].text
    refused = second.content[0].text
    assert second.is_error and refused.startswith(f"{out} already holds a bench run"), refused
    assert "--out" not in refused and refused.endswith("or choose another out_dir"), refused


def test_find_max_without_out_dir_names_the_directory_it_wrote(tmp_path, monkeypatch):
    """find_max without out_dir wrote a new runs/<run-id>/ (search.json, a run per probe) that its result did not
    name, as bench and simulate did before WrittenRun; it now carries run_dir and the summary starts with it."""
    monkeypatch.chdir(tmp_path)
    args = {"contexts": [64], "output_tokens": 2, "requests_per_client": 1, "warmup_requests": 0, "reps": 1,
            "find_max": "clients", "slo": {"ttft_ms": 60_000}, "find_max_limit": 2}  # fmt: skip

    async def go(url):
        async with Client(build_server()) as client:
            return await client.call_tool("find_max", {"base_url": url, **args})

    with FakeVllm(itl_s=0.001) as srv:
        result = anyio.run(go, srv.url)
    assert not result.is_error, result.content[0].text
    (made,) = (tmp_path / "runs").iterdir()
    run_dir = result.structured_content["run_dir"]
    assert tmp_path / run_dir == made and (made / "search.json").is_file()
    assert result.content[0].text.startswith(f"{run_dir}: ")


def test_a_run_resumes_as_the_refusal_says_without_the_url_again(tmp_path):
    """bench's refusal of an out_dir holding a run says 'call bench again with resume: true, out_dir: DIR', and the
    resume description 'its saved config decides'; the tool required base_url all the same, so that very call was
    refused ("Invalid value for 'base_url': Field required"), where the CLI's `bench --resume DIR` needs no URL."""
    out = tmp_path / "run"
    args = {"contexts": [64], "clients": [1], "reps": 1, "output_tokens": 2, "requests_per_client": 1,
            "out_dir": str(out)}  # fmt: skip

    async def go(url):
        async with Client(build_server()) as client:
            first = await client.call_tool("bench", {"base_url": url, **args})
            again = await client.call_tool("bench", {"base_url": url, **args})
            resumed = await client.call_tool("bench", {"resume": True, "out_dir": str(out)})
            neither = await client.call_tool("bench", {"out_dir": str(tmp_path / "other")})
            return first, again, resumed, neither

    with FakeVllm(itl_s=0.001) as srv:
        first, again, resumed, neither = anyio.run(go, srv.url)
    assert not first.is_error, first.content[0].text
    assert again.is_error and "call bench again with resume: true, out_dir: " in again.content[0].text
    assert not resumed.is_error, resumed.content[0].text
    assert json.loads((out / "summary.json").read_text())["config"]["base_url"] == srv.url
    said = neither.content[0].text
    assert neither.is_error and said.startswith("base_url is required") and "\n" not in said, said
    assert not (tmp_path / "other").exists()


def test_find_max_refuses_resume_rather_than_starting_over(tmp_path):
    """find_max shares bench's input, resume included, but resumes by being called again into the same out_dir:
    resume: true was dropped unsaid and a new search ran (the CLI refuses --find-max with --resume); it is refused in
    one line, before any request."""

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool(
                "find_max", {"base_url": "http://127.0.0.1:9", "find_max": "clients", "slo": {"ttft_ms": 500},
                             "resume": True, "out_dir": str(tmp_path / "search")},
            )  # fmt: skip

    result = anyio.run(go)
    assert result.is_error and result.content[0].text == (
        "find_max resumes when called again with the same out_dir: give out_dir, not resume"
    )


def test_two_simulate_calls_into_one_out_dir_at_once_keep_the_run_they_say_they_wrote(tmp_path, monkeypatch):
    """simulate refuses an out_dir that holds a run, but checked it before predicting and wrote after: two calls at
    once into one out_dir both passed the check, both wrote summary.json and both answered 'out_dir: N cells', and
    the first to write was overwritten by the second (its prediction lost, its answer naming another's file)."""
    from onechip.api import _predict

    both_predicted = threading.Barrier(2, timeout=30)
    predict = _predict.predicted_cells

    def in_step(*a, **kw):  # each call predicts, then waits for the other: both have passed the check before writing
        cells = predict(*a, **kw)
        both_predicted.wait()
        if a[2].contexts == [512]:  # and writes after the other has written
            time.sleep(0.5)
        return cells

    monkeypatch.setattr(_predict, "predicted_cells", in_step)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "same"

    async def go():
        async with Client(build_server()) as client:
            plan = await client.call_tool("plan", {"model": "SmolLM2-135M-Instruct", "chip": "l4"})
            (tmp_path / "plan.json").write_text(json.dumps(plan.structured_content))
            got: dict[int, object] = {}

            async def one(contexts: int) -> None:
                args = {"plan": str(tmp_path / "plan.json"), "out_dir": str(out), "contexts": [contexts]}
                got[contexts] = await client.call_tool("simulate", args)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, 256)
                tg.start_soon(one, 512)
            return got

    got = anyio.run(go)
    done = [c for c, r in got.items() if not r.is_error]
    assert len(done) == 1, {c: r.content[0].text for c, r in got.items()}
    refused = next(r for r in got.values() if r.is_error).content[0].text
    assert str(out) in refused and "\n" not in refused and "--out" not in refused, refused
    assert json.loads((out / "summary.json").read_text())["config"]["contexts"] == done


def test_a_bench_whose_every_cell_failed_is_a_tool_error_that_says_how_to_measure_again(tmp_path):
    """The CLI's bench exits 6 when every measured cell failed ('every measured cell failed; first: ...; measure them
    again with --resume DIR'); over MCP the same run was a success (isError false) whose summary listed the failures,
    so an agent went on to price and report a run that measured nothing. The run is kept, and the resume it names
    works."""
    out = tmp_path / "run"
    args = {"contexts": [64], "clients": [1], "reps": 1, "output_tokens": 4, "requests_per_client": 2,
            "warmup_requests": 0, "out_dir": str(out)}  # fmt: skip

    async def go(url):
        async with Client(build_server()) as client:
            return await client.call_tool("bench", {"base_url": url, **args})

    with FakeVllm(cut_requests=set(range(2, 50))) as srv:  # the probe (request 1) passes, every measured one is cut
        result = anyio.run(go, srv.url)
    said = result.content[0].text
    assert result.is_error, said
    assert said.startswith("every measured cell failed; first: rep 1/1: 2 of 2 measured requests failed"), said
    assert said.endswith(f"measure them again (call bench again with resume: true, out_dir: {out})"), said
    assert (out / "requests.jsonl").is_file()  # what was measured (the failures) is kept for the resume


def test_router_policies_the_tool_cannot_compare_are_refused_not_dropped(tmp_path):
    """bench and find_max take BenchConfig's router_policies, but the bench tool ran api.bench (one plain run, the
    policies dropped unsaid: the CLI compares them, or refuses a URL that is not the replicas' router) and find_max
    searched as if none were given (the CLI too): both answered a success for a comparison never made. Each is
    refused in one line before any request."""
    grid = {"contexts": [64], "reps": 1, "output_tokens": 2, "requests_per_client": 1, "warmup_requests": 0}
    policies = {"router_policies": ["round_robin", "random"]}

    async def go(url):
        async with Client(build_server()) as client:
            bench = await client.call_tool(
                "bench", {"base_url": url, **grid, **policies, "out_dir": str(tmp_path / "b")}
            )
            search = await client.call_tool(
                "find_max", {"base_url": url, **grid, **policies, "find_max": "rate", "slo": {"ttft_ms": 1000},
                             "out_dir": str(tmp_path / "s")},
            )  # fmt: skip
            return bench, search

    with FakeVllm() as srv:
        bench, search = anyio.run(go, srv.url)
        assert not srv.chat_requests
    assert bench.is_error and bench.content[0].text == (
        "router_policies compares vllm-router policies, a result the bench tool does not return: "
        "run `onechip bench URL --router-policies a,b` against the router of `onechip up --replicas N`"
    ), bench.content[0].text
    assert search.is_error and search.content[0].text == (
        "find_max searches the load on one router policy: "
        "router_policies does not apply (compare policies in a bench without find_max)"
    ), search.content[0].text
    assert not (tmp_path / "b").exists() and not (tmp_path / "s").exists()


def test_a_cancelled_demo_stops_its_engine_and_says_so_in_its_run(tmp_path, monkeypatch):
    """A cancelled call's progress sink raised KeyboardInterrupt at every later event, as well as the one interrupt
    run_job sends: a demo's cleanup reports its stage 'down' before it stops the engine, so a cancelled demo was
    interrupted again there, left its engine running (tied to the server, on its port, with no record for `down`;
    with cloud: gcp its TPU billing) and its run.json saying 'running'. One cancel is one interrupt, as one Ctrl-C."""
    from onechip.api import _demo
    from onechip.engines import model_store

    stopped = threading.Event()
    measuring = threading.Event()

    class Engine:  # the embedded engine, as far as the demo's cleanup goes
        def __init__(self, *a, **kw):
            pass

        def stop(self):
            stopped.set()

    def stages(engine, request, run_dir, stage, done, on_progress):  # a long stage reporting progress
        with stage("bench"):
            while True:
                measuring.set()
                on_progress(ProgressEvent("bench", "a request"))
                time.sleep(0.01)

    monkeypatch.setattr(_demo, "EmbeddedEngine", Engine)
    monkeypatch.setattr(model_store, "ensure_model", lambda: tmp_path)
    monkeypatch.setattr(_demo, "_demo_stages", stages)
    monkeypatch.chdir(tmp_path)  # runs_root (runs/) inside the allowed folders
    out = tmp_path / "run"

    async def go():
        async with Client(build_server()) as client, anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "demo", {"confirm": True, "out_dir": str(out)})
            with anyio.fail_after(30):
                while not measuring.is_set():
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()

    anyio.run(go)
    assert stopped.wait(30)
    deadline = time.monotonic() + 10
    while "down" not in json.loads((out / "run.json").read_text())["stage_timings_s"] and time.monotonic() < deadline:
        time.sleep(0.05)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "interrupted" and "down" in manifest["stage_timings_s"], manifest
