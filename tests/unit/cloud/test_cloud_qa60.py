"""QA pass 60 on the day's cloud changes: a permission 403 worded as a location, the agent's view of a zone status could
not read, and what a delete resent through an outage tells the user."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from fakes.tpu_api import LOCATION, Fault
from onechip.cloud import records, refusals
from onechip.mcp.server import build_server

P = "proj-1"
OK = "us-west4-a"
FAR = "us-east1-d"  # granted everything too (the fake's default Zone)


@pytest.fixture(autouse=True)
def short_deadline(monkeypatch):
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "0.5")  # each call's retries within 0.5 s, not 30 s


def _error_info(reason: str, domain: str) -> dict[str, object]:
    return {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": domain}


@pytest.mark.parametrize(
    ("message", "details", "reason"),
    [
        # the sentence Google's APIs answer for a zone the project may not use (skypilot's quote): the next zone
        (LOCATION.format(zone=FAR), [], "inaccessible"),
        # the same sentence, but the API's machine-readable cause (google.rpc.ErrorInfo.reason: 'the reason of the
        # error ... a constant value that identifies the proximate cause', googleapis google/rpc/error_details.proto)
        # is a permission the caller lacks (IAM_PERMISSION_DENIED, iam.googleapis.com) or the API being off in the
        # project (SERVICE_DISABLED, google/api/error_reason.proto): every zone answers the same, nothing to fail over
        (LOCATION.format(zone=FAR), [_error_info("IAM_PERMISSION_DENIED", "iam.googleapis.com")], "auth"),
        (LOCATION.format(zone=FAR), [_error_info("SERVICE_DISABLED", "googleapis.com")], "auth"),
        # a permission refusal whose words hold 'location', 'not found' and 'unauthorized' apart, not the sentence
        (f"Permission 'tpu.nodes.create' denied on 'projects/{P}/locations/{FAR}': the caller is unauthorized, or "
         "its service account was not found", [], "auth"),
    ],
)  # fmt: skip
def test_only_the_location_sentence_without_a_permission_cause_is_a_zone_the_project_may_not_use(
    message, details, reason
):
    body = {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": message, "details": details}}
    assert refusals.from_http(403, body, "POST nodes").reason == reason


def test_up_stops_at_a_permission_403_worded_as_the_location_and_creates_nothing_in_the_next_zone(fast, run):
    # a permission the caller lacks is every zone's: failing over created a TPU in the next zone where the caller may
    # hold the permission (a billed TPU nobody meant) or hid the permission behind 'zone not usable' for each zone
    fast.faults.append(Fault("POST", f"/locations/{FAR}/", "iam-403", times=10**6))
    rc, out, err = run("cloud", "up", "--project", P, "--zone", f"{FAR},{OK}", "--provisioning", "spot", "--no-limit",
                       "--yes")  # fmt: skip
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc != 0 and len(said) == 1, (rc, out, err)
    assert "not usable for this project" not in err, err
    assert not fast.nodes and records.load_all() == []
    assert not any(m == "POST" and f"/locations/{OK}/" in path for m, path, _ in fast.requests)


def test_mcp_cloud_status_names_a_zone_it_could_not_read_and_the_tpu_that_may_still_bill(fast, run):
    # the CLI exits 7 naming the zone; over MCP the call's one line read '2 resources' and nothing else, so an agent
    # reading it took far's record (its state unread) for a known one
    for name, zone in (("near", OK), ("far", FAR)):
        rc, out, err = run("cloud", "up", "--project", P, "--zone", zone, "--name", name, "--provisioning", "spot",
                           "--no-limit", "--yes")  # fmt: skip
        assert rc == 0, (out, err)
    fast.faults.append(Fault("GET", f"/locations/{FAR}/", 503, times=10**6))

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool("cloud_status", {"project": P})

    result = anyio.run(go)
    text = result.content[0].text
    assert "\n" not in text, text
    assert f"zone {FAR} (project {P}) could not be read" in text and "far may still bill" in text, text
    assert OK not in text, text  # the zone that answered is not named as one that failed
