"""Trace replay against the fake server: recorded times (scaled), per-request lengths, bad traces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.vllm_server import FakeVllm
from onechip.bench import run_grid
from onechip.bench.runner import load_samples
from onechip.bench.trace import load_trace, offsets_s
from onechip.cli.bench_cmd import slip_lines
from onechip.errors import ConfigError
from onechip.report.markdown_bench import grids
from onechip.schemas.bench import BenchConfig
from onechip.schemas.inputs import build_request

TRACE = [
    {"timestamp": 1000, "input_length": 20, "output_length": 2, "hash_ids": [1]},
    {"timestamp": 1400, "input_length": 50, "output_length": 4},
    {"timestamp": 2000, "input_length": 20, "output_length": 3},
]


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_trace_is_replayed_at_its_times_with_its_lengths(fake_server: FakeVllm, tmp_path: Path) -> None:
    trace = write(tmp_path / "t.jsonl", TRACE)
    cfg = BenchConfig(
        base_url=fake_server.url, workload="trace", trace_file=trace, trace_speed=2.0, clients=[2], reps=1
    )
    run = run_grid(cfg, tmp_path / "run")
    samples = sorted(
        (s for s in load_samples(tmp_path / "run" / "requests.jsonl") if not s.warmup), key=lambda s: s.t_intended or 0
    )
    assert [(s.prompt_tokens, s.completion_tokens) for s in samples] == [(20, 2), (50, 4), (20, 3)]
    assert [s.prompt_tokens_target for s in samples] == [20, 50, 20]
    # recorded gaps 0.4 s and 0.6 s, at twice the speed: 0.2 s and 0.3 s
    t0 = samples[0].t_intended
    assert [round((s.t_intended or 0) - (t0 or 0), 3) for s in samples] == [0.0, 0.2, 0.5]
    assert all(abs(s.t_send - (s.t_intended or 0)) < 0.05 for s in samples)
    cell = run.cells[0]
    assert (cell.context_tokens, cell.clients, cell.status) == (20, 2, "ok")  # the trace's median prompt
    assert not cell.schedule_slipped
    assert cell.requests_ended_early == 0  # each entry's own output length, not the config's default


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"timestamp": 0, "output_length": 2}], "line 1: input_length"),
        ([{"timestamp": 0, "input_length": 0, "output_length": 2}], "line 1"),
        ([], "no requests"),
    ],
)
def test_a_bad_trace_names_its_line(tmp_path: Path, rows: list[dict[str, object]], message: str) -> None:
    path = write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ConfigError, match=message):
        load_trace(path)


def test_a_trace_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 3, "output_length": 1}\nnot json\n')
    with pytest.raises(ConfigError, match="line 2"):
        load_trace(path)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"workload": "trace"}, "give --trace FILE"),
        ({"trace_file": "t.jsonl"}, "give --workload trace too"),
        ({"workload": "trace", "trace_file": "t.jsonl", "rate_per_s": 2}, "--rate does not apply"),
        ({"workload": "trace", "trace_file": "t.jsonl", "contexts": "128"}, "--contexts does not apply"),
    ],
)
def test_trace_options_that_contradict(flags: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_request(BenchConfig, {"base_url": "http://127.0.0.1:1", **flags})


def test_calibration_of_a_trace_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """--calibration picks the grid cells simulate fits on; a trace replay has none and simulate cannot calibrate on
    one (sim.calibrate.check_cells): the flag was accepted and did nothing. One line, exit 2, nothing written."""
    trace = write(tmp_path / "t.jsonl", [{"timestamp": 0, "input_length": 20, "output_length": 2}])
    args = ["bench", "http://127.0.0.1:9", "--workload", "trace", "--trace", str(trace), "--calibration"]
    src = Path(__file__).resolve().parents[3] / "src"
    env = {"PYTHONPATH": str(src), "ONECHIP_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "onechip", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "--workload trace sends what the trace holds: --calibration does not apply" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_trace_faster_than_the_server_says_so(tmp_path: Path) -> None:
    rows = [{"timestamp": 0, "input_length": 20, "output_length": 2} for _ in range(5)]
    with FakeVllm(ttft_s=0.1) as srv:
        cfg = BenchConfig(
            base_url=srv.url, workload="trace", trace_file=write(tmp_path / "t.jsonl", rows), clients=[1], reps=1
        )
        run = run_grid(cfg, tmp_path / "run")
    assert run.cells[0].schedule_slipped
    assert any("replaying the trace" in line for line in slip_lines(run))
    assert any("the trace's send times" in line for line in grids(run))


@pytest.mark.parametrize(
    ("timestamp_ms", "said"),
    [
        (1e300, "--trace replays over 1.0e+297 s at --trace-speed 1; at most 604,800 s"),  # 1e300 ms = 1e297 s
        (700_000_000, "--trace replays over 700,000 s at --trace-speed 1; at most 604,800 s"),  # 7 days = 604,800 s
    ],
)
def test_a_trace_too_long_says_its_length_readably(tmp_path: Path, timestamp_ms: float, said: str) -> None:
    """A trace whose last timestamp is 1e300 ms is refused (over MAX_SECONDS, 7 days) with its length in three
    figures, where it printed a 298-digit number of seconds; a length of a few days keeps its digits."""
    path = tmp_path / "t.jsonl"
    rows = [{"timestamp": 0, "input_length": 8, "output_length": 4}, {"timestamp": timestamp_ms, "input_length": 8,
            "output_length": 4}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError) as err:
        offsets_s(load_trace(path), 1.0)
    assert str(err.value) == said
