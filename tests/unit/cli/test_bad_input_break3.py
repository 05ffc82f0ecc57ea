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
