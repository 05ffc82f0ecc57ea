"""CLI rough edges a user hits (helper small58a): an unknown --slo key refused at parse time, signed seconds never
'+-0 s', a closed pipe on stdout is a quiet exit 141, an unusable COLUMNS does not garble --help, and a --launcher
whose #! interpreter is missing is named before the launch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from factories import launcher_error_line, one_error_line
from onechip.bench import stats
from onechip.cli.engine_cmds import print_up
from onechip.engines.launch import UpResult
from onechip.procs import missing_interpreter
from onechip.report.tables import num
from onechip.schemas import BootRecord
from onechip.schemas.bench import SLO_KEYS
from onechip.schemas.boot import BootEvent

SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.mark.parametrize("extra", [(), ("--find-max", "clients")])
def test_an_unknown_slo_key_is_refused_before_the_search_or_grid_starts(run, extra) -> None:
    # bench.runner.run_grid refused it only once the search had begun ('[bench] find-max: measuring clients-1' first);
    # the keys are the SLO metrics bench.stats computes (SLO_METRICS)
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--slo", "foo_ms=100", *extra)
    assert line.startswith(
        "Invalid value for '--slo': slo: unknown SLO key(s) ['foo_ms']; use e2e_ms, tpot_ms, ttft_ms"
    )


def test_the_slo_keys_the_schema_takes_are_the_metrics_bench_computes() -> None:
    assert set(SLO_KEYS) == set(stats.SLO_METRICS)


def test_the_up_timeline_signs_each_step_once(run, capsys) -> None:
    # stage_durations: 5.0, then 4.8 - 5.0 = -0.2 (a line stamped before the one above it, as two processes log), then
    # 7.0 - 4.8 = 2.2; each printed to whole seconds with its sign: -0.2 rounds to 0 ('+0 s', not '+-0 s')
    boot = BootRecord(
        engine="vllm",
        model="m",
        events=[BootEvent(name="a", t_s=5.0), BootEvent(name="b", t_s=4.8), BootEvent(name="c", t_s=7.0),
                BootEvent(name="d", t_s=5.0)],
    )  # fmt: skip
    print_up(UpResult(dry_run=False, boot=boot))
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("timeline: "))
    assert line == "timeline: a +5 s, b +0 s, c +2 s, d -2 s"


def test_a_number_that_rounds_to_zero_has_no_sign() -> None:
    # the boot timeline's Δ (s) column of report.md: -0.04 s at one decimal is 0.0, not '-0.0'
    assert (num(-0.04), num(-0.06), num(0.0)) == ("0.0", "-0.1", "0.0")


def _onechip(*argv: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "onechip", *argv], env=environ, stderr=subprocess.PIPE, text=True, timeout=120, **kwargs
    )


@pytest.mark.parametrize(
    "argv",
    [("--version",), ("--help",), ("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1"),
     ("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1", "--json")],
)  # fmt: skip
def test_a_closed_pipe_on_stdout_is_a_quiet_exit_141(argv, tmp_path) -> None:
    # `onechip plan ... | head -1`: the reader gone, click and rich each exited 1 (a failure a pipefail script cannot
    # tell from a real one); the shell's status of a writer its reader left (SIGPIPE, 13): 128 + 13 = 141, silent
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first write
    try:
        done = _onechip(*argv, env={"ONECHIP_HOME": str(tmp_path)}, stdout=write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.parametrize("columns", ["0", "1", "5", "20"])
@pytest.mark.parametrize("argv", [("--help",), ("bench", "--help")])
def test_help_under_an_unusable_columns_is_laid_out_readably(argv, columns) -> None:
    # COLUMNS=0 printed one blank line, COLUMNS=5 'Usa / ge:' five letters a line; help is laid out at least
    # render.MIN_WIDTH wide (click's own help floor, 50 columns), an unknown width (0) at rich's 80
    done = _onechip(*argv, env={"COLUMNS": columns}, stdout=subprocess.PIPE)
    assert done.returncode == 0 and done.stderr == ""
    assert "Usage: onechip" in done.stdout
    words = " ".join(re.sub("[│╭╮╰╯─]", " ", done.stdout).split())  # the text, the panels' frames and wrapping gone
    assert "--help <bool> Show this message and exit." in words or "--help Show this message and exit." in words
    width = max(len(line) for line in done.stdout.splitlines())
    assert width == (80 if columns == "0" else 50)


def test_a_launcher_whose_interpreter_is_missing_is_named(run, tmp_path, monkeypatch) -> None:
    # a `vllm` script left by a removed venv: it exists and is executable, but exec fails on its #! line, and `up`
    # said 'engine exited with code 127 during boot: ... exec: .../vllm: not found' (execve(2): ENOENT for a missing
    # script interpreter), naming the script that is there, not the interpreter that is not
    line = launcher_error_line(run, tmp_path, monkeypatch, "#!/nonexistent/venv/bin/python3")
    script = tmp_path / "vllm"
    assert line == (
        f"--launcher {script}: its interpreter /nonexistent/venv/bin/python3 (its #! line) does not exist "
        "or is not executable"
    )


@pytest.mark.parametrize(
    ("line", "missing"),
    [("#!/nonexistent/bin/python3 -u", "/nonexistent/bin/python3"),
     ("#!/usr/bin/env no-such-python-58", "no-such-python-58"),
     ("#!/usr/bin/env python3", None), (f"#!{sys.executable}", None), ("print('no #! line')", None)],
)  # fmt: skip
def test_missing_interpreter_reads_the_hash_bang_line(tmp_path, line, missing) -> None:
    # execve(2) runs a script through the interpreter its '#!' line names (env: the NAME it looks up on PATH)
    script = tmp_path / "serve"
    script.write_text(line + "\n")
    assert missing_interpreter(str(script)) == missing


@pytest.mark.parametrize("argv", [(), ("status",), ("logs",), ("down",), ("cloud", "probe"), ("prices", "refresh")])
def test_help_shows_no_value_for_a_flag(run, argv) -> None:
    # '--help <bool>', 'status --json <bool>', 'logs --follow <bool>': typer 0.29 prints a flag's type as if it took
    # a value (`--json true` is refused); options_from already left it out for the options it makes
    code, out, _ = run(*argv, "--help")
    assert code == 0 and "--help" in out
    assert "<bool>" not in out
