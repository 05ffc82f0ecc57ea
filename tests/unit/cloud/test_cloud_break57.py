"""Break pass 57 on `onechip cloud`, against the loopback fake TPU API: a stopped node's old address, down's targets
that match nothing, a create operation's error naming its resource, zones checked before anything is created."""

from __future__ import annotations

import pytest

from factories import one_error_line
from onechip import api
from onechip.api import _cloud
from onechip.cloud import provision, records
from onechip.errors import CloudError
from onechip.schemas.cloud import CloudNameRequest, CloudUpRequest

P = "proj-1"
OK = "us-west4-a"


def up(**kw):
    return api.cloud_up(CloudUpRequest.model_validate({"project": P, "valid_until_s": "1s", "timeout_s": 5.0, **kw}))


@pytest.mark.parametrize("state", ["PREEMPTED", "STOPPED"])
def test_a_node_that_stopped_shows_no_ip_and_down_still_stops_the_engines_at_its_last(fast, monkeypatch, state):
    # was: `cloud status` of a preempted / stopped node still showed the external IP it had while READY (kept when the
    # API showed none, and shown whatever the node's state), an address released to the cloud and maybe another VM's
    record = up(zones=[OK], provisioning="spot", max_hours=1.0).resource
    assert record.external_ip == fast.external_ip
    node = fast.nodes[f"projects/{P}/locations/{OK}/nodes/{record.name}"]
    node["state"] = state
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert st.resource.external_ip is None and st.resource.last_external_ip == fast.external_ip
    (saved,) = records.load_all()  # status saved the record (ended_at stamped): the last address is kept in it
    assert saved.external_ip is None and saved.last_external_ip == fast.external_ip
    # an endpoint the API still lists on a node that is not READY is no current address either
    node["networkEndpoints"] = [{"ipAddress": "10.0.0.2", "accessConfig": {"externalIp": "198.51.100.7"}}]
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert st.resource.external_ip is None and st.resource.last_external_ip == fast.external_ip
    stopped: list[set[str]] = []
    monkeypatch.setattr(_cloud, "_stop_engines_on", lambda addresses, on_progress: stopped.append(addresses))
    api.cloud_down(CloudNameRequest(project=P))
    assert stopped == [{fast.external_ip}] and not fast.nodes  # the engines started there are stopped first


@pytest.mark.parametrize("provisioning", ["spot", "flex-start"])
def test_a_create_operations_error_names_the_resource_and_its_zone(fast, monkeypatch, provisioning):
    # was: 'projects/proj-1/locations/us-west4-a/operations/operation-1: An internal error ...': which TPU, and
    # where, was left to the user to guess; the operation's id is kept, after them
    real = fast._operation  # noqa: SLF001

    def failing(parent, done_at, error=None):
        creating = fast.requests[-1][0] == "POST"
        return real(parent, done_at, error or ({"code": 13, "message": "An internal error."} if creating else None))

    monkeypatch.setattr(fast, "_operation", failing)
    limit = {"max_hours": 1.0} if provisioning == "spot" else {}
    with pytest.raises(CloudError) as info:
        up(zones=[OK], provisioning=provisioning, **limit)
    kind = "node" if provisioning == "spot" else "queued-resource"
    said = str(info.value)
    assert said.startswith(f"create of {kind} onechip-v5e-1 in {OK} (operation operation-1): An internal error."), said
    assert "projects/" not in said.split(";")[0] and "\n" not in said
    monkeypatch.setattr(fast, "_operation", real)
    api.cloud_down(CloudNameRequest(project=P))
    assert not fast.nodes and not fast.queued and records.load_all() == []


@pytest.mark.parametrize("command", ["up", "probe"])
def test_a_zone_the_api_has_not_is_refused_before_anything_is_created(fast, run, command):
    # was: `cloud up --zone good,typo` (a good zone that stocks out) and `cloud probe --zone good,typo` created a TPU
    # in the good zone, billed, deleted it, and only then met the typo's 404 at its create
    fast.only_zones = True
    fast.zones[OK].spot = "stockout"
    limit = ("--max-hours", "1") if command == "up" else ()
    rc, out, err = run("cloud", command, "--project", P, "--zone", f"{OK},us-west4-z", "--provisioning", "spot",
                       *limit, "--yes")  # fmt: skip
    lines = [line for line in err.splitlines() if line.startswith("error")]
    assert rc == 7 and len(lines) == 1 and "zone 'us-west4-z' is not a Cloud TPU zone of project" in lines[0], err
    assert not [p for m, p, _ in fast.requests if m in ("POST", "DELETE")]  # nothing created (nor deleted)
    assert records.load_all() == []


def test_an_active_queued_resource_whose_node_was_preempted_is_said_not_to_run(fast, run):
    # was: `cloud status` of a queued resource still ACTIVE whose node the cloud preempted said 'ACTIVE', no warning,
    # 'billing ends <its run's end>' and $ growing, as for a TPU that runs
    record = up(zones=[OK], provisioning="flex-start").resource
    fast.nodes[f"projects/{P}/locations/{OK}/nodes/{record.node_id}"]["state"] = "PREEMPTED"
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert st.exists and st.resource.state == "ACTIVE" and st.resource.node_state == "PREEMPTED"
    assert st.deadline is None and st.resource.ended_at is not None and st.resource.external_ip is None
    assert st.warnings == [
        "ACTIVE, its node PREEMPTED: the cloud took its chips back (spot capacity); it does not run and will not run "
        "again, and its chips no longer bill (a disk or static address it holds does until it is deleted); delete it: "
        f"{provision.delete_command(record)}, and run `onechip cloud up` again for a new one"
    ]
    rc, out, err = run("cloud", "status", "--project", P)
    assert (
        rc == 0
        and f"onechip-v5e-1 (queued-resource) in {OK}: ACTIVE (node PREEMPTED), flex-start, no IP"
        in " ".join(out.split())
    ), out
    api.cloud_down(CloudNameRequest(project=P))
    assert not fast.nodes and not fast.queued and records.load_all() == []


def test_down_of_a_name_that_matches_nothing_names_it_and_those_that_exist(fast, run):
    # was: `cloud down --name typo --yes` printed 'nothing to delete: no resource onechip created matches' and exited
    # 0 while the TPU meant stayed up, billing; over MCP the preview said 'would delete nothing'
    up(zones=[OK], provisioning="spot", max_hours=1.0, name="mine")
    line = one_error_line(run, "cloud", "down", "--project", P, "--name", "mnie", "--yes")
    assert line == (f"--name mnie: nothing of onechip's is named so; nothing deleted; it has 1: mine ({OK}, project "
                    f"{P}) (`onechip cloud status`)")  # fmt: skip
    assert [r.name for r in records.load_all()] == ["mine"] and len(fast.nodes) == 1
    rc, out, err = run("cloud", "down", "--project", P, "--name", "mine", "--yes")
    assert rc == 0 and f"deleted node mine ({OK})" in out, err
    rc, out, err = run("cloud", "down", "--project", P, "--name", "mine", "--yes")  # run twice: nothing is left
    assert rc == 0 and "nothing to delete" in out, err
