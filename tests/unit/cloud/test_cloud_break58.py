"""Break pass 58 on `onechip cloud`, against the loopback fake TPU API: a live TPU of ours under the name `up` is
asked for is reused only when it is the chip and pricing model asked for, and never deleted as 'ended'; Ctrl-C while
`up` deletes an ended one leaves it recorded."""

from __future__ import annotations

import pytest

from factories import one_error_line
from onechip import api
from onechip.cloud import provision, records
from onechip.schemas.cloud import CloudNameRequest

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


def test_ctrl_c_while_up_deletes_an_ended_tpu_of_ours_leaves_it_recorded_and_named(fast, run, monkeypatch):
    # was: `cloud up` over onechip's STOPPED node of that name not recorded here (a lost record; its disk still bills)
    # deletes it first; Ctrl-C in that delete's wait printed 'interrupted' alone and left it unrecorded, so `cloud
    # down` (no --zone) said 'nothing to delete' while it stayed
    fast.put("node", OK, "mine", "STOPPED", spot=True)
    fast.delete_s = 30.0  # the delete's operation runs on while we wait
    real_sleep = provision.time.sleep

    def sleep(seconds):
        if any(m == "DELETE" for m, _, _ in fast.requests):
            raise KeyboardInterrupt  # Ctrl-C while the delete is waited on
        real_sleep(seconds)

    monkeypatch.setattr(provision.time, "sleep", sleep)
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
