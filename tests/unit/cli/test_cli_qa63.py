"""The CLI as a new user finds it (helper cliqa63): one regression test per finding, each failing before its fix."""

from __future__ import annotations

import re

import pytest

from factories import one_error_line
from onechip import errors
from onechip.cli.commands import COMMANDS

pytestmark = pytest.mark.usefixtures("offline_home")


def _codes(cls: type[errors.OnechipError]) -> set[int]:
    """The exit codes of `cls` and every class under it in errors.py's tree."""
    return {cls.exit_code}.union(*(_codes(sub) for sub in cls.__subclasses__()))


def _exit_codes_said(text: str) -> set[int]:
    """The codes an 'Exit codes: 0 ...; 2 ...' paragraph of a --help lists (each code opens one of its '; ' items)."""
    said = " ".join(text.replace("│", " ").split()).partition("Exit codes:")[2]
    return {int(code) for code in re.findall(r"(?:^|;)\s*(\d+)\b", said)}


def test_onechip_help_lists_every_exit_code_of_the_error_tree(run) -> None:
    # `onechip --help` said no exit code at all; the codes are errors.py's tree (each class's exit_code), 1 for a
    # file-system error or a bug, and 128 + the signal for one that stopped it (cli.main: 130, 143, 129; 141 SIGPIPE)
    code, out, err = run("--help")
    assert code == 0, err
    assert _codes(errors.OnechipError) | {0, 1, 129, 130, 141, 143} <= _exit_codes_said(out), out


@pytest.mark.parametrize("command", [name for name in COMMANDS if name not in ("check", "cloud", "prices")])
def test_every_command_help_says_its_exit_codes(run, command) -> None:
    # bench --help (and report, cost, simulate, advise, logs, status, down, up, demo, mcp, deploy) said none, and the
    # README lists them for check, plan and cloud only: a script could not tell bad input (2) from an unreachable
    # endpoint (6) or a lock (8) without reading errors.py; check, cloud and prices keep their own lists
    code, out, err = run(command, "--help")
    assert code == 0, err
    assert {0, 2, 130} <= _exit_codes_said(out), out


@pytest.mark.parametrize("count", ["1e3", "1024.0", "4e0"])
def test_advise_reads_a_workload_count_as_contexts_does(run, count) -> None:
    # advise --workload ctx=1e3 predicted 1,000 tokens (float('1e3')) and clients=4e0 4 clients, where bench and
    # simulate --contexts and --clients refuse them, as vLLM's human_readable_int (int(value)) refuses them for
    # --max-model-len (inputs.read_human_int)
    line = one_error_line(run, "advise", "gemma-4-E2B-it", "--chips", "v5e-1", "--workload", f"ctx={count},clients=4")
    assert "ctx" in line and count in line, line
    line = one_error_line(
        run, "advise", "gemma-4-E2B-it", "--chips", "v5e-1", "--workload", f"ctx=1024,clients={count}"
    )
    assert "clients" in line and count in line, line


def test_advise_still_reads_a_workload_count_with_a_suffix(run) -> None:
    # ctx=8K is 8,192 tokens, ctx=8k 8,000, as --contexts and vLLM's human_readable_int read them
    for text, tokens in (("8K", "8,192"), ("8k", "8,000")):
        code, out, err = run("advise", "gemma-4-E2B-it", "--chips", "v5e-1", "--workload", f"ctx={text},clients=1")
        assert code == 0, err
        assert f"gemma-4-E2B-it: {tokens} tokens x 1 client" in " ".join(out.split()), out


@pytest.mark.parametrize("command", [name for name in COMMANDS if name not in ("cloud", "deploy", "prices")])
def test_no_help_says_none_for_an_option_not_given(run, command) -> None:
    # bench --help: '--model ... None = first from /v1/models', '--rate ... None = closed loop'; simulate --help:
    # '--calibrate ... None = a stored calibration': Python's None, where a user leaves the option out
    code, out, err = run(command, "--help")
    assert code == 0, err
    assert not re.search(r"\bNone\b", out), out


@pytest.mark.parametrize("flag", ["--max-model-len", "--kv-cache-dtype", "--max-num-seqs"])
def test_a_vllm_flag_given_to_up_says_to_pass_it_through_set(run, flag) -> None:
    # `up --model M --chip C --max-model-len 32768` said 'No such option: --max-model-len (Possible options:
    # --language-model-only, --model)': up takes vLLM's serve flags through --set (vllm.flag_table.FLAGS), which a
    # new user who read `plan --max-model-len` could not guess
    line = one_error_line(run, "up", "--engine", "vllm", "--model", "gemma-4-E2B-it", "--chip", "l4", "--dry-run",
                          flag, "8192")  # fmt: skip
    assert f"--set {flag.removeprefix('--')}=" in line, line


def test_an_unknown_option_that_is_no_vllm_flag_keeps_click_s_suggestions(run) -> None:
    line = one_error_line(run, "up", "--engine", "vllm", "--modl", "gemma-4-E2B-it", "--chip", "l4", "--dry-run")
    assert "--set" not in line and "--model" in line, line
