"""What redaction still let through (helper qa69b, 2026-12-07): a bearer header's key where its name and the ':' are
not next to each other or its quotes are escaped. Jackson's default pretty printer (DefaultPrettyPrinter, the JSON of
a Java client's request log) writes '"Authorization" : "Bearer K"'; a JSON text inside a JSON string (a recorded
error or log line in a report.json, an MCP reply) writes '\\"Authorization\\": \\"Bearer K\\"'; a Python call's
keyword 'Authorization="Bearer K"' (a traceback's source line). Each showed the key whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import through_host_filter
from onechip.errors import redact, redactor

KEY = "eyJhbGciOi.abc-DEF_123"


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (f'{{"Authorization" : "Bearer {KEY}"}}', '{"Authorization" : "Bearer ***"}'),
        (f'{{\\"Authorization\\": \\"Bearer {KEY}\\"}}', '{\\"Authorization\\": \\"Bearer ***\\"}'),
        (f"headers(Authorization='Bearer {KEY}')", "headers(Authorization='Bearer ***')"),
        (f'Authorization = "Bearer {KEY}"', 'Authorization = "Bearer ***"'),
        (f"[(b'authorization' , b'Basic {KEY}')]", "[(b'authorization' , b'Basic ***')]"),
    ],
)
def test_a_bearer_key_is_hidden_whatever_the_quotes_and_spaces_around_its_name(line: str, shown: str) -> None:
    assert redact(line) == shown


def test_json_inside_a_json_string_stays_json_with_its_bearer_key_hidden() -> None:
    inner = json.dumps({"headers": {"Authorization": f"Bearer {KEY}"}, "status": 401})
    text = json.dumps({"error": inner})
    assert KEY not in redact(text)
    assert json.loads(json.loads(redact(text))["error"]) == {"headers": {"Authorization": "Bearer ***"}, "status": 401}


def test_the_host_filter_agrees(tmp_path: Path) -> None:
    lines = [f'{{"Authorization" : "Bearer {KEY}"}}', f'{{\\"Authorization\\": \\"Bearer {KEY}\\"}}']
    scrub = redactor()
    assert through_host_filter(tmp_path, "\n".join(lines) + "\n", {}).splitlines() == [scrub(line) for line in lines]
