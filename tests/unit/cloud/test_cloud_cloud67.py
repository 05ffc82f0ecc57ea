"""Cloud pass 67 against scenarios another fake API may run (the scripted fake of test_cloud_qa62): a queued resource
deleted by someone else while `up` waits on it, a create's operation the API no longer has, and multislice queued
resources (QueuedResource.tpu.nodeSpec[].multiNodeParams), which onechip never creates but may list."""

from __future__ import annotations

import pytest
import test_cloud_qa62
from test_cloud_qa62 import NODES, PARENT, QR, Z, _flex, _op, _qr

from onechip.cloud import provision, records, tpu_api
from onechip.errors import CloudError, ConfigError
from onechip.schemas.cloud import CloudNameRequest

script = test_cloud_qa62.script  # the scripted fake API's fixture, found by its name here
P = "proj-1"
Z2 = "us-west4-b"
QR2 = f"/v2alpha1/projects/{P}/locations/{Z2}/queuedResources"
LABELS = {"created-by": "onechip"}


def _ready_node(node_id: str) -> dict:
    return {"name": f"{PARENT}/nodes/{node_id}", "state": "READY", "labels": LABELS, "health": "HEALTHY",
            "acceleratorType": "v5litepod-1",
            "networkEndpoints": [{"ipAddress": "10.0.0.2", "accessConfig": {"externalIp": "203.0.113.7"}}]}  # fmt: skip


# --- a queued resource deleted by someone else while `up` waits


def test_a_queued_resource_deleted_outside_while_waited_on_stops_up_and_tries_no_other_zone(script):
    # the user (console, gcloud) or another tool deleted the request on purpose: moving on to the next zone created
    # a second request, billing once granted, that nobody wanted
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr("ACCEPTED"), _qr("WAITING_FOR_RESOURCES"), None]  # None: 404, deleted
    request = _flex().model_copy(update={"zones": [Z, Z2]})
    with pytest.raises(CloudError) as info:
        provision.up(script.api, request, lambda e: None)
    said = str(info.value)
    assert info.value.reason not in provision.FAILOVER and "\n" not in said, said
    assert "deleted outside this run" in said and "no other zone was tried" in said, said
    assert not any(m == "POST" and p.startswith(QR2) for m, p in script.sent), script.sent  # no second request
    assert records.load_all() == []  # the API has nothing of it: no record is left to bill in status


def test_up_cli_says_a_deleted_queued_resource_in_one_line(script, run, monkeypatch):
    from onechip.api import _cloud

    monkeypatch.setattr(_cloud, "TpuApi", lambda *a, **kw: script.api)  # the CLI on the scripted fake
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr("WAITING_FOR_RESOURCES"), None]
    rc, out, err = run("cloud", "up", "--project", P, "--zone", f"{Z},{Z2}", "--name", "q", "--provisioning",
                       "flex-start", "--yes")  # fmt: skip
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 7 and len(errors) == 1 and "deleted outside this run" in errors[0], (rc, out, err)
    assert "Traceback" not in err


def test_a_spot_node_deleted_outside_while_waited_on_stops_up_too(script):
    from test_cloud_qa66 import _spot

    script.answers[("POST", NODES)] = [(200, _op("op-1", done=True, response={}))]
    creating = dict(_ready_node("n"), state="CREATING")
    script.states[f"{NODES}/n"] = [creating, None]
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _spot([Z, Z2]), lambda e: None)
    assert info.value.reason == "deleted" and "deleted outside this run while CREATING" in str(info.value)
    assert not any(m == "POST" and Z2 in p for m, p in script.sent) and records.load_all() == []


# --- a create's operation the API no longer has


def test_a_create_whose_operation_answers_404_reads_the_queued_resource_at_once(script):
    # the operation gone (purged, or never readable) while the queued resource is there: its 60-s grace was waited
    # in full before the queued resource, which says the rest, was read
    script.answers[("POST", QR)] = [(200, _op("op-1"))]  # not done; its GETs answer 404 (no `states` for it)
    script.states[f"{QR}/q"] = [_qr("WAITING_FOR_RESOURCES"), _qr("ACTIVE")]
    script.states[f"{NODES}/q-node"] = [_ready_node("q-node")]
    started = provision.time.monotonic()  # the scripted fake's SleepClock
    lines: list[str] = []
    result = provision.up(script.api, _flex(), lambda e: lines.append(e.message))
    assert result.resource.state == "READY"
    polls = [k for k, (m, p) in enumerate(script.sent) if m == "GET" and p.endswith("/operations/op-1")]
    assert len(polls) == 1 and script.sent[polls[0] + 1] == ("GET", f"{QR}/q"), script.sent  # one 404, the TPU read
    assert provision.time.monotonic() - started < tpu_api.OPERATION_GRACE_S, lines
    assert any("no longer has the create's operation" in line for line in lines), lines


def test_an_operation_404_whose_resource_is_not_there_either_keeps_its_grace(script):
    # neither readable: only the operation can say a stockout that made nothing (a flex-start create whose operation
    # ends with code 8, issue 25), so it is polled on for its grace, and its error moves to the next zone
    stockout = {"code": 8, "message": test_cloud_qa62.STOCKOUT}
    script.answers[("POST", QR)] = [(200, _op("op-1"))]
    script.answers[("GET", f"/v2alpha1/{PARENT}/operations/op-1")] = [
        (404, {"error": {"code": 404, "status": "NOT_FOUND", "message": "operation not found"}}),
        (200, _op("op-1", done=True, error=stockout)),
    ]
    script.states[f"{QR}/q"] = [None]
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    assert info.value.reason == "stockout", info.value


