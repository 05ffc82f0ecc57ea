"""A new user's QA pass (2026-12-05, helper qa56) on the surfaces merged that day: one regression test per finding,
each failing before its fix."""

from __future__ import annotations

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")

# a key put where a server URL's key does not go: a fragment, a user name alone, a query parameter not named as a key
URL_KEYS = [
    ("http://127.0.0.1:8000/#key=FRAGKEY12345", "http://127.0.0.1:8000/#***"),
    ("http://USERKEY12345@127.0.0.1:abc", "http://***@127.0.0.1:abc"),
    ("http://127.0.0.1:8000/?k=QUERYKEY12345", "http://127.0.0.1:8000/?***"),
]


@pytest.mark.parametrize("name", ["ONECHIP_BILLING_API_ENDPOINT", "ONECHIP_TPU_API_ENDPOINT", "HF_ENDPOINT"])
@pytest.mark.parametrize(("url", "masked"), URL_KEYS)
def test_an_endpoint_variable_refused_never_echoes_its_key(monkeypatch, name: str, url: str, masked: str):
    # was "ONECHIP_BILLING_API_ENDPOINT='http://127.0.0.1:8000/#key=FRAGKEY12345': a server URL has no ..."
    from onechip.errors import ConfigError
    from onechip.schemas.common import TEST_SERVER_HINT, server_url_from_env

    monkeypatch.setenv(name, url)
    with pytest.raises(ConfigError) as refused:
        server_url_from_env(name, TEST_SERVER_HINT)
    assert "KEY12345" not in str(refused.value)
    assert str(refused.value).startswith(f"{name}={masked!r}: "), refused.value


def test_an_endpoint_variable_with_a_user_name_is_refused(monkeypatch):
    # 'http://KEY@127.0.0.1:1' passed (no password) and was recorded in prices.json's endpoint and shown in errors
    from onechip.errors import ConfigError
    from onechip.schemas.common import TEST_SERVER_HINT, server_url_from_env

    monkeypatch.setenv("ONECHIP_BILLING_API_ENDPOINT", "http://USERKEY12345@127.0.0.1:1")
    with pytest.raises(ConfigError, match=r"^ONECHIP_BILLING_API_ENDPOINT='http://\*\*\*@127.0.0.1:1': .*user@"):
        server_url_from_env("ONECHIP_BILLING_API_ENDPOINT", TEST_SERVER_HINT)
    monkeypatch.setenv("ONECHIP_BILLING_API_ENDPOINT", "http://127.0.0.1:1")
    assert server_url_from_env("ONECHIP_BILLING_API_ENDPOINT", TEST_SERVER_HINT) == "http://127.0.0.1:1"


def test_prices_refresh_refusing_its_endpoint_says_one_line_without_the_key(run, monkeypatch):
    monkeypatch.setenv("ONECHIP_BILLING_API_ENDPOINT", URL_KEYS[0][0])
    line = one_error_line(run, "prices", "refresh", code=2)
    assert "FRAGKEY12345" not in line and URL_KEYS[0][1] in line, line


@pytest.mark.parametrize(("url", "masked"), URL_KEYS)
def test_a_base_url_refused_never_echoes_its_key(run, url: str, masked: str):
    # the CLI's and the MCP tools' "(got 'http://127.0.0.1:8000/#key=...')" echoed it whole
    line = one_error_line(run, "check", url)
    assert "KEY12345" not in line and f"(got {masked!r})" in line, line
