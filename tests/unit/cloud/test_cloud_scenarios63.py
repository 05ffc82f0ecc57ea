"""Scenarios a different fake API would run (test_cloud_qa62's scripted one): a queued resource whose state object
carries only `state`, operations done with neither `response` nor `error`, a list whose last page says
nextPageToken "", a create answered 409 ALREADY_EXISTS for a name onechip used before."""

from __future__ import annotations

import httpx
import pytest
import test_cloud_qa62
from test_cloud_qa62 import NODES, PARENT, QR, Z, _flex, _op, _qr

from onechip.cloud import provision, records
from onechip.cloud.tpu_api import TpuApi
from onechip.errors import CloudError, ConfigError
from onechip.schemas.cloud import CloudUpRequest

script = test_cloud_qa62.script  # the scripted fake API's fixture, found by its name here
P = "proj-1"
LABELS = {"created-by": "onechip"}


def _node(name: str, labels: dict | None = None, state: str = "READY") -> dict:
    return {"name": f"{PARENT}/nodes/{name}", "state": state, "labels": LABELS if labels is None else labels,
            "acceleratorType": "v5litepod-1", "health": "HEALTHY", "schedulingConfig": {"spot": True},
            "networkEndpoints": [{"accessConfig": {"externalIp": "203.0.113.9"}}]}  # fmt: skip


def _spot(name: str) -> CloudUpRequest:
    return CloudUpRequest.model_validate({"chip": "v5e-1", "project": P, "zones": [Z], "name": name,
                                          "provisioning": "spot", "no_limit": True})  # fmt: skip


def test_a_queued_resource_failed_with_only_its_state_is_deleted_and_said(script):
    # QueuedResourceState {"state": "FAILED"}: no stateInitiator, no failedData (proto3 omits what is unset)
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True))]
    script.states[f"{QR}/q"] = [_qr("ACCEPTED"), _qr("FAILED")]
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    assert info.value.reason == "failed" and "FAILED (no error given)" in str(info.value), info.value
    assert ("DELETE", f"{QR}/q") in script.sent and records.load_all() == []


def test_an_operation_done_with_neither_response_nor_error_is_a_success(script):
    # google.longrunning.Operation: `result` is a oneof (error | response), and an Empty-typed or unset response may be
    # left out: done true alone is a finished operation, never an error
    script.answers[("POST", NODES)] = [(200, _op("op-1"))]
    script.states[f"/v2alpha1/{PARENT}/operations/op-1"] = [_op("op-1"), _op("op-1", done=True)]
    script.states[f"/v2/{PARENT}/operations/op-1"] = [_op("op-1"), _op("op-1", done=True)]
    script.states[f"{NODES}/n"] = [_node("n", state="CREATING"), _node("n")]
    result = provision.up(script.api, _spot("n"), lambda e: None)
    assert result.resource.state == "READY" and result.resource.external_ip == "203.0.113.9"


def test_a_list_whose_last_page_says_an_empty_next_page_token_ends_there(script):
    pages = iter([{"nodes": [_node("a")], "nextPageToken": "t1"}, {"nodes": [_node("b")], "nextPageToken": ""}])
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.params.get("pageToken", ""))
        return httpx.Response(200, json=next(pages))

    with httpx.Client(transport=httpx.MockTransport(handler)) as http, TpuApi(P, http=http, poll_s=5) as api:
        assert [n["name"].rsplit("/", 1)[-1] for n in api.list_nodes(Z)] == ["a", "b"]
    assert seen == ["", "t1"]  # "" is the last page (ListNodesResponse.nextPageToken), never asked for


ALREADY = {"error": {"code": 409, "status": "ALREADY_EXISTS", "message": "node n already exists"}}


def test_a_create_answered_already_exists_for_onechips_own_live_tpu_resumes_it(script):
    # the name was used before (the API's list and get lag: claim_name read 404): AIP-133, a create whose id exists
    # answers ALREADY_EXISTS. Was: exit with 'run `onechip cloud up` again to resume it'; the TPU is onechip's
    # (labelled), of the chip and model asked, and READY: it is waited on and used, as claim_name would have
    script.answers[("POST", NODES)] = [(409, ALREADY)]
    script.states[f"{NODES}/n"] = [_node("n", state="CREATING"), _node("n")]
    lines: list[str] = []
    result = provision.up(script.api, _spot("n"), lambda e: lines.append(e.message))
    assert result.resource.state == "READY" and result.resource.external_ip == "203.0.113.9"
    assert [r.name for r in records.load_all()] == ["n"]  # recorded: it bills
    assert any("already has onechip's node" in line and "waiting on it" in line for line in lines), lines
    assert not any(m == "DELETE" for m, _ in script.sent)


def test_a_create_answered_already_exists_for_a_tpu_without_onechips_label_is_refused(script):
    script.answers[("POST", NODES)] = [(409, ALREADY)]
    script.states[f"{NODES}/n"] = [_node("n", labels={"team": "other"})]
    with pytest.raises(ConfigError) as info:
        provision.up(script.api, _spot("n"), lambda e: None)
    assert "onechip did not create; give another --name" in str(info.value), info.value
    assert records.load_all() == [] and not any(m == "DELETE" for m, _ in script.sent)  # never touched


def test_a_create_answered_already_exists_for_onechips_tpu_of_another_chip_is_refused_naming_it(script):
    script.answers[("POST", NODES)] = [(409, ALREADY)]
    script.states[f"{NODES}/n"] = [dict(_node("n"), acceleratorType="v5litepod-8")]
    with pytest.raises(ConfigError) as info:
        provision.up(script.api, _spot("n"), lambda e: None)
    said = str(info.value)
    assert "v5litepod-8" in said and "onechip cloud down --name n" in said, said  # what it is, how to delete it
    assert not any(m == "DELETE" for m, _ in script.sent)
