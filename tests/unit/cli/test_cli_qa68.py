"""CLI as a careless script drives it (helper cliqa68): stdout that cannot take what onechip writes, an encoding that
cannot spell it (PYTHONIOENCODING=ascii) or a full disk behind a redirect (/dev/full)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from onechip.cli import main

SRC = Path(__file__).resolve().parents[3] / "src"


def _onechip(*argv: str, env: dict[str, str], stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run([sys.executable, "-m", "onechip", *argv], env=environ, text=True, timeout=120,
                          stdout=stdout, stderr=subprocess.PIPE, errors="replace")  # fmt: skip


def test_an_ascii_stdout_gets_what_it_cannot_spell_escaped_not_an_internal_error(tmp_path) -> None:
    # PYTHONIOENCODING=ascii (or a C locale without UTF-8 coercion): `prices` printed a source with a CJK character
    # and said 'internal error (UnicodeEncodeError: ...)', exit 1, simulate likewise at a '±'; Python's own stderr
    # writes such a character as a backslash escape (sys.stderr errors='backslashreplace', docs.python.org/3/library/
    # sys.html#sys.stderr), and so does onechip's stdout now
    done = _onechip("prices", env={"ONECHIP_HOME": str(tmp_path), "PYTHONIOENCODING": "ascii"})
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.isascii() and done.stdout.strip()


def test_a_simulate_under_an_ascii_stdout_prints_its_table(tmp_path) -> None:
    plan = tmp_path / "plan.json"
    env = {"ONECHIP_HOME": str(tmp_path / "home"), "PYTHONIOENCODING": "ascii"}
    made = _onechip("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1", "--max-model-len", "8192", "--json", env=env)
    plan.write_text(made.stdout)
    done = _onechip("simulate", "--plan", str(plan), "--reps", "1", "--contexts", "128", "--clients", "1",
                    "--out", str(tmp_path / "run"), env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "\\xb1" in done.stdout  # the ± of 'median of reps, ± CV', escaped


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_behind_stdout_names_stdout(tmp_path) -> None:
    # `onechip plan ... > out.txt` on a full disk said 'error: file-system error: No space left on device': no path,
    # though the exit codes promise 'its path and the OS's reason'; a closed stdout says 'stdout: ...' already
    with open("/dev/full", "w") as full:
        done = _onechip("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1", env={"ONECHIP_HOME": str(tmp_path)},
                        stdout=full)  # fmt: skip
    assert (done.returncode, done.stderr) == (1, "error: stdout: No space left on device\n")


UP_ON_HOST = ("up", "--dry-run", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "v5e-1")


@pytest.mark.parametrize("command", [UP_ON_HOST, ("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1")])
@pytest.mark.parametrize(
    ("host", "said"),
    [(",", "--host lists nothing (got ','): give comma-separated user@addr"),
     ("h1,,h2", "--host has an empty entry (got 'h1,,h2'): give comma-separated user@addr, none empty"),
     ("h1,", "--host has an empty entry (got 'h1,'): give comma-separated user@addr, none empty"),
     ("h1,h2", "--host 'h1,h2' names 2 hosts for one engine: give --replicas 2 (one engine on each), or one host")],
)  # fmt: skip
def test_a_host_list_one_engine_cannot_take_is_refused(run, offline_home, command, host, said) -> None:
    # `up --host h1,h2` without --replicas planned and ran `ssh ... h1,h2` (one ssh target named 'h1,h2'), and
    # `--host ,` `ssh ... ,`; a list with an empty entry is refused as every other comma-separated option's is
    # (schemas.inputs._entries), and a list for one engine as prepare_replicas refuses hosts that are not 1 or N
    code, out, err = run(*command, "--host", host)
    assert (code, out, err) == (2, "", f"error: {said}\n")


class _GonePipe(io.RawIOBase):
    """A pipe whose reader has gone: every write is EPIPE."""

    def writable(self) -> bool:
        return True

    def write(self, _: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        return 1


@pytest.mark.parametrize("encoding", ["ascii", "cp1252", "latin-1"])
def test_a_closed_pipe_met_by_an_escaped_write_is_the_reader_gone(encoding) -> None:
    # `PYTHONIOENCODING=cp1252 onechip prices | head -1` (qa68a): head gone, the write that retried a text with its
    # CJK source name escaped met the closed pipe outside _Piped's BrokenPipeError handler, and click ended the command
    # exit 1, silent, where the same command without the escape is 141 (test_cli_small58's closed pipe)
    stream = io.TextIOWrapper(_GonePipe(), encoding=encoding, write_through=True)
    with pytest.raises(main._ReaderGone):
        main._Piped(stream, "stdout").write("Alibaba Cloud \u7684 prices\n")
