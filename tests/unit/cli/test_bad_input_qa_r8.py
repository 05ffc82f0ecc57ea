"""The QA pass of the eighth session (2026-12-03), one regression test per finding, each failing before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize("command", ["check", "bench"])
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:abc",  # was internal error (InvalidURL: Invalid port: 'abc'), exit 1
        "http://127.0.0.1:99999",  # was exit 6, 'cannot reach ...: Connection refused'
        "localhost:8000",  # was exit 6, "unsupported protocol 'localhost://'"
        "notaurl",  # was exit 6, "Request URL is missing an 'http://' or 'https://' protocol"
        "ftp://127.0.0.1",
        "http://",  # was exit 6, 'cannot reach http:/v1/models'
        "http://127.0.0.1:0",
    ],
)
def test_a_url_that_names_no_server_is_bad_input(run, tmp_path: Path, command: str, url: str):
    line = one_error_line(run, command, url, "--out", str(tmp_path / "out"))
    assert "not a server URL: give http://HOST:PORT or https://HOST:PORT" in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:9", "https://example.com/v1/", "http://[::1]:8000"])
def test_a_server_url_is_taken_as_given(url: str):
    from onechip.schemas.common import server_url

    assert server_url(url) == url
