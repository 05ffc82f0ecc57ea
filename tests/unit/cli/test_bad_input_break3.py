"""Bad input found by helper break3's pass over plan, simulate, cost, prices, report, bench, cloud and MCP: each
was an exit 0 on a failure, a misleading line, or a traceback, and is now one line naming what to do."""

from __future__ import annotations

import pytest
from tests.factories import one_error_line

from onechip.schemas.common import HUB_KEY_HINT, TEST_SERVER_HINT

P = "my-project-123"


@pytest.mark.parametrize(
    ("env", "argv", "hint"),
    [
        ("HF_ENDPOINT", ["plan", "org/model", "--chip", "l4"], HUB_KEY_HINT),
        ("ONECHIP_BILLING_API_ENDPOINT", ["prices", "refresh", "--chip", "v5e-1"], TEST_SERVER_HINT),
        ("ONECHIP_TPU_API_ENDPOINT", ["cloud", "down", "--name", "x", "--zone", "us-west4-a", "--project", P, "--yes"],
         TEST_SERVER_HINT),
    ],
)  # fmt: skip
def test_an_endpoint_variable_with_a_password_names_where_its_key_goes(monkeypatch, tmp_path, run, env, argv, hint):
    # was '... give the server's key in OPENAI_API_KEY (sent as a bearer token, as vllm serve --api-key expects)'
    # for the Hub, the Billing Catalog and the TPU API alike: vLLM's key, which none of them reads
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv(env, "http://alice:S3cr3tPassw0rd@127.0.0.1:9")
    line = one_error_line(run, *argv)
    # the whole user info is hidden since errors.url_shown (27b3d458): a key may stand where the user name does
    assert line.startswith(f"{env}='http://***@127.0.0.1:9': the URL holds a password (user:password@)")
    assert line.endswith(f"; {hint}") and "OPENAI_API_KEY" not in line and "S3cr3tPassw0rd" not in line


def test_cost_at_a_throughput_refuses_a_run_directory_that_holds_no_run(run, tmp_path):
    # was exit 0, and with --write a cost.json in a directory that held no run: `report` then rendered it as one
    (tmp_path / "notes.txt").write_text("no run here")
    line = one_error_line(run, "cost", "--chip", "v5e-1", "--output-tok-per-s", "10", "--run", str(tmp_path), "--write")
    assert line.startswith(f"{tmp_path} holds no run files (looked for run.json, plan.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing written


@pytest.mark.parametrize(
    ("argv", "flag", "given", "example"),
    [(("bench", "http://127.0.0.1:9"), "--slo", "ttft_ms=500,,tpot_ms=50", "ttft_ms=500,tpot_ms=50"),
     (("advise", "google/gemma-4-E2B-it"), "--workload", "ctx=1024,", "ctx=1024,clients=16")],
)  # fmt: skip
def test_a_key_value_option_with_an_empty_entry_is_one_line_naming_it(run, argv, flag, given, example):
    # was exit 0 with the entry dropped (schemas.inputs.key_values skipped it), while a comma list's empty entry
    # ('--contexts 128,,1024') is refused
    line = one_error_line(run, *argv, flag, given)
    assert line == f"{flag} has an empty entry (got {given!r}): give key=value pairs such as {example}, none empty"


def test_plan_against_a_binary_file_is_refused_as_summarize_logs_refuses_it(run, tmp_path):
    # was exit 0, 'nothing to compare': the bytes were decoded with replacement characters and parsed as a log
    log = tmp_path / "core.bin"
    log.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", "h200", "--against", str(log))
    assert line == f"--against {log}: not a text log (a NUL byte in its first 8,192 bytes)"


def test_plan_against_a_log_past_the_bound_is_one_line_not_a_memory_error(run, tmp_path, monkeypatch):
    # an 8 GiB file was read into memory at once: 'internal error (MemoryError)' under a heap cap (the MCP server's)
    from onechip.vllm import log_summary

    monkeypatch.setattr(log_summary, "MAX_BOOT_LOG_CHARS", 1 << 20)  # the bound, made small enough to write here
    log = tmp_path / "server.log"
    log.write_text(("INFO 12-01 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s\n") * 20_000)
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", "h200", "--against", str(log))
    assert line.startswith(f"--against {log}: more than 1 Mi characters, far more than a boot log; give the part")


@pytest.mark.parametrize(
    ("argv", "said"),
    [(["simulate", "--plan", "BIG"], "--plan BIG: cannot read: "),
     (["bench", "http://127.0.0.1:9", "--workload", "trace", "--trace", "BIG"], "--trace BIG: "),
     (["up", "--engine", "vllm-docker", "--model", "google/gemma-4-E2B-it", "--chip", "l4", "--dry-run",
       "--hf-token-file", "BIG"],
      "--hf-token-file BIG: cannot read: ")],
)  # fmt: skip
def test_an_input_file_past_the_bound_is_one_line(run, tmp_path, monkeypatch, argv, said):
    # was internal error (MemoryError) under a heap cap: the file was read whole (paths.read_regular bounds it)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("onechip.paths.MAX_INPUT_BYTES", 1024)  # the bound, small enough to write here
    big = tmp_path / "big"
    big.write_text("x" * 1025)
    line = one_error_line(run, *[str(big) if a == "BIG" else a for a in argv])
    assert line == said.replace("BIG", str(big)) + "larger than 1,024 bytes, more than any file onechip reads"


def test_a_refused_path_option_is_shown_as_given_not_as_a_python_repr(run, tmp_path):
    # was "... choose a new directory (got PosixPath('/tmp/.../out'))" (schemas.inputs.shown of a Path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "checks.json").write_text("{}")
    line = one_error_line(run, "check", "http://127.0.0.1:9", "--out", str(out))
    assert line.endswith(f"already holds a run (checks.json); choose a new directory (got '{out}')")
    assert "PosixPath" not in line


@pytest.mark.parametrize(
    ("argv", "flag", "name"),
    [(["plan", "SmolLM2-135M-Instruct", "--chip"], "--chip", "l4\x01"),
     (["plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--engine-version"], "--engine-version", "0.19.0\t"),
     (["advise", "SmolLM2-135M-Instruct", "--chips"], "--chips", "l4\x1b,h100")],
)  # fmt: skip
def test_a_name_with_a_control_character_is_refused(run, argv, flag, name):
    # was planned as l4 (chip names match loosely; schemas.common.printable_name refuses Unicode category Cc)
    line = one_error_line(run, *argv, name)
    assert line.startswith(f"Invalid value for '{flag}': ")
    assert "holds a control character (NUL, tab, newline or escape); give the name without it" in line


def test_an_unknown_chip_names_local_as_a_value_not_a_flag(run):
    # the line ended ', or --chips local on the host', which over MCP read 'or chips local on the host'
    line = one_error_line(run, "advise", "SmolLM2-135M-Instruct", "--chips", "zzz9000")
    assert line.startswith("unknown chip 'zzz9000' (--chips): not in accelerators.json")
    assert line.endswith(", or local for the host's own card")
