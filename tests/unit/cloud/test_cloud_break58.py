"""Break pass 58 on `onechip cloud`, against the loopback fake TPU API: a live TPU of ours under the name `up` is
asked for is reused only when it is the chip and pricing model asked for, and never deleted as 'ended'; Ctrl-C while
`up` deletes an ended one leaves it recorded; a labelled TPU not in the records is said to be so."""

from __future__ import annotations

import json

import pytest

from factories import one_error_line
from onechip import api
from onechip.cloud import provision, records
from onechip.mcp import tools
from onechip.schemas.cloud import NOT_RECORDED, CloudNameRequest

P = "proj-1"
OK = "us-west4-a"
SPOT = ("--provisioning", "spot", "--max-hours", "1")


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        (("--provisioning", "on-demand", "--max-hours", "1"), "v5litepod-1 spot, not the v5litepod-1 on-demand"),
        (("--chip", "v5e-4", *SPOT), "v5litepod-1 spot, not the v5litepod-4 spot"),
    ],
)
def test_up_never_reuses_a_live_tpu_of_another_chip_or_pricing_model(fast, run, asked, said):
    # was: `cloud up --provisioning on-demand` (or --chip v5e-4) over onechip's READY spot v5e-1 of the same name (the
    # default name onechip-CHIP is the same for every pricing model) printed the quote of what was asked, then
    # 'reused node ... v5litepod-1 (spot)', exit 0: a preemptible TPU for an on-demand one, one chip for four (and
    # `--model` then started engines planned for the chip asked for on it)
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, *SPOT, "--name", "mine", "--yes")
    assert rc == 0, err
    line = one_error_line(run, "cloud", "up", "--project", P, "--zone", OK, *asked, "--name", "mine", "--yes")
    # the accelerator types: catalog/cloud_tpu.json (v5e-1 -> v5litepod-1, v5e-4 -> v5litepod-4)
    assert f"{OK} already has onechip's node mine (READY): {said} asked for" in line, line
    assert "onechip cloud down --name mine" in line and "another --name" in line
    assert [p for m, p, _ in fast.requests if m == "POST"][1:] == []  # nothing created the second time
    assert [(r.name, r.chip, r.provisioning) for r in records.load_all()] == [("mine", "v5e-1", "spot")]
    api.cloud_down(CloudNameRequest(project=P))
    assert not fast.nodes


def test_up_of_a_flex_start_name_never_deletes_a_live_node_named_as_its_node(fast, run):
    # was: with onechip's READY spot node `x-node` (its own `cloud up --name x-node`), `cloud up --name x` (flex-start:
    # its node id is x-node) said 'deleting node x-node in us-west4-a (READY): it ended, so its name can be used
    # again' and deleted that running TPU, unasked
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, *SPOT, "--name", "x-node", "--yes")
    assert rc == 0, err
    line = one_error_line(run, "cloud", "up", "--project", P, "--zone", OK, "--name", "x", "--yes")
    assert f"{OK} already has onechip's node x-node (READY)" in line and "give another --name" in line, line
    assert not [m for m, _, _ in fast.requests if m == "DELETE"] and len(fast.nodes) == 1
    assert [r.name for r in records.load_all()] == ["x-node"]


def test_ctrl_c_while_up_deletes_an_ended_tpu_of_ours_leaves_it_recorded_and_named(
    fast, run, monkeypatch, ctrl_c_in_delete
):
    # was: `cloud up` over onechip's STOPPED node of that name not recorded here (a lost record; its disk still bills)
    # deletes it first; Ctrl-C in that delete's wait printed 'interrupted' alone and left it unrecorded, so `cloud
    # down` (no --zone) said 'nothing to delete' while it stayed
    fast.put("node", OK, "mine", "STOPPED", spot=True)
    real_sleep = ctrl_c_in_delete()
    line = one_error_line(run, "cloud", "up", "--project", P, "--zone", OK, *SPOT, "--name", "mine", "--yes", code=130)
    assert line.startswith(f"interrupted: node mine exists in {OK} (last state STOPPED") and (
        f"onechip cloud down --name mine --zone {OK} --project {P} --yes" in line
    ), line
    assert [(r.name, r.state) for r in records.load_all()] == [("mine", "STOPPED")]
    monkeypatch.setattr(provision.time, "sleep", real_sleep)
    fast.delete_s = 0.0
    rc, out, err = run("cloud", "down", "--project", P, "--yes")  # no --zone: it is recorded now
    assert rc == 0 and f"deleted node mine ({OK})" in out, err
    assert not fast.nodes and records.load_all() == []


