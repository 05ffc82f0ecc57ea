"""A private key's BEGIN line and its body behind a log prefix whose numbers move, and a URL's password cut by a wrap
(helper safety70b, 2026-12-07): a BEGIN line alone read '-----BEGIN PRIVATE KEY-----***' (the block pattern hid an
empty body); a body behind docker's or containerd's timestamps showed in clear (each line's prefix differs from the
BEGIN line's, which ended the block); and 'https://user:pass' then 'word@host' showed both halves of the password."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from factories import through_host_filter
from onechip.errors import lines_redactor, redact

BEGIN, END = "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"
BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "VEVTVEtFWUJPRFlTRUNPTkRMSU5FMTIzNDU2Nzg5MA=="]
# the prefix of line k: `docker logs --timestamps` (RFC 3339 with nanoseconds, Go's RFC3339Nano, which drops the
# fraction's trailing zeros), containerd's CRI log file ('<time> <stream> <P|F> ': kubelet's /var/log/pods/...), vLLM's
# process prefix of a multi-process server ('(APIServer pid=1) ', vllm/utils' decorate_logs)
PREFIXES: dict[str, Callable[[int], str]] = {
    "docker": lambda k: f"2026-12-07T19:37:45.{123456789 + 1010 * k}Z ".replace("0Z", "Z"),
    "containerd": lambda k: f"2026-12-07T19:37:{45 + k:02d}.{5 * 10**k}Z stdout F ",
    "vllm": lambda k: "(APIServer pid=1) ",
}


def _each(lines: list[str]) -> list[str]:
    return list(lines_redactor().each(lines))


def test_a_begin_line_alone_reads_as_it_was() -> None:
    assert redact(BEGIN) == BEGIN
    assert _each([BEGIN, *BODY, END]) == [BEGIN, "***", "***", END]
    assert redact(f"{BEGIN}\n{BODY[0]}\n{END}") == f"{BEGIN}***{END}"  # a whole text: its body still hidden


@pytest.mark.parametrize("kind", PREFIXES)
def test_a_body_behind_a_prefix_whose_numbers_move_stays_hidden(kind: str, tmp_path: Path) -> None:
    prefix = PREFIXES[kind]
    lines = [prefix(k) + text for k, text in enumerate([BEGIN, *BODY, END, "INFO next"])]
    shown = _each(lines)
    assert shown == [lines[0], prefix(1) + "***", prefix(2) + "***", lines[3], lines[4]]
    text = "".join(line + "\n" for line in lines)
    assert through_host_filter(tmp_path, text, {}) == "".join(line + "\n" for line in shown)  # serve.sh's perl alike


def test_a_prefix_that_differs_in_more_than_its_numbers_ends_the_block() -> None:
    # another writer's line: not the key's (a block cut short hides its body, not the log after it)
    assert _each(["svc-1  | " + BEGIN, "svc-1  | " + BODY[0], "db-1   | ABCDEFGHIJKLMNOP"])[1:] == [
        "svc-1  | ***",
        "db-1   | ABCDEFGHIJKLMNOP",
    ]


URL = "pip install --index-url https://deploy:Pa55w0rd-Zq9XwV8uT7sR6@pypi.example.com/simple torch"


@pytest.mark.parametrize("at", range(URL.index("://") + 3, URL.index("@") + 1))
def test_a_url_s_password_cut_by_a_wrap_shows_no_part_of_it(at: int, tmp_path: Path) -> None:
    lines = [URL[:at], URL[at:], "INFO next"]
    shown = _each(lines)
    assert "Pa55w0" not in "".join(shown) and "V8uT7sR6" not in "".join(shown), shown
    assert shown[2] == "INFO next" and shown[1].endswith("pypi.example.com/simple torch"), shown
    if at >= URL.index("deploy:") + len("deploy:"):  # the cut is in the password (or before its '@'): the user stays
        assert shown[0].startswith("pip install --index-url https://deploy:"), shown
    text = "".join(line + "\n" for line in lines)
    assert through_host_filter(tmp_path, text, {}) == "".join(line + "\n" for line in shown)
