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
from onechip.errors import lines_redactor, redact, redactor

KEY = "eyJhbGciOi.abc-DEF_123"

# jwt.io's example token (HS256; claims sub 1234567890, name John Doe, iat 1516239022): a bearer key's shape as most
# OAuth servers issue one
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


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
    lines = [
        f'{{"Authorization" : "Bearer {KEY}"}}',
        f'{{\\"Authorization\\": \\"Bearer {KEY}\\"}}',
        f"refreshing with {JWT} now",
    ]
    scrub = redactor()
    assert through_host_filter(tmp_path, "\n".join(lines) + "\n", {}).splitlines() == [scrub(line) for line in lines]


def test_a_json_web_token_is_hidden_by_its_shape() -> None:
    assert redact(f"refreshing with {JWT} now") == "refreshing with *** now"
    assert redact(f"token={JWT}.") == "token=***."


@pytest.mark.parametrize("cut", [42, 45, 60, 80, 120, 148])
def test_a_bearer_jwt_cut_by_a_wrap_is_hidden_on_both_lines(cut: int) -> None:
    # the first part of a wrapped bearer key was hidden (the header's rule) and the rest shown: a JWT's header is
    # one of a few ('{"alg":"HS256","typ":"JWT"}'), so the rest (claims and signature) was the key. Cut in the header
    # or the claims (42 - 148 of this line; a cut in the signature leaves a whole JWT shape on the first line, whose
    # rest, part of a signature, is shown as a shape of no fixed length's is: errors._WHOLE_SHAPES)
    line = f"DEBUG send headers Authorization: Bearer {JWT}"
    shown = list(lines_redactor().each([line[:cut], line[cut:] + " sent", "INFO ok"]))
    assert shown == ["DEBUG send headers Authorization: Bearer ***", "*** sent", "INFO ok"]
