"""The new-user break pass r51 (2026-12-05), one regression test per finding, each failing before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize("command", ["status", "logs", "down"])
def test_onechip_home_naming_a_file_is_said_as_such(run, tmp_path: Path, monkeypatch, command: str):
    # with ONECHIP_HOME pointing at a file, the engine state read raised NotADirectoryError, taken as 'engine state
    # HOME/engine.json is unreadable; check `ps` for a vLLM server, stop it, then delete the file' (exit 5): a file
    # that is not there, and nothing about the home
    home = tmp_path / "home-file"
    home.write_text("not a folder\n")
    monkeypatch.setenv("ONECHIP_HOME", str(home))
    line = one_error_line(run, command)
    assert f"{home} is a file, not a folder; point ONECHIP_HOME at a folder" in line, line
    assert home.read_text() == "not a folder\n"


LOG = Path(__file__).parents[2] / "fixtures" / "bootlogs" / "a100-llama31-8b-len131072-util092-v0310.log"
DEPLOYMENT = ("plan", "llama-3.1-8b-instruct", "--chip", "a100-80gb", "--engine-version", "0.31.0")


def test_a_plan_that_does_not_fit_is_compared_with_a_log_that_did(run):
    # a plan of 0 KV tokens (utilization 0.1 leaves no pool) against a real boot: internal error (ZeroDivisionError)
    # in the cross-check's share of the difference, exit 1
    code, out, err = run(*DEPLOYMENT, "--set", "gpu-memory-utilization=0.1", "--against", str(LOG))
    assert code == 0 and "Traceback" not in err and "internal error" not in err, err
    assert "KV tokens: planned 0, reported 460,496 (+460,496)" in " ".join(out.split()), out
