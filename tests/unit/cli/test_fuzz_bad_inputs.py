"""Issue 17's fuzz test: every command, run with a table of bad inputs (negatives, NaN, inf, huge numbers,
empty values, malformed lists, wrong types, missing / file-as-directory / earlier-run paths, servers that
answer garbage or never answer), must end with

- a non-zero exit,
- at most 2 lines on stderr and no "Traceback",
- nothing written outside `--out` (the working directory and ONECHIP_HOME are compared before and after),
- no process left behind (this process's children before and after), and no engine or process started.

The rows run in-process through the console script's main() (the `run` fixture); the few that need a real
interpreter (`python -m onechip`: its own exit status and stderr) run as subprocesses. Servers are the one
fake vLLM (tests/fakes/vllm_server.py) on 127.0.0.1 with `raw_answers`, and a socket that never answers.
Placeholders in a row ({html}, {file}, {out}, ...) are filled per test from `_places`.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.vllm_server import FakeVllm

SRC = Path(__file__).resolve().parents[3] / "src"

# --- the servers: garbage answers on one path each, and one that never answers

GARBAGE = {
    "html": {"/v1/models": (200, b"<html><body>proxy login</body></html>", "text/html")},
    "badjson": {"/v1/models": (200, b'{"data": [', "application/json")},
    "list": {"/v1/models": (200, b"[1, 2, 3]", "application/json")},
    "nodata": {"/v1/models": (200, b'{"object": "list", "data": []}', "application/json")},
    "noid": {"/v1/models": (200, b'{"object": "list", "data": [{"object": "model"}]}', "application/json")},
    "status500": {"/v1/models": (500, b"upstream exploded", "text/plain")},
    "tok_html": {"/tokenize": (200, b"<html></html>", "text/html")},
    "tok_nocount": {"/tokenize": (200, b'{"tokens": [1, 2]}', "application/json")},
    "tok_badcount": {"/tokenize": (200, b'{"count": "many"}', "application/json")},
    "chat_html": {"/v1/chat/completions": (200, b"<html></html>", "text/html")},
    "chat_badsse": {"/v1/chat/completions": (200, b"data: {bad\n\n", "text/event-stream")},
    "chat_json": {"/v1/chat/completions": (200, b'{"choices": 5}', "application/json")},
}
SERVERS = [*GARBAGE, "silent", "dead"]
# the servers `check` cannot even start against (it asks /v1/models first); against the others it runs and
# judges (a garbage chat answer is a failed probe, exit 10: tests/unit/cli/test_bad_input.py)
CHECK_SERVERS = [name for name in SERVERS if not name.startswith(("tok_", "chat_"))]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    fakes = {name: FakeVllm(raw_answers=raw) for name, raw in GARBAGE.items()}
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts (kernel backlog), never answers
        for fake in fakes.values():
            fake.start()
        try:
            urls = {name: fake.url for name, fake in fakes.items()}
            urls["silent"] = f"http://127.0.0.1:{silent.getsockname()[1]}"
            urls["dead"] = "http://127.0.0.1:9"  # discard port: connection refused
            yield urls
        finally:
            for fake in fakes.values():
                fake.stop()


# --- the table

NUMBERS = ["-1", "0", "nan", "inf", "-inf", "1e309", "99999999999999999999999", "abc", "", "1,2"]
FLOATS_NONPOS = ["-1", "0", "nan", "inf", "-inf", "1e309", "1e300", "abc", ""]
LISTS = ["a,b", "1;2", "[1,2]", "-5,10", "0", "128,abc", "1e3", "nan", "99999999999999999999999", "1.5"]
T = "--timeout-s"
DEAD = "{dead}"
OUT = ["--out", "{out}"]


def _bench_rows() -> list[list[str]]:
    rows = [["bench", DEAD, "--contexts", v, *OUT] for v in LISTS]
    rows += [["bench", DEAD, "--clients", v, *OUT] for v in LISTS]
    for flag in ("--reps", "--output-tokens", "--requests-per-client", "--workers"):
        rows += [["bench", DEAD, flag, v, *OUT] for v in ("-1", "0", "nan", "99999999999999999999999", "x")]
    for flag in ("--duration-s", T, "--rate"):
        rows += [["bench", DEAD, flag, v, *OUT] for v in ("-1", "0", "nan", "inf", "1e300")]
    rows += [["bench", DEAD, "--warmup-s", v, *OUT] for v in ("-1", "nan", "inf", "1e300")]
    rows += [
        ["bench", DEAD, "--slo", "ttft_ms", *OUT],
        ["bench", DEAD, "--slo", "bogus_ms=5", *OUT],
        ["bench", DEAD, "--slo", "ttft_ms=abc", *OUT],
        ["bench", DEAD, "--arrivals", "poisson", *OUT],
        ["bench", DEAD, "--arrivals", "sometimes", "--rate", "1", *OUT],
        ["bench", DEAD, "--duration-s", "5", "--requests-per-client", "2", *OUT],
        ["bench", DEAD, "--plan", "{missing}", *OUT],
        ["bench", DEAD, "--plan", "{file}", *OUT],
        ["bench", DEAD, "--out", "{file}"],
        ["bench", DEAD, "--out", "{file_sub}"],
        ["bench", DEAD, "--out", "{bench_run}"],
        ["bench", DEAD, "--resume", "{missing}"],
        ["bench", DEAD, "--resume", "{empty_dir}"],
        ["bench", "--resume", "{trunc_run}"],
        ["bench", "--resume", "{file}"],
        ["bench", *OUT],
        ["bench", "not-a-url", *OUT],
        ["bench", "ftp://127.0.0.1:9", *OUT],
        ["bench", "http://", *OUT],
        ["bench", "http://127.0.0.1:99999", *OUT],
    ]
    rows += [["bench", f"{{{s}}}", "--contexts", "16", "--clients", "1", T, "0.3", *OUT] for s in SERVERS]
    return rows


def _check_rows() -> list[list[str]]:
    rows = [["check", f"{{{s}}}", T, "0.3", *OUT] for s in CHECK_SERVERS]
    rows += [["check", DEAD, T, v] for v in FLOATS_NONPOS]
    rows += [["check", DEAD, "--only", v] for v in ("foo", "smoke,bogus", "chat;tools", "1")]
    rows += [["check", DEAD, "--allow", v] for v in ("great", "pass,maybe", "1")]
    rows += [["check", DEAD, "--needle-lengths", v] for v in ("a,b", "-5", "0", "1.5", "nan")]
    rows += [["check", DEAD, "--needle-depths", v] for v in ("1.5", "-0.1", "nan", "inf", "x")]
    rows += [["check", DEAD, "--agent-cases", v] for v in ("-1", "0", "x", "99999999999999999999999")]
    rows += [["check", DEAD, "--tool-choice", v] for v in ("sometimes", "auto,never")]
    rows += [
        ["check", DEAD, "--out", "{file}"],
        ["check", DEAD, "--out", "{file_sub}"],
        ["check", DEAD, "--out", "{checks_run}"],
        ["check"],
        ["check", "", *OUT],
        ["check", "not-a-url", *OUT],
        ["check", "http://127.0.0.1:99999", *OUT],
        ["check", DEAD, "--bogus"],
    ]
    return rows


def _plan_rows() -> list[list[str]]:
    m, c = "google/gemma-4-E2B-it", ["--chip", "v5e-1"]
    # -1 is vLLM's auto-fit (as 'auto'), planned (tests/unit/cli/test_max_model_len_auto.py); -2 is not
    rows = [["plan", m, *c, "--max-model-len", v] for v in ["-2", *NUMBERS[1:]]]
    rows += [["plan", m, *c, "--gpu-memory-utilization", v] for v in ("0", "1.5", "-1", "nan", "inf", "x")]
    rows += [["plan", m, *c, "--tensor-parallel-size", v] for v in ("0", "-1", "x", "1e3")]
    rows += [["plan", m, *c, "--block-size", v] for v in ("0", "-16", "x")]
    rows += [["plan", m, *c, "--kv-cache-memory", v] for v in ("0", "-1", "x")]
    rows += [["plan", m, *c, "--contexts", v] for v in ("a,b", "-5", "0", "1;2")]
    rows += [
        ["plan", m],
        ["plan", m, "--chip", "bogus-chip"],
        ["plan", m, "--chip", ""],
        ["plan", m, *c, "--engine", "sglang"],
        ["plan", m, *c, "--kv-cache-dtype", "int3"],
        ["plan", m, *c, "--launch", "kubernetes"],
        ["plan", m, *c, "--against", "{missing}"],
        ["plan", m, *c, "--against", "{empty_dir}"],
        ["plan", "{empty_dir}", *c],
        ["plan", "{file}", *c],
        ["plan", "{missing}", *c],
        ["plan", m, *c, "--set", "max-model-len=abc"],
        ["plan", m, *c, "--max-model-len", "4096", "--set", "max-model-len=8192"],
        ["plan", m, *c, "--launch", "embedded"],
        ["plan", m, *c, "--launcher", "'unbalanced"],
        ["plan", m, *c, "--port", "70000"],
    ]
    return rows


def _up_rows() -> list[list[str]]:
    v = ["up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4", "--dry-run"]
    rows = [["up", "--port", p] for p in ("0", "-1", "70000", "x", "nan")]
    rows += [["up", T, t] for t in ("0", "-5", "nan", "inf", "1e300")]
    rows += [["up", "--kv-cache-space-gib", k] for k in ("0", "-1", "x", "99999999")]
    rows += [
        ["up", "--engine", "tgi"],
        ["up", "--engine", "vllm"],
        ["up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it"],
        ["up", "--model", "google/gemma-4-E2B-it", "--chip", "l4"],
        ["up", "--host", "user@host"],
        ["up", "--image", "vllm/vllm-tpu:latest"],
        ["up", "--set", "max-model-len=8192"],
        ["up", "--engine", "vllm", "--plan", "{missing}"],
        ["up", "--engine", "vllm", "--plan", "{file}"],
        ["up", "--engine", "vllm", "--plan", "{empty_dir}"],
        [*v, "--launcher", "'unbalanced"],
        [*v, "--launcher", ""],
        [*v, "--hf-token-file", "{missing}"],
        [*v, "--hf-token-file", "{empty_dir}"],
        [*v, "--tunnel-port", "0"],
        [*v, "--ssh-opt", "Port=22", "--port", "x"],
        ["up", "--bogus"],
    ]
    return rows


def _cost_rows() -> list[list[str]]:
    c = ["cost", "--chip", "v5e-1"]
    rows = [[*c, "--output-tok-per-s", v] for v in ("-1", "0", "nan", "inf", "1e-300", "1e300", "x", "")]
    rows += [[*c, "--output-tok-per-s", "100", "--cold-boot-s", v] for v in ("-1", "nan", "inf", "1e300")]
    rows += [[*c, "--output-tok-per-s", "100", "--warm-boot-s", v] for v in ("-1", "nan", "inf")]
    rows += [[*c, "--output-tok-per-s", "100", "--pricing", v] for v in ("bogus", "spot,never", "1")]
    rows += [
        ["cost"],
        ["cost", "--chip", "bogus-chip", "--output-tok-per-s", "100"],
        [*c, "--output-tok-per-s", "100", "--region", "moon-central1"],
        [*c, "--output-tok-per-s", "100", "--write"],
        [*c, "--run", "{missing}"],
        [*c, "--run", "{file}"],
        [*c, "--run", "{empty_dir}"],
        ["cost", "--run", "{trunc_run}", "--write"],
        ["cost", "--run", "{garbage_run}"],
    ]
    return rows


def _other_rows() -> list[list[str]]:
    rows = [["report", p] for p in ("{missing}", "{file}", "{empty_dir}", "{trunc_run}", "{garbage_run}", "")]
    rows += [["report", "{bench_run}", "--format", f] for f in ("pdf", "", ",", "md;html")]
    rows += [["report", "{bench_run}", "--compare", p] for p in ("{missing}", "{empty_dir}", "{file}")]
    rows += [["demo", "--out", p] for p in ("{file}", "{file_sub}", "{bench_run}", "{checks_run}")]
    rows += [["demo", "--kv-cache-space-gib", k] for k in ("0", "-1", "x", "nan", "99999999")]
    rows += [["demo", "--port", p] for p in ("0", "-1", "70000", "x")]
    rows += [
        ["demo", "--quick", "yes"],
        ["demo", "--bogus"],
        ["logs"],
        ["logs", "--follow", "now"],
        ["status", "--bogus"],
        ["down", "extra"],
        ["bogus-command"],
        ["--bogus"],
    ]
    return rows


def _new_command_rows() -> list[list[str]]:
    """simulate, advise, mcp and cloud: refused before any work (no engine, no server, no cloud API call)."""
    sim = ["simulate", "--plan", "{file}"]
    rows = [[*sim, flag, v] for flag in ("--contexts", "--clients") for v in ("0", "-1", "x", "1,,2")]
    rows += [[*sim, flag, v] for flag in ("--reps", "--output-tokens") for v in ("0", "-3", "nan")]
    rows += [[*sim, "--rate", v] for v in ("0", "-1", "nan", "inf")]
    rows += [["simulate"], ["simulate", "--plan", "{missing}"], ["simulate", "--plan", "{empty_dir}"],
             [*sim], ["simulate", "--plan", "{file}", "--calibrate", "{missing}"]]  # fmt: skip
    adv = ["advise", "gemma-4-E2B-it"]
    rows += [[*adv, "--workload", w] for w in ("ctx=abc", "bogus=1", "ctx=-5", "clients=0", "ctx")]
    rows += [[*adv, "--slo", v] for v in ("latency=5", "ttft_ms=x", "ttft_ms")]
    rows += [["advise"], [*adv, "--chips", "bogus-chip"], [*adv, "--reps", "0"], ["advise", "{missing}"],
             [*adv, "--pricing", "bogus"]]  # fmt: skip
    rows += [["prices", "--bogus"], ["prices", "refresh", "--bogus"], ["prices", "--today", "yesterday"]]
    rows += [["mcp", "--bogus"], ["mcp", "--port", "0"], ["mcp", "--port", "x"],
             ["mcp", "--http", "--host", "0.0.0.0"], ["mcp", "--http", "--token-file", "{missing}"]]  # fmt: skip
    up = ["cloud", "up", "--project", "p", "--zone", "us-west4-a", "--yes"]
    rows += [[*up, "--chip", c] for c in ("bogus", "v5e-3", "v5litepod-3", "")]
    rows += [[*up, "--provisioning", v] for v in ("spot", "on-demand", "reserved")]
    rows += [[*up, "--max-run-duration", v] for v in ("abc", "-1h", "1m", "30d")]
    rows += [[*up, "--provisioning", "spot", "--max-hours", v] for v in ("0", "-1", "nan", "inf")]
    rows += [[*up, "--provisioning", "spot", "--max-hours", "2", "--no-limit"], [*up, "--valid-until", "x"],
             ["cloud", "bogus"], ["cloud", "probe", "--chip", "bogus", "--yes"], ["cloud", "zones", "--chip", "x"],
             ["cloud", "down", "--zone", ""]]  # fmt: skip
    k8s = ["deploy", "k8s", "google/gemma-4-E2B-it", "--out", "{out}"]
    rows += [["deploy", "k8s"], ["deploy", "bogus"], [*k8s], [*k8s, "--chip", "mi300x"], [*k8s, "--chip", "bogus"]]
    rows += [
        [*k8s, "--chip", "v5e-4", flag, v]
        for flag, v in (
            ("--replicas", "0"),
            ("--replicas", "x"),
            ("--replicas", "3"),
            ("--name", "Bad_Name"),
            ("--namespace", ""),
            ("--router-policy", "bogus"),
        )
    ]
    rows += [["up", "--replicas", v, "--dry-run"] for v in ("0", "-1", "x", "65")]
    rows += [["up", "--replicas", "2", "--router-host", "0.0.0.0", "--dry-run"],
             ["up", "--replicas", "2", "--router-policy", "kv_aware", "--dry-run"],
             ["plan", "google/gemma-4-E2B-it", "--chip", "v5e-4", "--replicas", "3"]]  # fmt: skip
    return rows


def _issue25_rows() -> list[list[str]]:
    """Issue 25: work past any stated bound, and files that are not what their flag reads (each refused
    before any work, in one line)."""
    agent = ["bench", DEAD, "--workload", "agent", *OUT]
    rows = [[*agent, flag, v] for flag in ("--turns", "--sessions-per-client") for v in ("1000000000", "1e9")]
    rows += [[*agent, flag, "1000000000000"] for flag in ("--user-tokens", "--call-tokens", "--result-tokens")]
    rows += [[*agent, "--think-time-s", v] for v in ("1e308", "3601", "inf")]
    rows += [[*agent, "--user-tokens", "1000000", "--turns", "100"]]  # the session outgrows any context
    trace = ["bench", DEAD, "--workload", "trace", *OUT]
    rows += [[*trace, "--trace", "{trace_bin}"], [*trace, "--trace", "{trace_forever}"],
             [*trace, "--trace", "{trace_nan}"]]  # fmt: skip
    rows += [[*trace, "--trace", "{trace_ok}", "--trace-speed", v] for v in ("1e-300", "0", "1e9", "nan")]
    search = ["bench", DEAD, "--find-max", "clients", "--slo", "ttft_ms=500", *OUT]
    rows += [[*search, "--find-max-limit", v] for v in ("4097", "1e9", "1e308")]
    rows += [["bench", DEAD, "--reps", "10000", "--clients", "4096", "--requests-per-client", "1000000", *OUT]]
    rows += [["plan", p, "--chip", "l4"] for p in ("{gguf}", "{utf16_dir}", "{deep_dir}", "x" * 1_000_000)]
    rows += [["simulate", "--plan", p] for p in ("{plan_block0}", "{plan_nofit}", "{plan_negative}")]
    rows += [["up", "--engine", "vllm", "--plan", "{plan_block0}", "--dry-run"],
             ["bench", DEAD, "--plan", "{plan_block0}", *OUT]]  # fmt: skip
    return rows


ROWS = (
    _bench_rows() + _check_rows() + _plan_rows() + _up_rows() + _cost_rows() + _other_rows() + _new_command_rows()
    + _issue25_rows()
)  # fmt: skip
# the rows that need a real interpreter: its exit status and stderr as a shell sees them
SUBPROCESS_ROWS = [
    ["bench", DEAD, "--contexts", "99999999999999999999999", *OUT],
    ["check", "{html}", T, "0.3", *OUT],
    ["report", "{trunc_run}"],
    ["up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4", "--launcher", "'unbalanced"],
]


def test_the_table_covers_every_command_with_at_least_200_inputs() -> None:
    from onechip.cli.commands import COMMANDS

    assert len(ROWS) + len(SUBPROCESS_ROWS) >= 200
    assert set(COMMANDS) <= {row[0] for row in ROWS}
    assert {row[0] for row in ROWS} <= set(COMMANDS) | {"bogus-command", "--bogus"}  # no row lost its command


# --- the per-test world: paths, and what must not change


def _places(tmp_path: Path, servers: dict[str, str]) -> dict[str, str]:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "file").write_text("not a directory\n")
    (fixtures / "empty").mkdir()
    trunc = fixtures / "trunc"
    trunc.mkdir()
    (trunc / "summary.json").write_text('{"tool_version": "0.1", "config": {"base_url": "http://x"}, "cells": [')
    garbage = fixtures / "garbage"
    garbage.mkdir()
    for name in ("run.json", "plan.json", "checks.json", "summary.json", "cost.json"):
        (garbage / name).write_text("\x00\x01 not json")
    bench_run = fixtures / "bench_run"
    bench_run.mkdir()
    (bench_run / "summary.json").write_text("{}")
    (bench_run / "requests.jsonl").write_text("")
    checks_run = fixtures / "checks_run"
    checks_run.mkdir()
    (checks_run / "checks.json").write_text("{}")
    return {
        **servers,
        "file": str(fixtures / "file"),
        "file_sub": str(fixtures / "file" / "sub"),
        "missing": str(fixtures / "missing"),
        "empty_dir": str(fixtures / "empty"),
        "trunc_run": str(trunc),
        "garbage_run": str(garbage),
        "bench_run": str(bench_run),
        "checks_run": str(checks_run),
        "out": str(tmp_path / "out"),
    }


def _issue25_files(fixtures: Path) -> dict[str, str]:
    """Files that are not what their flag reads: a GGUF file (its magic, ggml docs/gguf.md), a UTF-16
    config.json, a config with 10**9 layers, traces (binary, 10**15 ms long, 10**7 lines, NaN times), and
    plan JSONs (block_size 0, negative sizes, a plan that does not fit) made from a real plan."""
    (fixtures / "model.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 16)
    llama = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}
    for name, config, encoding in (
        ("utf16", llama, "utf-16"),
        ("deep", {**llama, "num_hidden_layers": 10**9}, "utf-8"),
    ):
        (fixtures / name).mkdir()
        (fixtures / name / "config.json").write_text(json.dumps(config), encoding=encoding)
    traces = {
        "trace_bin": None,
        "trace_ok": '{"timestamp": 0, "input_length": 8, "output_length": 4}\n',
        "trace_forever": '{"timestamp": 0, "input_length": 8, "output_length": 4}\n'
        '{"timestamp": 1e15, "input_length": 8, "output_length": 4}\n',
        "trace_nan": '{"timestamp": NaN, "input_length": 8, "output_length": 4}\n',
    }
    for name, text in traces.items():
        target = fixtures / f"{name}.jsonl"
        target.write_bytes(b"\x00\xff\xfe binary" if text is None else text.encode())
    plan = json.loads(_plan_json())
    variants = {"plan_block0": {"block_size": 0}, "plan_negative": {"weights_bytes": -1, "num_blocks": -5},
                "plan_nofit": {"fits": False, "verdict": "does not fit: weights exceed the cap"}}  # fmt: skip
    for name, change in variants.items():
        (fixtures / f"{name}.json").write_text(json.dumps({**plan, **change}))
    return {
        "gguf": str(fixtures / "model.gguf"),
        "utf16_dir": str(fixtures / "utf16"),
        "deep_dir": str(fixtures / "deep"),
        **{name: str(fixtures / f"{name}.jsonl") for name in traces},
        **{name: str(fixtures / f"{name}.json") for name in variants},
    }


@functools.cache
def _plan_json() -> str:
    from onechip import api
    from onechip.schemas.requests import PlanRequest

    return api.plan(PlanRequest(model="gemma-4-E2B-it", chip="v5e-1")).model_dump_json()


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory under `root`: path -> (size, mtime_ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[path] = (st.st_size if name in filenames else 0, st.st_mtime_ns if name in filenames else 0)
    return out


def _children() -> set[int]:
    """Pids of this process's children (every thread's), from /proc."""
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            pids |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            continue
    return pids


class _NoProcess(subprocess.Popen):  # type: ignore[type-arg]
    """subprocess.Popen while a bad input runs: starting any process (engine, ssh, docker) fails the test."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"a bad input started a process: {args[:1]}")