def test_a_delete_whose_operation_answers_404_is_done_once_its_tpu_is_gone(script):
    # the same for a delete's operation: its grace was waited in full though the node it deletes was already gone
    script.made.add(f"{NODES}/n")
    script.states[f"{NODES}/n"] = [None]
    script.answers[("DELETE", f"{NODES}/n")] = [(200, _op("del-1"))]  # not done; its GETs answer 404
    node = provision._from_api(script.api, Z, _ready_node("n"), "node")
    started = provision.time.monotonic()
    provision.delete(script.api, node)
    assert provision.time.monotonic() - started < tpu_api.OPERATION_GRACE_S


# --- multislice queued resources (nodeSpec[].multiNodeParams)


def _multislice(state: str = "ACTIVE", prefix: str | None = "ms") -> dict:
    # QueuedResource.Tpu.NodeSpec.MultiNodeParams (v2alpha1; cloud.google.com/python/docs/reference/tpu/latest/
    # google.cloud.tpu_v2alpha1.types.QueuedResource.Tpu.NodeSpec.MultiNodeParams): 'node_count = 3 and
    # node_id_prefix = "np": node ids of nodes created will be "np-0", "np-1", "np-2"'; without a prefix, the
    # queued resource's id. No nodeId then ('an error to specify both node_id and multi_node_params')
    params = {"nodeCount": 2, **({"nodeIdPrefix": prefix} if prefix else {})}
    body = _qr(state)
    body["tpu"]["nodeSpec"][0].pop("nodeId")
    body["tpu"]["nodeSpec"][0]["multiNodeParams"] = params
    return body


@pytest.mark.parametrize(("prefix", "nodes"), [("ms", ["ms-0", "ms-1"]), (None, ["q-0", "q-1"])])
def test_qr_node_ids_reads_a_multislice_requests_nodes(prefix, nodes):
    assert provision.qr_node_ids(_multislice(prefix=prefix)) == nodes
    assert provision.qr_node_ids(_qr("ACTIVE")) == ["q-node"]


def test_down_by_zone_deletes_a_multislice_queued_resource_not_its_nodes_apart(script):
    # its nodes (labelled as its node spec is) were listed as nodes of their own: each deleted apart, beside the
    # queued resource whose forced delete deletes them
    listing = {"queuedResources": [dict(_multislice(), name=f"{PARENT}/queuedResources/q")]}
    nodes = {"nodes": [_ready_node("ms-0"), _ready_node("ms-1")]}
    script.answers[("GET", QR)] = [(200, listing)]
    script.answers[("GET", NODES)] = [(200, nodes)]
    chosen = provision.targets(script.api, CloudNameRequest(project=P, zones=[Z]), [])
    assert [(r.kind, r.name) for r in chosen] == [("queued-resource", "q")], chosen


def test_up_does_not_resume_a_multislice_queued_resource_under_its_name(script):
    # onechip makes one-node requests only: a multislice one labelled onechip's under the name asked (copied labels,
    # or made by hand) was resumed as the one chip asked for
    script.made.add(f"{QR}/q")
    script.states[f"{QR}/q"] = [_multislice("ACTIVE")]
    with pytest.raises(ConfigError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    said = str(info.value)
    assert "multislice" in said and "2 nodes" in said and "\n" not in said, said
    assert not any(m in ("POST", "DELETE") for m, _ in script.sent), script.sent


def test_status_of_a_multislice_queued_resource_names_its_nodes(script):
    script.made.add(f"{QR}/q")
    script.states[f"{QR}/q"] = [_multislice("ACTIVE")]
    (found,) = provision.targets(script.api, CloudNameRequest(project=P, zones=[Z]), [
        provision._from_api(script.api, Z, _multislice("ACTIVE"), "queued-resource")])  # fmt: skip
    st = provision.status(script.api, found)
    assert any("multislice" in w and "ms-0, ms-1" in w for w in st.warnings), st.warnings


# --- a queued resource suspended (spot preemption, its run ended) while `up` waits on its node


def test_a_queued_resource_suspended_while_its_node_is_waited_on_is_said_at_once(script):
    # ACTIVE, then SUSPENDING / SUSPENDED (QueuedResourceState: 'the resources ... have been deleted') with its node
    # gone: the node's 404 was waited CREATE_GRACE_S (60 s) as a create's lag, then said 'node q-node is gone'
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr("WAITING_FOR_RESOURCES"), _qr("ACTIVE"), _qr("SUSPENDED")]
    node = {"name": f"{PARENT}/nodes/q-node", "state": "CREATING", "labels": LABELS}
    script.states[f"{NODES}/q-node"] = [node, None]
    started = provision.time.monotonic()
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    said = str(info.value)
    assert info.value.reason == "ended" and "SUSPENDED" in said and "\n" not in said, said
    assert provision.time.monotonic() - started < provision.CREATE_GRACE_S, said
    assert ("DELETE", f"{QR}/q") in script.sent and records.load_all() == []  # deleted, as any ended attempt


@pytest.mark.parametrize(
    ("count", "nodes"), [("0", []), ("-1", []), ("²", []), (1.5, []), ("3", ["ms-0", "ms-1", "ms-2"])]
)
def test_qr_node_ids_reads_only_a_whole_node_count(count, nodes):
    # qa67a: '²' is a digit to str.isdigit but no number to int(), which raised ValueError out of status and down
    body = _multislice()
    body["tpu"]["nodeSpec"][0]["multiNodeParams"]["nodeCount"] = count
    assert provision.qr_node_ids(body) == nodes
