"""Cloud round 64: what a bench's line and a status read from a CloudStatus's fields, not from its warnings' words; a
409 ALREADY_EXISTS met by whose TPU it is (the owner label onechip writes at create); scenarios of another fake API."""

from __future__ import annotations

import pytest
import test_cloud_qa62

from onechip import api
from onechip.api import _cloud
from onechip.cloud import provision, records
from onechip.engines import state as engine_state
from onechip.errors import CloudError, ConfigError
from onechip.schemas.boot import EngineState
from onechip.schemas.cloud import CloudNameRequest, CloudStatus, CloudUpRequest

P = "proj-1"
OK = "us-west4-a"
script = test_cloud_qa62.script  # the scripted fake API (another API than fakes.tpu_api), by its name
URL = "http://127.0.0.1:18123"  # the tunnel `cloud up --model` opens to the engine on the TPU


def _engine_on(ip: str) -> None:
    engine_state.save(EngineState(engine="vllm", pid=1, base_url=URL, model="m", started_at="2026-12-06T00:00:00Z",
                                  log_path="engine.log", mode="remote-process", host=f"onechip@{ip}"))  # fmt: skip


def _spot_up():
    return api.cloud_up(CloudUpRequest(project=P, zones=[OK], provisioning="spot", no_limit=True, timeout_s=5.0))


@pytest.mark.parametrize("how", ["preempted", "gone"])
def test_a_reworded_ended_or_gone_warning_does_not_change_what_a_bench_is_told(fast, monkeypatch, how):
    # tpu_ended_under found the ended TPU by the words 'will not run again' / 'gone:' in status's warnings: any
    # rewording of those lines hid it. The status knows it by its state (CloudStatus.ended), whatever the wording
    tpu = _spot_up().resource
    _engine_on(tpu.external_ip or "")
    path = f"projects/{P}/locations/{OK}/nodes/{tpu.node_id}"
    if how == "preempted":
        fast.nodes[path]["state"] = "PREEMPTED"
    else:
        fast.nodes.pop(path)
    reworded = "REWORDED: no longer serving"
    monkeypatch.setattr(provision, "ended_line", lambda *a, **k: reworded)
    monkeypatch.setattr(provision, "gone_line", lambda *a, **k: reworded, raising=False)
    said = _cloud.tpu_ended_under(URL)
    assert said == f"node {tpu.name} in {OK} {reworded}", said
    (st,) = _cloud.cloud_status(CloudNameRequest(project=P))
    assert st.ended == reworded and reworded in st.warnings


def test_a_running_tpu_has_no_ended_line_and_an_older_saved_status_still_loads(fast):
    tpu = _spot_up().resource
    (st,) = _cloud.cloud_status(CloudNameRequest(project=P))
    assert st.exists and st.ended is None and st.state_read
    old = st.model_dump(mode="json")
    del old["ended"], old["state_read"]  # a status saved (--json) before these fields
    loaded = CloudStatus.model_validate(old)
    assert loaded.ended is None and loaded.state_read
    api.cloud_down(CloudNameRequest(project=P))
    assert records.load_all() == [] and tpu.name


# --- a 409 ALREADY_EXISTS (or a name claim_name reads) for onechip's TPU of another onechip home


def _other_owners(script_or_fake_node: dict) -> dict:
    """`node` labelled as another onechip home's create labels it: created-by onechip, its own owner id."""
    labels = dict(script_or_fake_node.get("labels") or {}, **{records.OWNER_LABEL: "0123456789abcdef" * 2})
    return dict(script_or_fake_node, labels=labels)


def test_a_create_labels_the_tpu_with_this_homes_owner_id(fast):
    tpu = _spot_up().resource
    node = fast.nodes[f"projects/{P}/locations/{OK}/nodes/{tpu.node_id}"]
    # records.owner_id: this onechip home's id, one label value (GCP labels: lowercase letters, digits, - and _,
    # at most 63 characters: cloud.google.com/compute/docs/labeling-resources)
    owner = records.owner_id()
    assert node["labels"][records.OWNER_LABEL] == owner and records.owner_id() == owner
    assert len(owner) <= 63 and all(c in "0123456789abcdef" for c in owner)
    api.cloud_down(CloudNameRequest(project=P))


def test_a_create_answered_already_exists_for_another_homes_onechip_tpu_is_refused_not_resumed(script):
    # the label said only created-by onechip, so another user's onechip TPU of the same name in the project was
    # resumed as this run's (its engines started on it, its cost counted here, `down` deleting it)
    from test_cloud_scenarios63 import ALREADY, NODES, _node, _spot

    script.answers[("POST", NODES)] = [(409, ALREADY)]
    script.states[f"{NODES}/n"] = [_other_owners(_node("n"))]
    with pytest.raises(ConfigError) as info:
        provision.up(script.api, _spot("n"), lambda e: None)
    said = str(info.value)
    assert "another onechip" in said and "node n" in said and "\n" not in said, said
    assert records.load_all() == [] and not any(m == "DELETE" for m, _ in script.sent)  # never touched


def test_a_name_claim_name_reads_as_another_homes_onechip_tpu_is_refused_not_deleted(fast):
    # an ended one was deleted as ours 'so its name can be used again', a live one resumed
    fast.put("node", OK, "n", "PREEMPTED", spot=True)
    key = f"projects/{P}/locations/{OK}/nodes/n"
    fast.nodes[key] = _other_owners(fast.nodes[key])
    with pytest.raises(ConfigError) as info:
        api.cloud_up(CloudUpRequest(project=P, zones=[OK], name="n", provisioning="spot", no_limit=True))
    assert "another onechip" in str(info.value), info.value
    assert key in fast.nodes and not any(m == "DELETE" for m, _, _ in fast.requests)