def _no_model(*args: object, **kwargs: object) -> None:
    raise AssertionError("a bad input started the model conversion")


@pytest.fixture(scope="module")
def issue25_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _issue25_files(tmp_path_factory.mktemp("issue25"))


@pytest.fixture
def world(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers: dict[str, str], issue25_files: dict[str, str]
) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return _places(tmp_path, {**servers, **issue25_files})


def _fill(row: list[str], places: dict[str, str]) -> list[str]:
    return [arg.format(**places) if "{" in arg else arg for arg in row]


REPORT_FILES = ("report.md", "report.html", "report.json", "serving-report.json")


def _out_of(argv: list[str], places: dict[str, str]) -> str:
    """Where a row may write: --out, or for `report` its run directory (the report is written beside the
    run files; a damaged run is rendered as far as it reads, and the exit says it is damaged)."""
    return argv[1] if argv[0] == "report" and len(argv) > 1 else places["out"]


def _allowed(path: str, out_dir: str, report: bool) -> bool:
    if report:
        return os.path.dirname(path) == out_dir and os.path.basename(path) in REPORT_FILES
    return path == out_dir or path.startswith(out_dir + os.sep)


def _assert_clean_failure(code: int, err: str, before: dict, after: dict, out_dir: str, report: bool = False) -> None:
    assert code != 0, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) <= 2, err
    changed = {p for p in set(before) ^ set(after) | {p for p in before if after.get(p, before[p]) != before[p]}}
    outside = sorted(p for p in changed if not _allowed(p, out_dir, report))
    assert not outside, f"written outside --out: {outside}"


@pytest.mark.parametrize("row", ROWS, ids=[" ".join(r)[:80] for r in ROWS])
def test_a_bad_input_is_one_line_and_a_non_zero_exit(run, world, tmp_path: Path, monkeypatch, row) -> None:
    argv = _fill(row, world)
    monkeypatch.setattr(subprocess, "Popen", _NoProcess)  # no engine, ssh or docker may start
    monkeypatch.setattr("onechip.engines.model_store.ensure_model", _no_model)  # no model conversion
    before, children = _tree(tmp_path), _children()
    code, _, err = run(*argv)
    _assert_clean_failure(code, err, before, _tree(tmp_path), _out_of(argv, world), argv[0] == "report")
    assert _children() <= children


@pytest.mark.parametrize("row", SUBPROCESS_ROWS, ids=[" ".join(r)[:80] for r in SUBPROCESS_ROWS])
def test_a_bad_input_is_one_line_from_the_real_interpreter(world, tmp_path: Path, row) -> None:
    argv = _fill(row, world)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    before = _tree(tmp_path)
    proc = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "onechip", *argv], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    _assert_clean_failure(
        proc.returncode, proc.stderr, before, _tree(tmp_path), _out_of(argv, world), argv[0] == "report"
    )
    assert not _children()
