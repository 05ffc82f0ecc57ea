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
    assert line.startswith(f"{env}='http://alice:***@127.0.0.1:9': the URL holds a password (user:password@)")
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
