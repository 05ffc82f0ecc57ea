"""A `cloud down` that failed in part, over MCP and under --json: the agent and the caller parsing stdout get the whole
result (deleted, failed, unreachable) with the error line and exit code, as `cloud down --json` prints it
(cli.cloud_cmd.print_json; errors.CloudDownError.result), not the error line alone."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from fakes.tpu_api import Fault
from onechip.errors import CloudError
from onechip.mcp.server import build_server

P = "proj-1"
OK = "us-west4-a"
FAR = "us-east1-d"  # the fake's default Zone: grants everything
SPOT = {"chip": "v5e-1", "project": P, "provisioning": "spot", "max_hours": 1.0, "confirm": True}


def _call(*pairs: tuple[str, dict]):
    async def go():
        async with Client(build_server()) as client:
            return [await client.call_tool(name, args) for name, args in pairs]

    return anyio.run(go)


def test_cloud_down_over_mcp_that_fails_in_part_returns_what_it_did_with_the_error(fast):
    fast.faults.append(Fault("DELETE", r"/nodes/first$", 403, times=100))  # the API refuses first's delete
    *_, down = _call(
        ("cloud_up", {**SPOT, "zones": [OK], "name": "first"}),
        ("cloud_up", {**SPOT, "zones": [OK], "name": "second"}),
        ("cloud_down", {"project": P, "targets": [f"{P}/{OK}/node/{n}" for n in ("first", "second")], "confirm": True}),
    )
    assert down.is_error  # it did not all go: a tool error, its one line the CLI's
    data = down.structured_content
    assert data is not None, down.content[0].text
    assert data["deleted"] == [f"node second ({OK})"], data
    (failed,) = data["failed"]
    assert failed.startswith(f"node first ({OK}): "), failed
    assert data["error"] == down.content[0].text, data  # the line the text content says
    assert data["exit_code"] == CloudError.exit_code == 7, data  # as `cloud down --json` (cloud_cmd.EXIT_CODES: 7)


@pytest.mark.usefixtures("fake_clock")  # conftest: down lists the zone through the outage for its bound
def test_down_json_whose_only_zone_could_not_be_listed_is_a_result_naming_it(fast, run):
    # nothing recorded, the one --zone unreachable (ListNodesResponse.unreachable): stdout held only
    # {"error", "exit_code"}, where a down that reached another zone prints its result with `unreachable`
    fast.unreachable.add(FAR)
    rc, out, err = run("cloud", "down", "--project", P, "--zone", FAR, "--yes", "--json")
    assert rc == 7, (rc, out, err)
    data = json.loads(out)
    (line,) = data["unreachable"]
    assert f"zone {FAR} (project {P}) could not be listed" in line, data
    assert data["deleted"] == [] and data["failed"] == [], data
    assert data["exit_code"] == 7 and FAR in data["error"], data


@pytest.mark.usefixtures("fake_clock")  # conftest: down lists the zone through the outage for its bound
def test_cloud_down_over_mcp_whose_only_zone_could_not_be_listed_names_it_in_the_result(fast):
    fast.unreachable.add(FAR)
    (down,) = _call(("cloud_down", {"project": P, "zones": [FAR]}))
    assert down.is_error, down.content[0].text
    data = down.structured_content
    assert data is not None, down.content[0].text
    (line,) = data["unreachable"]
    assert f"zone {FAR} (project {P}) could not be listed" in line, data
    assert data["exit_code"] == 7 and data["error"] == down.content[0].text, data
