"""QA pass 66 on the cloud layer against scenarios another fake API may run (the scripted fake of test_cloud_qa62).
Each response is shaped as Google's REST reference gives it, cited beside it:
  Operation      google.longrunning.Operation: name, metadata, done, oneof result {error: google.rpc.Status, response}
                 (cloud.google.com/tpu/docs/reference/rest/v2/projects.locations.operations#Operation)
  QueuedResource tpu.nodeSpec[] {parent, nodeId | multisliceParams, node}, state {state, stateInitiator, failedData}
                 (cloud.google.com/tpu/docs/reference/rest/v2alpha1/projects.locations.queuedResources)
  Node           name, state, health, networkEndpoints[].accessConfig.externalIp, labels, schedulingConfig
                 (cloud.google.com/tpu/docs/reference/rest/v2/projects.locations.nodes)
  errors         {"error": {code, message, status, details[]}} with google.rpc.ErrorInfo / QuotaFailure / RetryInfo
                 (cloud.google.com/apis/design/errors)."""

from __future__ import annotations

import pytest
import test_cloud_qa62
from test_cloud_qa62 import NODES, PARENT, QR, Z, _flex, _op, _qr

from onechip.cloud import provision, records
from onechip.cloud.refusals import from_http, from_status
from onechip.errors import CloudError

script = test_cloud_qa62.script  # the scripted fake API's fixture, found by its name here
P = "proj-1"
LABELS = {"created-by": "onechip"}


def _ready_node(node_id: str, ip: str = "203.0.113.7") -> dict:
    return {"name": f"{PARENT}/nodes/{node_id}", "state": "READY", "labels": LABELS, "health": "HEALTHY",
            "acceleratorType": "v5litepod-1",
            "networkEndpoints": [{"ipAddress": "10.0.0.2", "accessConfig": {"externalIp": ip}}]}  # fmt: skip


def test_a_queued_resource_whose_node_the_api_names_otherwise_is_waited_on_under_the_apis_name(script):
    # QueuedResource.tpu.nodeSpec[].nodeId: 'The unqualified resource name' of the node it makes (v2alpha1
    # NodeSpec; google.cloud.tpu_v2.types.QueuedResource.Tpu.NodeSpec); the API's copy names the node it made, and
    # that node is the one that bills. Was: only '<name>-node' polled, 404 for CREATE_GRACE_S, then the granted
    # queued resource deleted as 'ended' and the next zone tried
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    granted = _qr("ACTIVE")
    granted["tpu"]["nodeSpec"][0]["nodeId"] = "q-node-7f3a"
    script.states[f"{QR}/q"] = [_qr("WAITING_FOR_RESOURCES"), _qr("PROVISIONING"), granted]
    script.made.add(f"{NODES}/q-node-7f3a")
    script.states[f"{NODES}/q-node-7f3a"] = [_ready_node("q-node-7f3a")]
    result = provision.up(script.api, _flex(), lambda e: None)
    assert result.resource.state == "READY" and result.resource.external_ip == "203.0.113.7", result.resource
    assert result.resource.node_id == "q-node-7f3a"
    (kept,) = records.load_all()
    assert kept.node_id == "q-node-7f3a"  # recorded under the API's name: status and down find it
    assert not any(m == "DELETE" for m, _ in script.sent)


Z2 = "us-west4-b"
PARENT2 = f"projects/{P}/locations/{Z2}"
NODES2 = f"/v2/{PARENT2}/nodes"


def _spot(zones: list[str]):
    from onechip.schemas.cloud import CloudUpRequest

    return CloudUpRequest.model_validate({"chip": "v5e-1", "project": P, "zones": zones, "name": "n",
                                          "provisioning": "spot", "no_limit": True})  # fmt: skip


