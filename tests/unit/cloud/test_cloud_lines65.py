"""Cloud refusal lines, found at stop 64 (helper cloud65, 2026-12-07): a pathological refusal's line is bounded
(errors.MAX_LINE_CHARS), and a failed `cloud down` still says each TPU's delete command."""

from __future__ import annotations

import pytest

from fakes.tpu_api import Fault
from onechip import api
from onechip.cloud import provision, records, refusals
from onechip.errors import MAX_LINE_CHARS
from onechip.schemas.cloud import CloudUpRequest

P = "proj-1"
OK = "us-west4-a"  # the fake's zone that grants everything (conftest.fake_api)
ERROR = "error: "  # cli.main._error's prefix
SECRET = "Zq9" * 70  # a value with no secret's shape, known only as MY_API_TOKEN's (errors._SECRET_NAME: *TOKEN)


def test_a_pathological_cloud_error_body_makes_one_bounded_error_line(run, monkeypatch: pytest.MonkeyPatch) -> None:
    # the API's message is the server's text (a proxy's page, an echo of the request): 100,000 characters of it, a
    # secret among them, made a 100,000-character error line
    monkeypatch.setenv("MY_API_TOKEN", SECRET)
    body = {"code": 500, "message": "backend said:\n" + "<div>x</div>\n" * 10_000 + SECRET + " tail"}

    def refused(*_: object, **__: object) -> None:
        raise refusals.from_status(body, "zone us-west4-a")

    monkeypatch.setattr(api, "cloud_statuses", refused)
    code, _, err = run("cloud", "status", "--project", "my-project-123")
    (line,) = err.splitlines()
    assert code != 0 and line.startswith(f"{ERROR}zone us-west4-a: backend said: <div>x</div>"), line[:80]
    assert len(line) <= len(ERROR) + MAX_LINE_CHARS and line.endswith(" characters)"), len(line)
    assert "Zq9Zq9" not in err


def test_a_failed_down_of_many_tpus_still_names_each_delete_command(run, fast) -> None:
    # the line naming each TPU left with its delete command is cut at MAX_LINE_CHARS: without --json it was all a
    # failed down said, so the commands past the cut were nowhere; stdout now says each TPU's outcome, as --json does
    names = [f"tpu-{k:02d}" for k in range(12)]
    for name in names:
        api.cloud_up(CloudUpRequest(project=P, zones=[OK], name=name, provisioning="spot", no_limit=True))
    fast.faults.append(Fault("DELETE", "/nodes/", 403, times=10**6))  # permission denied: nothing is deleted
    code, out, err = run("cloud", "down", "--project", P, "--yes")
    (line,) = [x for x in err.splitlines() if x.startswith(ERROR)]
    assert code == 7 and len(line) <= len(ERROR) + MAX_LINE_CHARS, (code, len(line))
    for resource in records.load_all():
        assert provision.delete_command(resource) in out, out
