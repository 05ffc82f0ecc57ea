"""serve.sh's filter (onechip.logfilter's perl) follows a secret cut by a wrap as errors.LinesRedactor does (helper
safety70, 2026-12-07): it read a line at a time with no state but the PEM block's, so a host engine's engine.log kept
both parts of a token a wrap cut ('INFO using token hf_Zq' then '9XwV8u... for the download'). It now reads a line
ahead, at most errors.HOLD_AHEAD_S where none comes (a quiet pipe still gets its last line written), with _crossing
spelled again in Perl over errors' own expressions."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

import pytest

from factories import through_host_filter
from onechip.engines import remote
from onechip.errors import HOLD_AHEAD_S, lines_redactor
from wrapped_secrets import CASES, PEM, SK

ENV = {"VLLM_API_KEY": "noshape-abcdefghij-0123456789"}  # a known value of no shape, cut too


@pytest.mark.parametrize("case", [*CASES, "sk", "known"])
def test_a_secret_cut_at_every_position_is_hidden_as_python_hides_it(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    before, secret, after = {"sk": ("key=", SK, " loaded"), "known": ("key ", ENV["VLLM_API_KEY"], " ok")}.get(
        case, CASES.get(case, ("", "", ""))
    )
    line = before + secret + after
    text = "".join(f"INFO start\n{line[:at]}\n{line[at:]}\nINFO next\n" for at in range(1, len(line)))
    shown = through_host_filter(tmp_path, text, ENV)
    assert shown == "".join(f"{kept}\n" for kept in lines_redactor().each(text.split("\n")[:-1]))
    for at in range(len(before) + 1, len(before) + len(secret)):  # each cut inside it: no part of it
        assert f"\n{before}***\n***{after}\n" in shown, at
    assert secret[1:9] not in shown and secret[-8:] not in shown


def test_a_pem_block_and_the_lines_after_it_as_python_reads_them(tmp_path: Path) -> None:
    text = "INFO start\n" + PEM + "INFO next\n"
    assert through_host_filter(tmp_path, text, {}) == "".join(
        f"{kept}\n" for kept in lines_redactor().each(text.split("\n")[:-1])
    )


def test_a_quiet_pipe_still_gets_its_last_line_written(tmp_path: Path) -> None:
    script = tmp_path / "filter.sh"
    script.write_text("\n".join([*remote.REDACTED_OUTPUT, "exec cat"]) + "\n")
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    with subprocess.Popen(["bash", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as proc:  # noqa: S603
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"INFO one\nINFO last\n")
        proc.stdin.flush()
        written, got = time.monotonic(), b""
        while b"INFO last\n" not in got and time.monotonic() < written + 30:
            if select.select([proc.stdout], [], [], 1)[0]:
                got += os.read(proc.stdout.fileno(), 4096)
        waited_s = time.monotonic() - written
        assert got == b"INFO one\nINFO last\n"  # its input still open: no end came
        assert HOLD_AHEAD_S * 0.9 <= waited_s < 10  # held for a line after it that did not come, then written
        proc.stdin.close()
        assert proc.wait(30) == 0