def test_a_create_operation_not_done_three_times_then_done_with_a_stockout_error_moves_to_the_next_zone(script):
    # Operation.done false (omitted: proto3) three polls, then done with error {code 8, message, details}: the zone's
    # capacity (google.rpc.Code RESOURCE_EXHAUSTED; Compute Engine's ErrorInfo reason ZONE_RESOURCE_POOL_EXHAUSTED,
    # cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability); what it left is deleted
    ops = f"/v2/{PARENT}/operations/op-1"
    error = {"code": 8, "message": "The zone does not have enough resources available to fulfill the request.",
             "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "ZONE_RESOURCE_POOL_EXHAUSTED",
                          "domain": "tpu.googleapis.com"}]}  # fmt: skip
    script.answers[("POST", NODES)] = [(200, _op("op-1"))]
    script.states[ops] = [_op("op-1"), _op("op-1"), _op("op-1"), _op("op-1", done=True, error=error)]
    script.states[f"{NODES}/n"] = [None]
    script.answers[("POST", NODES2)] = [(200, _op("op-2", done=True, response={}))]
    script.states[f"{NODES2}/n"] = [dict(_ready_node("n"), name=f"{PARENT2}/nodes/n")]
    lines: list[str] = []
    result = provision.up(script.api, _spot([Z, Z2]), lambda e: lines.append(e.message))
    assert result.resource.zone == Z2 and result.resource.state == "READY", result
    assert [a.outcome for a in result.attempts] == ["stockout", "available"], result.attempts
    assert [r.zone for r in records.load_all()] == [Z2]  # the refused zone's record is gone, the granted one kept


def test_a_create_refused_429_zone_resource_pool_exhausted_without_retry_after_moves_to_the_next_zone(script):
    # HTTP 429 RESOURCE_EXHAUSTED is 'either out of resource quota or reaching rate limiting' (cloud.google.com/apis/
    # design/errors); an ErrorInfo reason ZONE_RESOURCE_POOL_EXHAUSTED says it is the zone's capacity: a stockout,
    # not a rate limit to send again (no Retry-After is given)
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Resource has been exhausted (e.g. "
            "check quota).", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason":
            "ZONE_RESOURCE_POOL_EXHAUSTED", "domain": "tpu.googleapis.com"}]}}  # fmt: skip
    script.answers[("POST", NODES)] = [(429, body)]
    script.answers[("POST", NODES2)] = [(200, _op("op-2", done=True, response={}))]
    script.states[f"{NODES2}/n"] = [dict(_ready_node("n"), name=f"{PARENT2}/nodes/n")]
    result = provision.up(script.api, _spot([Z, Z2]), lambda e: None)
    assert [a.outcome for a in result.attempts] == ["stockout", "available"], result.attempts
    assert sum(1 for m, p in script.sent if (m, p) == ("POST", NODES)) == 1  # not sent again to the stocked-out zone


def test_a_403_with_a_quota_metric_in_its_details_is_quota_named_and_the_next_zone_tried(script):
    # Compute-style 403 whose google.rpc.QuotaFailure violation names the metric (QuotaFailure.Violation: subject,
    # description, and quotaMetric / quotaId in newer APIs: googleapis google/rpc/error_details.proto)
    body = {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "Quota exceeded.", "details": [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"subject": "project:proj-1",
         "quotaMetric": "tpu.googleapis.com/preemptible_v5e_litepod", "quotaId":
         "TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI", "description": "limit 0"}]}]}}  # fmt: skip
    script.answers[("POST", NODES)] = [(403, body)]
    script.answers[("POST", NODES2)] = [(200, _op("op-2", done=True, response={}))]
    script.states[f"{NODES2}/n"] = [dict(_ready_node("n"), name=f"{PARENT2}/nodes/n")]
    result = provision.up(script.api, _spot([Z, Z2]), lambda e: None)
    (refused, got) = result.attempts
    assert refused.outcome == "quota" and "TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI" in refused.message
    assert got.outcome == "available"


def test_a_delete_whose_operation_answers_404_once_done_forgets_the_record_when_the_tpu_is_gone(script):
    # operations.get NOT_FOUND: an operation the API no longer keeps; the node itself answers 404 (gone): deleted
    from onechip.schemas.cloud import CloudResource

    resource = CloudResource(name="n", kind="node", node_id="n", project=P, zone=Z, chip="v5e-1",
                             accelerator_type="v5litepod-1", runtime_version="v2-alpha-tpuv5-lite",
                             provisioning="spot", created_at="2026-12-07T00:00:00+00:00")  # fmt: skip
    records.save(resource)
    script.answers[("DELETE", f"{NODES}/n")] = [(200, _op("op-9"))]  # not done; its GET answers 404 (no states)
    provision.delete(script.api, resource)
    assert records.load_all() == []


