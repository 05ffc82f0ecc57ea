"""`cloud down`'s preview (MCP cloud_down's, the CLI's listing) of another onechip home's TPU, found at stop 64 (helper
cloud65, 2026-12-07): it said 'would delete' what the delete then kept."""

from __future__ import annotations

import pytest

from onechip import api
from onechip.api import _cloud
from onechip.cloud import records
from onechip.mcp import tools
from onechip.schemas.cloud import CloudUpRequest

P = "proj-1"
OK = "us-west4-a"  # the fake's zone that grants everything (conftest.fake_api)
ANOTHER = "0123456789abcdef" * 2  # another onechip home's owner id (records.owner_id's shape: uuid4 hex)


def _taken_by_another_home(fast, name: str) -> None:
    """This home's TPU `name`, deleted outside onechip and made again under that name by another onechip home: the
    API's node carries created-by onechip and that home's onechip-owner (test_cloud_qa64b's case)."""
    key = f"projects/{P}/locations/{OK}/nodes/{name}"
    fast.nodes[key]["labels"] = dict(fast.nodes[key]["labels"], **{records.OWNER_LABEL: ANOTHER})


@pytest.mark.parametrize("by", ["record", "zone"])
def test_down_s_mcp_preview_says_it_keeps_another_homes_tpu_as_the_down_does(fast, by) -> None:
    # the preview said 'would delete node NAME' of a TPU the delete then kept ('another onechip home's'): the preview
    # now says what the run does, from the same decision (provision.down_keeps), in the run's own words
    tpu = api.cloud_up(CloudUpRequest(project=P, zones=[OK], name="mine", provisioning="spot", no_limit=True))
    api.cloud_up(CloudUpRequest(project=P, zones=[OK], name="theirs", provisioning="spot", no_limit=True))
    _taken_by_another_home(fast, "theirs")
    if by == "zone":
        records.forget(next(r for r in records.load_all() if r.name == "theirs"))
    request = tools.CloudDownToolRequest(project=P, zones=[OK] if by == "zone" else [])
    preview = tools._cloud_down_preview(request)
    result = api.cloud_down(request)
    (kept,) = result.kept  # the run's word on it
    assert result.deleted == [f"node mine ({OK})"] and tpu.resource.name == "mine", result
    assert preview.startswith(f"would delete node mine ({OK}")
    assert f"would keep {kept}" in preview and "theirs" not in preview.split("would keep", 1)[0], preview
    assert ANOTHER in kept and "another onechip home's" in kept, kept


def test_down_s_cli_listing_says_it_keeps_another_homes_tpu(run, fast) -> None:
    api.cloud_up(CloudUpRequest(project=P, zones=[OK], name="theirs", provisioning="spot", no_limit=True))
    _taken_by_another_home(fast, "theirs")
    code, out, err = run("cloud", "down", "--project", P, "--zone", OK, "--yes")
    assert code == 0 and not any(m == "DELETE" for m, _, _ in fast.requests), err
    # the listing (stdout, stderr under --json) said it as one the run deletes, then the run kept it
    (listed,) = [line for line in out.splitlines() if line.startswith("  node theirs in")]
    (kept,) = [line.removeprefix("kept ") for line in out.splitlines() if line.startswith("kept ")]
    assert listed.endswith(f"; will be kept: {kept.split(': ', 1)[1]}") and ANOTHER in listed, (listed, kept)


def test_down_s_mcp_gate_asks_no_confirm_when_every_target_would_be_kept(fast) -> None:
    # files66: with every target another home's, the preview said 'would delete nothing; would keep ...; to do so give
    # targets: [...]' and the gate asked for confirm: true, and the call without targets was refused: nothing to confirm
    api.cloud_up(CloudUpRequest(project=P, zones=[OK], name="theirs", provisioning="spot", no_limit=True))
    _taken_by_another_home(fast, "theirs")
    request = tools.CloudDownToolRequest(project=P)
    preview = tools._cloud_down_preview(request)
    assert preview.startswith(f"would delete nothing; would keep node theirs ({OK}): ") and "targets" not in preview
    assert not tools._cloud_down_gated(request)
    result = tools._cloud_down(request, lambda _: None)
    (kept,) = result.kept
    assert not result.deleted and kept.startswith(f"node theirs ({OK}): ") and ANOTHER in kept, result
    assert not any(method == "DELETE" for method, _, _ in fast.requests)
    assert tools._cloud_down_summary(result) == f"deleted nothing; kept {kept}"


@pytest.mark.parametrize("by", ["cli", "mcp"])
def test_down_s_every_kept_target_is_forgotten_and_its_engines_left_alone_by_cli_and_mcp(run, fast, monkeypatch,
                                                                                         by) -> None:  # fmt: skip
    # files66b: with every target another home's, the CLI's down forgot the record (provision._ours: a record of a TPU
    # this home does not own) while MCP cloud_down kept it, so `cloud status` went on listing another home's TPU as
    # this one's; the CLI stopped this home's engines on the kept TPU's address before keeping it; and it asked to
    # confirm 'delete these 0, keep 1' (refused without a terminal or --yes), where the MCP gate asks nothing
    api.cloud_up(CloudUpRequest(project=P, zones=[OK], name="theirs", provisioning="spot", no_limit=True))
    _taken_by_another_home(fast, "theirs")
    (theirs,) = records.load_all()
    ip = theirs.external_ip or theirs.last_external_ip
    assert ip, theirs
    stopped: list[str] = []
    monkeypatch.setattr(_cloud, "_engines_on_hosts", lambda: {ip: ["engine at http://127.0.0.1:8000: healthy"]})
    monkeypatch.setattr(_cloud, "engines_down", lambda on_progress: stopped.append("down"))
    if by == "cli":
        code, out, err = run("cloud", "down", "--project", P)  # nothing it deletes: no --yes asked, as the MCP gate
        assert code == 0, err
        (kept,) = [line.removeprefix("kept ") for line in out.splitlines() if line.startswith("kept ")]
    else:
        (kept,) = tools._cloud_down(tools.CloudDownToolRequest(project=P), lambda _: None).kept
    assert kept.startswith(f"node theirs ({OK}): ") and ANOTHER in kept, kept
    assert not any(method == "DELETE" for method, _, _ in fast.requests)
    assert records.load_all() == [] and stopped == [], (records.load_all(), stopped)