# --- refusals whose words are in their details, not their message


def test_a_create_refused_429_with_a_quota_failure_names_the_quota(script):
    # google.rpc.QuotaFailure.Violation (googleapis google/rpc/error_details.proto): quotaMetric / quotaId name the
    # quota refused; the message here is RESOURCE_EXHAUSTED's stock text, which names none
    from test_cloud_qa62 import QR, Z, _flex

    metric = "tpu.googleapis.com/tpu_v5_lite_podslice_chips"
    quota = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                       "message": "Resource has been exhausted (e.g. check quota).", "details": [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
            "subject": "projects/123", "quotaMetric": metric, "quotaId": "TPUV5sLitepodPerProjectPerZone",
            "quotaDimensions": {"zone": Z}, "quotaValue": "4"}]}]}}  # fmt: skip
    script.answers[("POST", QR)] = [(429, quota)]
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    said = str(info.value)
    assert info.value.reason == "quota" and metric in said and "TPUV5sLitepodPerProjectPerZone" in said, said
    assert records.load_all() == [] and not any(m == "DELETE" for m, _ in script.sent)


def test_a_403_service_disabled_says_which_api_to_enable(script):
    # google.rpc.ErrorInfo reason SERVICE_DISABLED (google/api/error_reason.proto): metadata names the service and
    # its activationUrl; the message here does not
    from test_cloud_qa62 import QR, _flex

    url = "https://console.developers.google.com/apis/api/tpu.googleapis.com/overview?project=123"
    off = {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "The caller does not have permission",
                     "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED",
                                  "domain": "googleapis.com", "metadata": {
                                      "service": "tpu.googleapis.com", "consumer": "projects/123",
                                      "serviceTitle": "Cloud TPU API", "activationUrl": url}}]}}  # fmt: skip
    script.answers[("POST", QR)] = [(403, off)]
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    said = str(info.value)
    assert info.value.reason == "auth" and "tpu.googleapis.com" in said and url in said, said
    assert "gcloud services enable tpu.googleapis.com --project 123" in said, said
    assert records.load_all() == []


# --- a state enum value newer than this client


def test_a_state_this_client_does_not_know_is_said_once_as_unspecified_and_waited_on(script):
    # QR_PHASE / NODE_PHASE: a state outside the discovery document's enums counts as waiting, as STATE_UNSPECIFIED
    # does; it was waited on without a word, so a wait that then timed out said only 'still SOME_NEW_STATE'
    from test_cloud_qa62 import NODES, PARENT, QR, _flex, _op, _qr

    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr("ACCEPTED"), _qr("SOME_NEW_STATE"), _qr("SOME_NEW_STATE"), _qr("PROVISIONING"),
                                _qr("ACTIVE")]  # fmt: skip
    node = {"name": f"{PARENT}/nodes/q-node", "labels": {"created-by": "onechip"}, "acceleratorType": "v5litepod-1",
            "networkEndpoints": [{"accessConfig": {"externalIp": "203.0.113.7"}}]}  # fmt: skip
    script.states[f"{NODES}/q-node"] = [dict(node, state="OTHER_NEW_STATE"), dict(node, state="OTHER_NEW_STATE"),
                                        dict(node, state="READY")]  # fmt: skip
    lines: list[str] = []
    result = provision.up(script.api, _flex(), lambda e: lines.append(e.message))
    assert result.resource.state == "READY"
    for state in ("SOME_NEW_STATE", "OTHER_NEW_STATE"):
        said = [line for line in lines if f"{state!r} is not one onechip knows" in line]
        assert len(said) == 1 and "STATE_UNSPECIFIED" in said[0], lines  # once, not every poll
    assert not any(m == "DELETE" for m, _ in script.sent)


def test_status_warns_of_a_node_state_this_client_does_not_know(fast):
    tpu = _spot_up().resource
    fast.nodes[f"projects/{P}/locations/{OK}/nodes/{tpu.node_id}"]["state"] = "SOME_NEW_STATE"
    (st,) = _cloud.cloud_status(CloudNameRequest(project=P))
    assert st.ended is None and any("'SOME_NEW_STATE' is not one onechip knows" in w for w in st.warnings), st
    api.cloud_down(CloudNameRequest(project=P))


def test_an_operation_that_answers_404_past_its_grace_while_polled_names_what_to_delete(script):
    # the create's operation, named by the API, answers NOT_FOUND on every poll (its reads lag, or it was purged):
    # polled again for tpu_api.OPERATION_GRACE_S, then the queued resource itself is read (qa66: the TPU, not its
    # operation, is what bills); it answers 404 too past CREATE_GRACE_S: one line, and as it may exist it stays recorded
    from test_cloud_qa62 import QR, _flex, _op

    script.answers[("POST", QR)] = [(200, _op("op-1"))]  # not done; no `states` for it: every GET answers 404
    lines: list[str] = []
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: lines.append(e.message))
    said = str(info.value)
    polls = [p for m, p in script.sent if m == "GET" and p.endswith("/operations/op-1")]
    assert any("operation op-1" in line for line in lines), lines
    assert len(polls) > 1 and "does not have it" in said and "\n" not in said, (polls, said)
    (left,) = records.load_all()
    assert provision.delete_command(left) in said, said
