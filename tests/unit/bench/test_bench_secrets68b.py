"""A bench against a server whose failures echo secrets (helper safety68b): no part of one reaches requests.jsonl,
summary.json, report.md, stderr or an MCP tool result. The fake answers 401 and 500 with a body echoing the request's
Authorization header and an upstream URL with a password and ?key=, and redirects to such a URL, which aiohttp
refuses with the URL in its exception's text (NonHttpUrlRedirectClientError, InvalidUrlRedirectClientError: aiohttp
3.14 client_exceptions.py, `str(exc)` is the URL)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from fakes.vllm_server import FakeVllm
from onechip.mcp.server import build_server

# values no shape rule knows by themselves: only their place (a URL's password, ?key=, a bearer header, the key
# variable's value) hides them
SERVER_KEY = "plain-serverkey-0451"
PASSWORD = "pw-7Qx9-upstream"
QUERY_KEY = "qk-5Zt2-upstream"
SECRETS = (SERVER_KEY, PASSWORD, QUERY_KEY)


def _says(number: int, headers: dict[str, str]) -> str:
    """What a proxy that echoes its request says: the Authorization header it got and the upstream it tried."""
    sent = headers.get("authorization", "none")
    return f"request {number} refused: got Authorization: {sent}; upstream http://svc:{PASSWORD}@backend:8000/v1?key={QUERY_KEY}"


def _server(status: int, location: str | None = None) -> FakeVllm:
    # chat request 1 is the bench's probe; 2 and 3 are the measured requests
    return FakeVllm(api_key=SERVER_KEY, fail_status={2: status, 3: status}, fail_says=_says, fail_location=location)


CASES = [
    pytest.param(401, None, id="401-echoes-the-authorization-header"),
    pytest.param(500, None, id="500-echoes-an-upstream-url"),
    # a redirect aiohttp will not follow: its exception's text is the Location whole
    pytest.param(307, f"ftp://svc:{PASSWORD}@backend/v1?key={QUERY_KEY}", id="redirect-to-a-non-http-url"),
    pytest.param(307, f"http://svc:{PASSWORD}@[backend/v1?key={QUERY_KEY}", id="redirect-to-no-url"),
]


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.mark.parametrize(("status", "location"), CASES)
def test_no_secret_a_failure_echoes_reaches_the_run_files_or_stderr(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, location: str | None
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", SERVER_KEY)
    out = tmp_path / "run"
    with _server(status, location) as srv:
        code, stdout, stderr = run(
            *("bench", srv.url, "--out", str(out), "--contexts", "16", "--clients", "1", "--reps", "1"),
            *("--output-tokens", "4", "--requests-per-client", "2", "--warmup-requests", "0"),
        )
    assert code == 6 and "every measured cell failed" in stderr  # EndpointError: what was measured is kept
    samples = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert [s["status"] for s in samples] == ["failed", "failed"] and all(s["error"] for s in samples)
    assert run("report", str(out))[0] == 0
    for name in ("requests.jsonl", "summary.json", "report.md"):
        assert _leaks((out / name).read_text()) == [], name
    assert _leaks(stdout + stderr) == []


@pytest.mark.parametrize(("status", "location"), CASES)
def test_no_secret_a_failure_echoes_reaches_an_mcp_tool_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, location: str | None
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", SERVER_KEY)
    monkeypatch.setenv("ONECHIP_MCP_FILES", str(tmp_path))
    args = {"contexts": [16], "clients": [1], "reps": 1, "output_tokens": 4, "requests_per_client": 2}
    with _server(status, location) as srv:

        async def go():  # type: ignore[no-untyped-def]
            async with Client(build_server()) as client:
                return await client.call_tool(
                    "bench", {"base_url": srv.url, "out_dir": str(tmp_path / "run"), "warmup_requests": 0, **args}
                )

        result = anyio.run(go)
    said = " ".join(getattr(c, "text", "") for c in result.content) + json.dumps(result.structured_content)
    assert "failed" in said and _leaks(said) == [], said
    assert _leaks((tmp_path / "run" / "requests.jsonl").read_text()) == []


def test_a_client_url_with_a_password_is_refused_without_echoing_it(run) -> None:
    # user:password@ in the bench URL is refused before any request (schemas.common.server_url); the line shows the
    # URL without its userinfo
    code, stdout, stderr = run("bench", f"http://alice:{PASSWORD}@127.0.0.1:9/", "--contexts", "16")
    assert code == 2 and "password" in stderr and _leaks(stdout + stderr) == []


@pytest.mark.parametrize(("status", "location"), CASES[:3])
def test_no_secret_a_failure_echoes_reaches_checks_json_or_stderr(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, location: str | None
) -> None:
    # `check` reads through vllm.wire (httpx, no redirect followed): the same answers, its probes' notes
    monkeypatch.setenv("VLLM_API_KEY", SERVER_KEY)
    with FakeVllm(api_key=SERVER_KEY, fail_status=dict.fromkeys(range(1, 50), status), fail_says=_says) as srv:
        srv.fail_location = location
        code, stdout, stderr = run("check", srv.url, "--only", "smoke", "--out", str(tmp_path / "c"))
    assert code in (6, 10) and _leaks(stdout + stderr) == []
    said = (tmp_path / "c" / "checks.json").read_text()
    assert "refused" in said and _leaks(said) == []


def test_a_text_from_outside_set_after_the_record_is_made_is_redacted_too() -> None:
    # schemas.common.Said on a field of a model that validates assignments: checks set a probe's note, the report's
    # endpoint_failing, the run manifest's error after making them
    from onechip.schemas.checks import CheckReport, Probe
    from onechip.schemas.run import RunManifest

    probe = Probe(name="p", verdict="fail", note=f"ftp://svc:{PASSWORD}@h/?key={QUERY_KEY}")
    report = CheckReport(base_url="http://h:1", model="m")
    report.endpoint_failing = f"HTTP 500: http://svc:{PASSWORD}@h/"
    probe.note = f"not answered: {probe.note}"
    manifest = RunManifest(run_id="r", created_at="t", tool_version="v", python="3", host="h", command="demo")
    manifest.error = f"InvalidUrlRedirectClientError: http://svc:{PASSWORD}@[h/?key={QUERY_KEY}"
    shown = probe.model_dump_json() + report.model_dump_json() + manifest.model_dump_json()
    assert _leaks(shown) == [] and "svc:***@" in shown


@pytest.mark.parametrize("command", ["bench", "check"])
def test_a_client_url_with_a_user_alone_is_refused_without_echoing_it(run, command: str) -> None:
    # 'http://KEY@host' (a gateway's key as the URL's user, RFC 3986 userinfo without a password): aiohttp and httpx
    # send it as Basic credentials, and the base URL is recorded in every run file (summary.json's base_url); refused as
    # OPENAI_BASE_URL's is (schemas.common.server_url_from_env), where it was accepted and recorded
    code, stdout, stderr = run(command, f"http://{QUERY_KEY}@127.0.0.1:9/", "--out", "/nonexistent/never")
    assert code == 2 and "user@" in stderr and _leaks(stdout + stderr) == []