def test_a_queued_resource_deleted_by_someone_else_while_it_waits_is_said_so_and_not_left_recorded(script):
    # WAITING_FOR_RESOURCES for minutes, then NOT_FOUND: someone else deleted it. It cannot bill; the line says what
    # happened, and the next zone (none here) may be tried, as for a node that went away
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr("WAITING_FOR_RESOURCES")] * 40 + [None]
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    said = str(info.value)
    assert "after its create" not in said, said  # it was there: seen WAITING_FOR_RESOURCES
    assert "no longer has it" in said, said
    assert records.load_all() == []  # nothing left that bills, nothing left recorded


def test_a_create_whose_operation_answers_404_is_read_by_its_tpu_and_the_ready_node_used(script):
    # operations.get NOT_FOUND past the grace (an operation the API no longer keeps, or never shows): what was asked
    # is the node, which the API has and is READY. Was: `up` stopped 'may exist' with a TPU that billed and worked
    script.answers[("POST", NODES)] = [(200, _op("op-1"))]  # not done; operations/op-1 answers 404 (no states)
    script.states[f"{NODES}/n"] = [dict(_ready_node("n"), state="CREATING"), _ready_node("n")]
    lines: list[str] = []
    result = provision.up(script.api, _spot([Z]), lambda e: lines.append(e.message))
    assert result.resource.state == "READY" and result.resource.external_ip == "203.0.113.7", result.resource
    assert [r.name for r in records.load_all()] == ["n"]
    assert any("op-1" in line and "reading the node itself" in line for line in lines), lines


def test_status_of_a_granted_queued_resource_reads_its_node_under_the_apis_name(script):
    # a record from before the API named the node otherwise (or from another onechip): status reads the node the
    # queued resource's nodeSpec names, its address and health, not '<name>-node' (404: 'no IP', as if not granted)
    from onechip.schemas.cloud import CloudResource

    resource = CloudResource(name="q", kind="queued-resource", node_id="q-node", project=P, zone=Z, chip="v5e-1",
                             accelerator_type="v5litepod-1", runtime_version="v2-alpha-tpuv5-lite",
                             provisioning="flex-start", created_at="2026-12-07T00:00:00+00:00",
                             max_run_duration_s=14400)  # fmt: skip
    records.save(resource)
    script.made |= {f"{QR}/q", f"{NODES}/q-node-7f3a"}
    granted = _qr("ACTIVE")
    granted["tpu"]["nodeSpec"][0]["nodeId"] = "q-node-7f3a"
    script.states[f"{QR}/q"] = [granted]
    script.states[f"{NODES}/q-node-7f3a"] = [_ready_node("q-node-7f3a", ip="203.0.113.8")]
    seen = provision.status(script.api, resource)
    assert seen.resource.external_ip == "203.0.113.8" and seen.resource.node_id == "q-node-7f3a", seen.resource


def test_a_refusal_with_a_quota_reason_beside_a_capacity_one_stays_quota() -> None:
    # qa66b: ae34b7af reads a capacity reason under a 'quota' message as a stockout when no QuotaFailure detail names
    # the quota, for RESOURCE_EXHAUSTED's stock text ('Resource has been exhausted (e.g. check quota).'); an error
    # that also gives a quota reason (QUOTA_REASONS: a Compute Engine operation's errors[].code QUOTA_EXCEEDED, the
    # reason from_status already reads as quota whatever the wording) was said as a stockout: the quota to raise told
    # as the zone's capacity to wait for
    error = {"code": 8, "message": "Quota 'TPUS_PER_TPU_FAMILY' exceeded. Limit: 8.0 in region us-central1.",
             "errors": [{"code": "QUOTA_EXCEEDED"}, {"code": "ZONE_RESOURCE_POOL_EXHAUSTED"}]}  # fmt: skip
    assert from_status(error, "create").reason == "quota"
    info = "type.googleapis.com/google.rpc.ErrorInfo"
    details = [{"@type": info, "reason": reason, "domain": "tpu.googleapis.com"}
               for reason in ("ZONE_RESOURCE_POOL_EXHAUSTED", "QUOTA_EXCEEDED")]  # fmt: skip
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": details,
                      "message": "Resource has been exhausted (e.g. check quota)."}}  # fmt: skip
    assert from_http(429, body, "create").reason == "quota"
    # the capacity reason alone under the stock text stays a stockout (ae34b7af's case)
    alone = {**body["error"], "details": body["error"]["details"][:1]}
    assert from_http(429, {"error": alone}, "create").reason == "stockout"