def test_a_labelled_tpu_not_in_the_records_is_said_so_before_down_deletes_it(fast, run):
    # was: a TPU labelled created-by=onechip that this onechip did not record (another checkout's, another user's in
    # the project, a lost record) was listed by `cloud down --zone Z` and `cloud status --zone Z` as any of its own,
    # nothing saying it was found by its label alone, and then deleted; without --zone it is never taken
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, *SPOT, "--name", "mine", "--yes")
    assert rc == 0, err
    fast.put("node", OK, "theirs", "READY", spot=True)  # labelled, not recorded here
    said = {st.resource.name: st.warnings for st in api.cloud_status(CloudNameRequest(project=P, zones=[OK]))}
    assert NOT_RECORDED in said["theirs"] and NOT_RECORDED not in said["mine"], said
    rc, out, err = run("cloud", "status", "--project", P, "--zone", OK)
    assert rc == 0 and out.count("not in this onechip's records") == 1, out
    (mine, theirs) = sorted(api.cloud_down_targets(CloudNameRequest(project=P, zones=[OK])), key=lambda r: r.name)
    assert (mine.recorded, theirs.recorded) == (True, False)
    rc, out, err = run("cloud", "down", "--project", P, "--yes")  # no --zone: the recorded one alone
    assert rc == 0 and "node mine in" in out and "theirs" not in out, out
    fast.put("node", OK, "mine", "READY", spot=True)  # its record gone with the delete: found by its label too
    preview = tools._cloud_down_preview(tools.CloudDownToolRequest(project=P, zones=[OK]))  # what MCP's agent reads
    assert preview.count(f"({OK}; {NOT_RECORDED})") == 2, preview
    rc, out, err = run("cloud", "down", "--project", P, "--zone", OK, "--yes")
    listed = sorted(line for line in out.splitlines() if line.startswith("  node "))
    assert listed == [
        f"  node mine in {OK} (spot, project {P}; not in this onechip's records: found by its created-by=onechip "
        "label, so perhaps another checkout's or another user's)",
        f"  node theirs in {OK} (spot, project {P}; not in this onechip's records: found by its created-by=onechip "
        "label, so perhaps another checkout's or another user's)",
    ], out
    assert rc == 0 and not fast.nodes


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--name", ""), "Invalid value for '--name': name: not a TPU resource name (like onechip-v5e-1: lowercase "
         "letters, digits, hyphens, at most 58) (got '')"),
        (("--zone", "bogus-zone-9"), "Invalid value for '--zone': zones.0: not a zone (like us-west4-a) (got "
         "'bogus-zone-9')"),
        (("--project", "P"), "Invalid value for '--project': project: not a Google Cloud project id (like "
         "my-project-123) (got 'P')"),
    ],
)  # fmt: skip
def test_a_name_zone_or_project_not_shaped_as_the_apis_is_said_once(fast, run, argv, said):
    # was: "Invalid value for '--name': name: '' is not a TPU resource name (like ...) (got '')": the value twice, the
    # validator quoting it and schemas.inputs.describe adding '(got ...)' as it does for every flag
    assert one_error_line(run, "cloud", "down", *argv, "--yes") == said
    assert fast.requests == []


@pytest.mark.parametrize(
    ("first", "again", "limit_s"),
    [
        (("--max-run-duration", "1h"), ("--max-run-duration", "4h"), 3600.0),  # the queued resource's runDuration
        ((*SPOT[:2], "--max-hours", "1"), (*SPOT[:2], "--max-hours", "3"), 3600.0),  # the record's, status warns by
    ],
)
def test_a_reused_tpu_is_quoted_with_its_own_limit_not_the_one_asked_again(fast, run, first, again, limit_s):
    # was: `cloud up --max-run-duration 4h` over onechip's queued resource made with 1h said 'reused' and 'billing
    # stops on its own at <granted + 4 h>', three hours after the API ends its run (and --max-hours 3 over a spot
    # node kept at 1 said '--max-hours ends at' 2 h after `cloud status` warns)
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, *first, "--name", "mine", "--yes", "--json")
    assert rc == 0, err
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, *again, "--name", "mine", "--yes", "--json")
    result = json.loads(out)
    assert rc == 0 and result["reused"] and result["quote"]["limit_s"] == limit_s, out
    api.cloud_down(CloudNameRequest(project=P))
