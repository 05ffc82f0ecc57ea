"""A new user's first hour (2026-12-06, helper newuser60): one regression test per finding, each failing before
its fix."""

from __future__ import annotations

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")

# the request URL the OpenAI API reference and vLLM's docs show for each route, as a user copies it from a curl line
ENDPOINT_URLS = [
    ("http://127.0.0.1:1/v1/chat/completions", "http://127.0.0.1:1"),
    ("http://127.0.0.1:1/v1/completions/", "http://127.0.0.1:1"),
    ("https://gw.example.com/serving/v1/models", "https://gw.example.com/serving"),
]


@pytest.mark.parametrize("command", ["bench", "check"])
@pytest.mark.parametrize(("url", "base"), ENDPOINT_URLS)
def test_an_endpoint_url_is_refused_naming_the_base_url(run, command: str, url: str, base: str) -> None:
    # `bench http://127.0.0.1:8000/v1/chat/completions` appended /v1/models to it and failed with 'HTTP 404 from
    # http://127.0.0.1:8000/v1/chat/completions/v1/models' (exit 6), blaming a server that answers
    line = one_error_line(run, command, url)
    assert f"give the server's base URL, {base}" in line and "404" not in line, line


def test_a_gateway_path_holding_v1_is_still_a_base_url() -> None:
    # Cloudflare's AI Gateway serves OpenAI routes under https://gateway.ai.cloudflare.com/v1/ACCOUNT/GATEWAY/openai
    # (developers.cloudflare.com/ai-gateway): a /v1/ inside a path is no endpoint
    from onechip.schemas.common import openai_base_url

    url = "https://gateway.ai.cloudflare.com/v1/acct/gw/openai"
    assert openai_base_url(url) == url


@pytest.mark.parametrize(
    "command", ["demo", "plan", "up", "logs", "check", "bench", "cost", "report", "simulate", "advise", "mcp"]
)
def test_help_at_80_columns_shows_every_flag_whole(run, monkeypatch, command: str) -> None:
    # `plan --help` on an 80-column terminal (or piped) read '--tensor-paralle…', '--pipeline-paral…',
    # '--gpu-memory-uti…': typer gives a --flag/--no-flag pair's negative a column of its own (26 characters for
    # --no-enable-prefix-caching), and rich cut the flag names to fit; a flag nobody can read cannot be typed
    import re

    import typer

    from onechip.cli.main import app

    root = typer.main.get_command(app)
    ctx = root.make_context("onechip", [command, "--help"], resilient_parsing=True)
    flags = [f for p in root.get_command(ctx, command).params for f in (*p.opts, *p.secondary_opts) if "--" in f]
    monkeypatch.setenv("COLUMNS", "80")  # a terminal's default width, and rich's for a pipe
    code, out, _ = run(command, "--help")
    assert code == 0
    cut = [f for f in flags if not re.search(re.escape(f) + r"(?![\w…-])", out)]
    assert not cut, cut
