"""The log of an engine on an SSH host, as `logs` (and `logs --follow`) reads it (helper safety70, 2026-12-07): its
lines were redacted as they came, none read ahead, so the first part of a token a wrap cut showed ('INFO using token
hf_Zq'), and ssh's own words, redacted a line at a time, showed the rest of one it wrapped in an error. A line now
waits for the next for errors.HOLD_AHEAD_S at most, then is shown as it is: a quiet pipe still shows its last line.
The host is a fake `ssh` on PATH that prints what a test gives it, pausing between the two halves of a cut line."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from onechip.errors import HOLD_AHEAD_S, EngineError
from wrapped_secrets import CASES, HF

# a fake ssh: writes the pieces of $FAKE_SSH_PIECES (a JSON list: [stream, text, seconds to wait after it]) and exits
# with $FAKE_SSH_EXIT, touching $FAKE_SSH_DONE as it exits
FAKE_SSH = f"""#!{sys.executable}
import json, os, sys, time
for stream, text, wait_s in json.load(open(os.environ["FAKE_SSH_PIECES"])):
    out = sys.stdout if stream == "out" else sys.stderr
    out.write(text)
    out.flush()
    time.sleep(wait_s)
open(os.environ["FAKE_SSH_DONE"], "w").close()
sys.exit(int(os.environ["FAKE_SSH_EXIT"]))
"""


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Set up the fake host; returns a function that gives it its pieces and exit status."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(FAKE_SSH)
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SSH_PIECES", str(tmp_path / "pieces.json"))
    monkeypatch.setenv("FAKE_SSH_DONE", str(tmp_path / "done"))

    def given(pieces: list[tuple[str, str, float]], exit_status: int = 0) -> Path:
        (tmp_path / "pieces.json").write_text(json.dumps(pieces))
        (tmp_path / "done").unlink(missing_ok=True)
        monkeypatch.setenv("FAKE_SSH_EXIT", str(exit_status))
        return tmp_path / "done"

    return given


def _host_state():
    return engine_state(engine="vllm@ssh", mode="remote-process", host="u@fake", remote_pid=4242)


@pytest.mark.parametrize("case", CASES)
def test_a_secret_cut_by_a_wrap_at_every_position_shows_no_part_over_ssh(case: str, host) -> None:
    before, secret, after = CASES[case]
    line = before + secret + after
    cuts = range(len(before) + 1, len(before) + len(secret))
    pieces = []
    for at in cuts:  # the rest of the cut line comes in a read of its own
        pieces += [("out", line[:at] + "\n", 0.02), ("out", line[at:] + "\nINFO next\n", 0.0)]
    host(pieces)
    shown = list(state._host_log_lines(_host_state(), follow=True))
    assert shown == [before + "***", "***" + after, "INFO next"] * len(cuts)


def test_a_quiet_pipe_still_shows_its_last_line(host) -> None:
    done = host([("out", "INFO one\nINFO last\n", 10.0)])
    seen: list[tuple[str, float, bool]] = []
    started = time.monotonic()
    for line in state._host_log_lines(_host_state(), follow=True):
        seen.append((line, time.monotonic() - started, done.exists()))
        if line == "INFO last":
            break  # the follow interrupted (Ctrl-C): ssh is terminated
    assert [line for line, _, _ in seen] == ["INFO one", "INFO last"]
    assert not seen[-1][2]  # shown while the pipe was open and quiet, the host's ssh still running
    assert seen[-1][1] < 8.0  # about HOLD_AHEAD_S after it came, not once the pipe ended
    assert HOLD_AHEAD_S < 8.0


def test_a_token_wrapped_in_ssh_s_own_error_is_hidden(host) -> None:
    words = f"u@fake: Permission denied, token {HF}, (publickey)"
    at = words.index(HF) + 5
    host([("err", words[:at] + "\n" + words[at:] + "\n", 0.0)], exit_status=255)
    with pytest.raises(EngineError) as failed:
        list(state._host_log_lines(_host_state(), follow=True))
    said = str(failed.value)
    assert HF[:5] not in said and HF[5:12] not in said and "***, (publickey)" in said, said


def test_a_token_wrapped_in_the_last_lines_of_a_reader_that_failed_is_hidden(host) -> None:
    words = f"tail: cannot open '/x/{HF}/engine.log' for reading"
    at = words.index(HF) + 5
    host([("out", words[:at] + "\n" + words[at:] + "\n", 0.0)], exit_status=1)
    with pytest.raises(EngineError) as failed:
        list(state._host_log_lines(_host_state(), follow=False))
    said = str(failed.value)
    assert HF[:5] not in said and HF[5:12] not in said and "***/engine.log" in said, said
