"""Follow-ups of break pass 58 on `onechip cloud`, against the loopback fake TPU API: Ctrl-C while `up` deletes a
resumed TPU that ended names it; Ctrl-C in `cloud down` across projects names every TPU left; a delete the API refuses
(FAILED_PRECONDITION) is worded from the resource's own state; `up`'s confirmation says which TPU it will reuse."""

from __future__ import annotations

import pytest

from factories import one_error_line
from fakes.tpu_api import Fault
from onechip.cloud import provision, records
from onechip.errors import CloudError

P = "proj-1"
OK = "us-west4-a"
SPOT = ("--provisioning", "spot", "--max-hours", "1")


def test_ctrl_c_while_up_deletes_a_resumed_tpu_that_ended_names_it(fast, run, monkeypatch, ctrl_c_in_delete):
    # was: `cloud up` resumed onechip's live node of that name; it ended in the wait (a spot preemption), so `up`
    # deleted it to create anew, and Ctrl-C in that delete printed 'interrupted' alone (exit 130), where every other
    # interrupt of `up` names the TPU and the command that deletes it (provision.interrupted_message)
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, *SPOT, "--name", "mine", "--yes")
    assert rc == 0, err
    real_wait = provision.wait_node_ready

    def ended(api, resource, *args, **kwargs):
        resource.state = "PREEMPTED"
        raise CloudError(f"node {resource.name} was preempted", reason="ended")

    monkeypatch.setattr(provision, "wait_node_ready", ended)
    ctrl_c_in_delete()
    line = one_error_line(run, "cloud", "up", "--project", P, "--zone", OK, *SPOT, "--name", "mine", "--yes", code=130)
    assert line.startswith(f"interrupted: node mine exists in {OK} (last state PREEMPTED") and (
        f"onechip cloud down --name mine --zone {OK} --project {P} --yes" in line
    ), line
    assert [r.name for r in records.load_all()] == ["mine"]  # still recorded: `cloud down` finds it
    monkeypatch.setattr(provision, "wait_node_ready", real_wait)


def test_ctrl_c_in_down_across_projects_names_every_tpu_left(fast, run, ctrl_c_in_delete):
    # was: `cloud down` over TPUs recorded in two projects deletes project by project; Ctrl-C in the first project's
    # delete named that project's TPUs alone ('1 may still exist: node a ...'), so the second project's TPU, never
    # reached, billed on untold
    for project, name in (("proj-1", "a"), ("proj-2", "b")):
        rc, out, err = run("cloud", "up", "--project", project, "--zone", OK, *SPOT, "--name", name, "--yes")
        assert rc == 0, err
    ctrl_c_in_delete()
    line = one_error_line(run, "cloud", "down", "--yes", code=130)
    assert "2 may still exist" in line, line
    for project, name in (("proj-1", "a"), ("proj-2", "b")):
        assert f"onechip cloud down --name {name} --zone {OK} --project {project} --yes" in line, line


@pytest.mark.parametrize(("kind", "name", "state"), [("node", "mine", "READY"), ("queued-resource", "q", "SUSPENDING")])
def test_a_delete_refused_as_failed_precondition_is_said_from_the_resources_own_state(fast, run, kind, name, state):
    # was: any FAILED_PRECONDITION to a delete (the API's 'not in a state required for the operation') was said as
    # '<name> is PROVISIONING: cannot be deleted yet; waiting', for a node too, and for a queued resource SUSPENDING
    fast.put(kind, OK, name, state, spot=kind == "node")
    # google.rpc.Code FAILED_PRECONDITION maps to HTTP 400 (cloud.google.com/apis/design/errors), as the fake sends it
    fast.faults.append(Fault("DELETE", rf"/{'nodes' if kind == 'node' else 'queuedResources'}/{name}", "precondition"))
    rc, out, err = run("cloud", "down", "--project", P, "--zone", OK, "--yes")
    assert rc == 0, err
    assert "PROVISIONING" not in err, err
    assert f"{kind} {name} is {state}: the API refuses its delete for now" in err, err
    assert not fast.nodes and not fast.queued


def test_up_says_it_will_reuse_a_live_tpu_of_ours_and_quotes_that_tpu(fast, run):
    # was: `cloud up` over onechip's live TPU of the name asked for printed 'will create v5e-1 spot: ...; limit 3 h'
    # and asked to 'create v5e-1 (spot)', then 'reused node mine': nothing was created, and the limit quoted was the
    # one asked this time, not the one that TPU runs under (its record's --max-hours 1, what `cloud status` warns by)
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, *SPOT, "--name", "mine", "--yes")
    assert rc == 0 and "will create v5e-1 spot" in out, err
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--provisioning", "spot", "--max-hours", "3",
                       "--name", "mine", "--yes")  # fmt: skip
    assert rc == 0, err
    said = next(line for line in out.splitlines() if line.startswith("will "))
    assert said.startswith("will reuse mine (onechip's live TPU of that name; nothing is created): v5e-1 spot"), said
    assert "limit 1 h" in said and "limit 3 h" not in said, said  # its own --max-hours, as the result quotes it
    assert "reused node mine" in out and [m for m, _, _ in fast.requests if m == "POST"][1:] == []
