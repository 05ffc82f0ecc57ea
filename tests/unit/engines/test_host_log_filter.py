"""The filter serve.sh sends a host engine's output through (remote.serve_script): it redacted one byte at a time
(bash's `read` of a pipe), 2 MB/s here (50 MB in 24 s), so an engine printing a burst blocked on its own log; a line
held for its end ('\\r' progress bars, which end no line) reached the log only once a '\\n' came. These run the
filter's lines alone, under bash, with the environment serve.sh gives it."""

from __future__ import annotations

import os
import select
import subprocess
from pathlib import Path

import pytest

from onechip import errors
from onechip.engines import remote

TOKEN = "hf_FAKEtoken0123456789abcdefXYZ"


def _filter(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """bash running serve.sh's filter lines, then `cat` as the engine: its stdin is the engine's output."""
    script = tmp_path / "filter.sh"
    script.write_text("\n".join([*remote.REDACTED_OUTPUT, "exec cat"]) + "\n")
    base = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    return subprocess.Popen(  # noqa: S603
        ["bash", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**base, **env}
    )


def test_a_50_mb_burst_passes_the_filter_whole(tmp_path: Path) -> None:
    # its speed is benchmarks/log_filter_speed.py's figure (the byte-at-a-time bash filter took 24 s here, the perl
    # filter 1.6 s of CPU, 4.6 s once it read a line ahead, safety70): not timed here, on a shared machine
    line = b"INFO 12-06 20:00:00 [core.py:123] an engine line of about a hundred bytes, request 12345 done ok\n"
    burst = tmp_path / "burst"
    burst.write_bytes(line * (50_000_000 // len(line)))
    proc = _filter(tmp_path, {"HF_TOKEN": TOKEN})
    with burst.open("rb") as source:
        out, _ = proc.communicate(source.read(), timeout=300)
    assert out.count(b"\n") == 50_000_000 // len(line) and out == burst.read_bytes()


def test_a_progress_bar_s_carriage_return_reaches_the_log_before_any_newline(tmp_path: Path) -> None:
    proc = _filter(tmp_path, {})
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"Loading safetensors:  10%\r")
    proc.stdin.flush()
    ready = select.select([proc.stdout], [], [], 10)[0]  # the engine's output is still open: no end of input
    got = os.read(proc.stdout.fileno(), 4096) if ready else b""
    proc.stdin.close()
    proc.wait(10)
    proc.stdout.close()
    assert got == b"Loading safetensors:  10%\n"  # a '\r' ends a line there (log_summary.LINE_END is '\n')


def test_a_token_of_no_known_shape_is_redacted_by_its_value_and_a_partial_last_line_is_kept(tmp_path: Path) -> None:
    # HF_TOKEN as hf_token.env sets it, of no shape errors knows, with every character a regex gives a meaning to
    odd = "tok.*+?(a|b)[c]{2}^$/\\end"
    proc = _filter(tmp_path, {"HF_TOKEN": odd, "OTHER_API_KEY": "k3y-" + odd, "HF_TOKEN_PATH": "/not/a/secret"})
    text = f"HF_TOKEN={odd} key=k3y-{odd} shaped={TOKEN} path=/not/a/secret\nlast {odd}"
    out, _ = proc.communicate(text.encode(), timeout=30)
    assert out.decode() == "HF_TOKEN=*** key=*** shaped=*** path=/not/a/secret\nlast ***"


def test_a_secret_is_the_one_errors_redact_takes_whatever_the_case_of_its_name_or_a_path_named_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # errors._secret_values reads a name upper-cased (a docker --env-file's 'hf_token=' is a secret) and keeps a
    # ..._FILE / ..._PATH value only where it reads as a path (errors.names_a_path: 'DB_PASSWORD_FILE=hunter2pass',
    # key text put there by mistake, stays a secret); the filter took neither
    env = {
        "hf_token": "lowercase-secret1",
        "Db_Password": "mixedcase-secret2",
        "DB_PASSWORD_FILE": "hunter2pass",
        "HF_TOKEN_PATH": "/not/a/secret",
        "AWS_SHARED_CREDENTIALS_FILE": "keys/aws.ini",
        "GOOGLE_APPLICATION_CREDENTIALS": "~/adc",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    text = " ".join(env.values())
    proc = _filter(tmp_path, env)
    out, _ = proc.communicate(text.encode(), timeout=30)
    assert out.decode() == errors.redact(text) == "*** *** *** /not/a/secret keys/aws.ini ~/adc"
