"""bench --resume and the files a workload is read from (runner.INPUT_FILES): compared by their bytes, not their path.

A trace edited in place between a run and its resume replayed the new trace into the old run's requests.jsonl, and
the summary mixed samples of two workloads; a copy of the same trace at another path was refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from test_bench_cli import app
from typer.testing import CliRunner

from fakes.vllm_server import FakeVllm
from onechip.bench import run_grid
from onechip.bench.runner import INPUT_FILES, input_digests
from onechip.errors import ConfigError
from onechip.progress import ProgressEvent
from onechip.schemas.bench import BenchConfig, BenchRun
from onechip.schemas.inputs import build_request

TRACE = [
    {"timestamp": 0, "input_length": 20, "output_length": 2},
    {"timestamp": 100, "input_length": 30, "output_length": 2},
]
WORKLOAD = "turns: 1\nuser_tokens: 4\ncall_tokens: 4\nresult_tokens: 4\n"


def trace_run(server: FakeVllm, trace: Path) -> BenchConfig:
    return BenchConfig(base_url=server.url, workload="trace", trace_file=trace, clients=[1], reps=1, warmup_requests=0)


def workload_run(server: FakeVllm, path: Path) -> BenchConfig:
    """An agent run shaped by a workload file, built as the CLI builds it (the file's keys read into the config)."""
    given = {"base_url": server.url, "workload_file": path, "contexts": [40], "clients": [1], "reps": 1}
    return build_request(BenchConfig, {**given, "output_tokens": 2, "warmup_requests": 0})


def write_trace(path: Path, rows: list[dict[str, int]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def saved(run_dir: Path) -> BenchRun:
    return BenchRun.model_validate_json((run_dir / "summary.json").read_text())


def test_the_run_saves_the_sha256_of_each_input_file(fake_server: FakeVllm, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.jsonl", TRACE)
    run_grid(trace_run(fake_server, trace), tmp_path / "run")
    assert saved(tmp_path / "run").config.input_sha256 == {"trace_file": hashlib.sha256(trace.read_bytes()).hexdigest()}
    # every path-valued field of the config is a file the workload is read from, and is digested
    paths = {name for name, f in BenchConfig.model_fields.items() if "Path" in str(f.annotation)}
    assert set(INPUT_FILES) == paths


def test_a_trace_edited_in_place_is_refused_and_nothing_is_sent(fake_server: FakeVllm, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.jsonl", TRACE)
    run_grid(trace_run(fake_server, trace), tmp_path / "run")
    samples = (tmp_path / "run" / "requests.jsonl").read_bytes()
    sent = len(fake_server.chat_requests)
    write_trace(trace, [{**r, "input_length": 60} for r in TRACE])  # same path, another workload
    resumed = BenchConfig.resumed(saved(tmp_path / "run").config, {})
    with pytest.raises(ConfigError) as err:
        run_grid(resumed, tmp_path / "run", resume=True)
    assert str(err.value) == f"cannot resume {tmp_path / 'run'}: --trace {trace} changed since the run started"
    assert len(fake_server.chat_requests) == sent
    assert (tmp_path / "run" / "requests.jsonl").read_bytes() == samples


def test_the_same_trace_at_another_path_resumes(fake_server: FakeVllm, tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.jsonl", TRACE)
    run_grid(trace_run(fake_server, trace), tmp_path / "run")
    moved = tmp_path / "elsewhere.jsonl"
    trace.rename(moved)
    sent = len(fake_server.chat_requests)
    run = run_grid(trace_run(fake_server, moved), tmp_path / "run", resume=True)
    assert len(fake_server.chat_requests) == sent + 1  # the probe: its one repetition was reused
    assert run.cells[0].status == "ok"
    assert saved(tmp_path / "run").config.trace_file == moved
    # other bytes at a third path are refused, naming the file the run was measured with
    other = write_trace(tmp_path / "other.jsonl", TRACE[:1])
    with pytest.raises(
        ConfigError, match=f"--trace {other} changed since the run started \\(summary.json names {moved}\\)$"
    ):
        run_grid(trace_run(fake_server, other), tmp_path / "run", resume=True)


def test_a_workload_file_is_compared_by_its_bytes_too(fake_server: FakeVllm, tmp_path: Path) -> None:
    shape = tmp_path / "agent.yaml"
    shape.write_text(WORKLOAD)
    run_grid(workload_run(fake_server, shape), tmp_path / "run")
    config = saved(tmp_path / "run").config
    assert config.input_sha256 == {"workload_file": hashlib.sha256(WORKLOAD.encode()).hexdigest()}
    shape.write_text(WORKLOAD.replace("turns: 1", "turns: 8"))  # the saved config still runs 1 turn: a silent lie
    with pytest.raises(ConfigError, match=f"--workload-file {shape} changed since the run started$"):
        run_grid(BenchConfig.resumed(config, {}), tmp_path / "run", resume=True)


def test_an_input_file_given_only_on_resume_is_refused(fake_server: FakeVllm, tmp_path: Path) -> None:
    cfg = BenchConfig(base_url=fake_server.url, workload="agent", contexts=[40], clients=[1], reps=1, turns=1)
    run_grid(cfg, tmp_path / "run")
    shape = tmp_path / "agent.yaml"
    shape.write_text("turns: 1\n")  # the resume reads no workload file: its keys would be ignored
    resumed = BenchConfig.resumed(saved(tmp_path / "run").config, {"workload_file": shape})
    with pytest.raises(ConfigError, match=f"--workload-file {shape} was not given when the run started$"):
        run_grid(resumed, tmp_path / "run", resume=True)


def test_a_summary_saved_before_the_digest_resumes_with_a_note_kept_by_later_resumes(
    fake_server: FakeVllm, tmp_path: Path
) -> None:
    """An older onechip saved no digest: refusing would leave a long run that cannot be finished, so it resumes, and
    the run's notes (summary.json, the report) say the earlier samples were not checked against the file."""
    trace = write_trace(tmp_path / "t.jsonl", TRACE)
    run_grid(trace_run(fake_server, trace), tmp_path / "run")
    summary = tmp_path / "run" / "summary.json"
    old = json.loads(summary.read_text())
    del old["config"]["input_sha256"]
    summary.write_text(json.dumps(old))
    events: list[ProgressEvent] = []
    run = run_grid(trace_run(fake_server, trace), tmp_path / "run", resume=True, on_progress=events.append)
    note = (
        f"not checked on resume: --trace {trace}: summary.json saved no sha256 of it (an older onechip), so the "
        "samples measured before the resume may be of other content"
    )
    assert note in run.notes and f"resume: {note}" in [e.message for e in events]
    assert saved(tmp_path / "run").config.input_sha256 == input_digests(trace_run(fake_server, trace))
    again = run_grid(trace_run(fake_server, trace), tmp_path / "run", resume=True)  # now checked, still said
    assert again.notes.count(note) == 1


def test_an_unreadable_input_file_names_its_flag(tmp_path: Path) -> None:
    cfg = BenchConfig(base_url="http://127.0.0.1:9", workload="trace", trace_file=tmp_path, clients=[1])
    with pytest.raises(ConfigError, match=f"^--trace {tmp_path}: "):
        input_digests(cfg)


def test_the_cli_resumes_a_moved_trace_and_refuses_an_edited_one_in_one_line(
    fake_server: FakeVllm, tmp_path: Path
) -> None:
    trace = write_trace(tmp_path / "t.jsonl", TRACE)
    first = ["bench", fake_server.url, "--workload", "trace", "--trace", str(trace), "--clients", "1", "--reps", "1"]
    assert CliRunner().invoke(app(), [*first, "--out", str(tmp_path / "run")]).exit_code == 0
    moved = trace.rename(tmp_path / "moved.jsonl")
    again = ["bench", "--resume", str(tmp_path / "run"), "--workload", "trace", "--trace", str(moved)]
    assert CliRunner().invoke(app(), again).exit_code == 0
    write_trace(moved, TRACE[:1])
    refused = CliRunner().invoke(app(), ["bench", "--resume", str(tmp_path / "run")])
    assert refused.exit_code != 0
    assert str(refused.exception) == f"cannot resume {tmp_path / 'run'}: --trace {moved} changed since the run started"


def test_a_trace_edited_during_the_run_stops_it_in_one_line(fake_server: FakeVllm, tmp_path: Path) -> None:
    """The run reads its trace again for each repetition (bench.runner._trace); the digest is taken once, when the
    run starts. A trace rewritten after that was replayed as the new workload into the same run."""
    trace = write_trace(tmp_path / "t.jsonl", TRACE)

    def edit(event: ProgressEvent) -> None:  # the first progress line comes after the run took the digest
        write_trace(trace, [{**row, "input_length": 90} for row in TRACE])

    config = trace_run(fake_server, trace).model_copy(update={"reps": 2})
    with pytest.raises(ConfigError, match=r"^--trace .*t\.jsonl changed during the run \(not the bytes it started"):
        run_grid(config, tmp_path / "run", on_progress=edit)
