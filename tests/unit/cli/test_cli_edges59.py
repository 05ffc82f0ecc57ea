"""CLI rough edges (helper cli59): a COLUMNS no terminal can have, a stdin, stdout or stderr closed before onechip
starts, and a --launcher whose #! line the kernel reads otherwise than a shell would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from factories import launcher_error_line
from onechip.cli import render
from onechip.procs import missing_interpreter

SRC = Path(__file__).resolve().parents[3] / "src"


def _onechip(*argv: str, env: dict[str, str] | None = None, close: str = "", **kwargs) -> subprocess.CompletedProcess:
    """`python -m onechip ARGV`, with `close` ('>&-', '2>&-') applied by a shell as a user's line would."""
    environ = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    line = f'exec "$@" {close}'
    return subprocess.run(
        ["sh", "-c", line, "sh", sys.executable, "-m", "onechip", *argv],
        env=environ, text=True, timeout=120, **kwargs,
    )  # fmt: skip


@pytest.mark.parametrize("argv", [("--help",), ("plan", "--help")])
def test_a_columns_wider_than_any_terminal_is_the_widest_a_terminal_reports(argv) -> None:
    # COLUMNS=99999999999: rich laid the help panels out that wide and onechip said 'internal error (MemoryError)';
    # a terminal reports its width in struct winsize's ws_col, an unsigned short (TIOCGWINSZ, ioctl_tty(2)), so no
    # terminal is wider than 65,535 columns (render.MAX_COLUMNS)
    done = _onechip(*argv, env={"COLUMNS": "99999999999"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (0, "")
    assert max(len(line) for line in done.stdout.splitlines()) == getattr(render, "MAX_COLUMNS", None) == 2**16 - 1


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("--version",), ("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1"),
     ("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1", "--json")],
)  # fmt: skip
def test_a_closed_stdout_is_one_error_line_exit_1(argv, tmp_path) -> None:
    # `onechip plan ... >&-`: Python starts with sys.stdout None and onechip said 'internal error (AttributeError:
    # 'NoneType' object has no attribute 'write')'; coreutils say 'write error: Bad file descriptor' (EBADF) and exit 1
    done = _onechip(*argv, env={"ONECHIP_HOME": str(tmp_path)}, close=">&-", stderr=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (1, "error: stdout: Bad file descriptor (it is closed)\n")


def test_under_a_closed_stdout_an_error_said_on_stderr_keeps_its_exit_code(tmp_path) -> None:
    # as coreutils' `true >&-` succeeds, a closed stdout is an error only when written: a usage error, said on
    # stderr alone, is still exit 2
    done = _onechip("plan", "--no-such-flag", env={"ONECHIP_HOME": str(tmp_path)}, close=">&-", stderr=subprocess.PIPE)
    assert done.returncode == 2 and done.stderr.startswith("error: No such option: --no-such-flag")


def test_a_closed_stderr_keeps_the_exit_code_and_stdout(tmp_path) -> None:
    # `2>&-`: there is nowhere to say the error, but the exit code is still the error's (a refused value: 2), not 1
    # from an AttributeError raised while printing it
    done = _onechip(
        "plan", "google/gemma-4-E2B-it", "--chip", "v5e-1", "--max-model-len", "-5",
        env={"ONECHIP_HOME": str(tmp_path)}, close="2>&-", stdout=subprocess.PIPE,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")


def test_a_closed_stdin_is_no_terminal_to_ask_on(monkeypatch) -> None:
    # `onechip cloud probe ... <&-`: Python starts with sys.stdin None, and confirm's sys.stdin.isatty() was an
    # AttributeError ('internal error'), where a stdin that is no terminal is asked for --yes
    from onechip.cli.cloud_cmd import confirm
    from onechip.errors import ConfigError

    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(ConfigError, match="^delete these 2: add --yes to go ahead without a terminal$"):
        confirm("delete these 2", yes=False)


@pytest.mark.parametrize(
    ("close", "closed"), [("<&-", "stdin is"), (">&-", "stdout is"), ("<&- >&-", "stdin and stdout are")]
)
def test_mcp_over_a_closed_stdin_or_stdout_is_one_error_line(tmp_path, close, closed) -> None:
    # `onechip mcp <&-`: the stdio server found no stdin to read and waited, silent, until it was killed (or said
    # 'internal error (AttributeError ...)'); over a closed stdout no answer can reach the client
    done = _onechip("mcp", env={"ONECHIP_HOME": str(tmp_path)}, close=close, stderr=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: {closed} closed: an MCP client runs `onechip mcp` with pipes on its stdin and stdout "
        "(or serve over --http)\n",
    )


@pytest.mark.parametrize(
    ("line", "missing"),
    [("#!/usr/bin/env python3 -u", "python3 -u"),  # env is handed one argument, 'python3 -u'
     ("#!/usr/bin/env -S python3 -u", None),  # env -S splits it (coreutils env(1))
     ("#!/usr/bin/env -S no-such-python-59 -u", "no-such-python-59"),
     # env(1)'s -u NAME and -C DIR take the next word (coreutils 9.1 runs these): it is no program
     ("#!/usr/bin/env -S -u HOME python3 -u", None), ("#!/usr/bin/env -S -C /tmp python3", None),
     ("#!/usr/bin/env -S -u HOME no-such-python-59", "no-such-python-59"),
     ("#! \t/usr/bin/env\tpython3  \t", None),  # spaces and tabs around the name, trailing ones trimmed
     (f"#!{sys.executable}\r", f"{sys.executable}\r"),  # a CRLF script: '\r' is part of the path
     (f"#!{sys.executable} -u -B", None),  # the interpreter is there; '-u -B' is its one argument
     ("#!/usr/bin/env", None), ("#!", None), ("#!  ", None)],
)  # fmt: skip
def test_missing_interpreter_reads_the_line_as_the_kernel_does(tmp_path, line, missing) -> None:
    # fs/binfmt_script.c (load_script): the interpreter is the first word after '#!' (ended by a space, a tab or the
    # end of the line), and the rest of the line, trailing spaces and tabs trimmed, is one argument
    script = tmp_path / "serve"
    script.write_text(line + "\n")
    assert missing_interpreter(str(script)) == missing


def test_a_launcher_whose_env_line_passes_two_words_is_named(run, tmp_path, monkeypatch) -> None:
    # `#!/usr/bin/env python3 -u` passed the check (python3 is on PATH) and failed at the launch: "/usr/bin/env:
    # 'python3 -u': No such file or directory", exit 127 during boot
    line = launcher_error_line(run, tmp_path, monkeypatch, "#!/usr/bin/env python3 -u")
    script = tmp_path / "vllm"
    assert line == (
        f"--launcher {script}: its interpreter 'python3 -u' (its #! line) does not exist or is not executable "
        "(Linux passes the rest of a #! line as one argument: '#!/usr/bin/env -S' splits it)"
    )
