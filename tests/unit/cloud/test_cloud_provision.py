"""onechip.api's cloud jobs against the loopback fake TPU API: the three provisioning models, zone failover,
cleanup after failure, status with $ so far, down of labelled resources only, probe, Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from datetime import UTC, datetime, timedelta

import pytest

from onechip import api
from onechip.cloud import provision, records
from onechip.cloud.tpu_api import TpuApi
from onechip.errors import CloudError, ConfigError, Interrupted
from onechip.schemas.cloud import CloudNameRequest, CloudProbeRequest, CloudUpRequest, CloudZonesRequest

P = "proj-1"


def up(**kw):
    return api.cloud_up(CloudUpRequest.model_validate({"project": P, **kw}))


def creates(fake):
    return [(m, p, json.loads(b)) for m, p, b in fake.requests if m == "POST"]


def test_flex_start_is_a_queued_resource_with_max_run_duration(fake_api):
    result = up(zones=["us-west4-a"], max_run_duration_s="4h", valid_until_s="1h")
    ((method, path, body),) = creates(fake_api)
    assert path.startswith(
        f"/v2alpha1/projects/{P}/locations/us-west4-a/queuedResources?queuedResourceId=onechip-v5e-1"
    )
    assert body["provisioningModel"] == "FLEX_START"
    assert body["runDuration"] == {"maxRunDuration": "14400s"}
    assert body["queueingPolicy"] == {"validUntilDuration": "3600s"}
    node = body["tpu"]["nodeSpec"][0]["node"]
    assert node["acceleratorType"] == "v5litepod-1"  # v5e is v5litepod to the API (seed)
    assert node["runtimeVersion"] == "v2-alpha-tpuv5-lite"
    assert node["labels"] == {"created-by": "onechip", "onechip-owner": records.owner_id()}  # this home's id too
    r = result.resource
    assert (r.kind, r.state, r.external_ip, r.provisioning) == ("queued-resource", "READY", "127.0.0.1", "flex-start")
    assert result.quote.usd_per_hour == 0.6 and result.quote.stops_itself  # prices.json, us-west4 flex-start
    assert "onechip cloud down --name onechip-v5e-1 --zone us-west4-a" in result.delete_command


@pytest.mark.parametrize(("provisioning", "spot"), [("spot", True), ("on-demand", None)])
def test_spot_and_on_demand_are_v2_nodes(fake_api, provisioning, spot):
    result = up(zones=["us-west4-a"], provisioning=provisioning, max_hours=2)
    ((method, path, body),) = creates(fake_api)
    assert path.startswith(f"/v2/projects/{P}/locations/us-west4-a/nodes?nodeId=onechip-v5e-1")
    assert body.get("schedulingConfig", {}).get("spot") is spot
    assert result.resource.kind == "node" and result.resource.state == "READY"
    assert not result.quote.stops_itself


def test_zone_failover_reads_each_refusal(fake_api):
    result = up(zones=["europe-west4-a", "us-central1-b", "us-west4-a"], provisioning="spot", no_limit=True)
    outcomes = [(a.zone, a.outcome) for a in result.attempts]
    assert outcomes == [("europe-west4-a", "stockout"), ("us-central1-b", "quota"), ("us-west4-a", "available")]
    assert result.attempts[0].code == 8  # RESOURCE_EXHAUSTED, from the operation's error
    assert "no more capacity" in result.attempts[0].message
    assert "TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI" in result.attempts[1].message
    assert result.resource.zone == "us-west4-a"
    assert [r.zone for r in records.load_all()] == ["us-west4-a"]  # nothing left of the failed attempts


def test_flex_unsupported_then_expired_then_granted(fake_api):
    result = up(zones=["europe-west4-a", "us-central1-b", "us-west4-a"], valid_until_s="1s")
    assert [a.outcome for a in result.attempts] == ["unsupported", "expired", "available"]
    assert 'FLEX_START provisioning model is not supported for accelerator type "v5litepod-1"' in (
        result.attempts[0].message
    )
    assert result.attempts[1].elapsed_s >= 1.0  # it waited until valid-until, then gave up
    # the expired request was deleted: it stays in the queue otherwise (Google's docs)
    assert not [k for k in fake_api.queued if "us-central1-b" in k]


def test_every_zone_refusing_is_one_error_listing_them(fake_api):
    with pytest.raises(CloudError) as info:
        up(zones=["europe-west4-a"], valid_until_s="1s")
    assert info.value.reason == "unsupported"
    assert "europe-west4-a: unsupported" in str(info.value)
    assert records.load_all() == []


def test_cost_guard_spot_needs_max_hours_or_no_limit():
    with pytest.raises(ValueError, match="bills until deleted"):
        CloudUpRequest.model_validate({"provisioning": "spot"})
    with pytest.raises(ValueError, match="flex-start stops"):
        CloudUpRequest.model_validate({"max_hours": 2})
    with pytest.raises(ValueError, match="between 10m and 7d"):
        CloudUpRequest.model_validate({"max_run_duration_s": "8d"})


def test_up_resumes_a_labelled_resource_of_the_same_name(fake_api):
    first = up(zones=["us-west4-a"])
    again = up(zones=["us-west4-a"])
    assert again.reused and again.resource.name == first.resource.name
    assert len(creates(fake_api)) == 1


def test_status_gives_state_ip_elapsed_and_dollars(fake_api):
    up(zones=["us-west4-a"], provisioning="spot", max_hours=1)
    (record,) = records.load_all()
    record.granted_at = (datetime.now(UTC) - timedelta(hours=2)).isoformat(timespec="seconds")
    records.save(record)
    (st,) = api.cloud_status(CloudNameRequest())
    assert st.exists and st.resource.state == "READY" and st.resource.external_ip == "127.0.0.1"
    assert st.usd_so_far == pytest.approx(2 * 0.5779, rel=0.01)  # 2 h at the us-west4 spot price
    assert any("--max-hours 1 passed" in w for w in st.warnings)


def test_down_deletes_only_labelled_resources(fake_api):
    up(zones=["us-west4-a"])
    key = f"projects/{P}/locations/us-west4-a/nodes/someone-elses"
    fake_api.nodes[key] = {"name": key, "state": "READY", "acceleratorType": "v5litepod-1", "labels": {}}
    request = CloudNameRequest(project=P, zones=["us-west4-a"])
    targets = api.cloud_down_targets(request)
    assert [t.name for t in targets] == ["onechip-v5e-1"]
    result = api.cloud_down(request)
    assert result.deleted == ["queued-resource onechip-v5e-1 (us-west4-a)"]
    assert key in fake_api.nodes and len(fake_api.nodes) == 1  # the unlabelled node survives
    assert not fake_api.queued and records.load_all() == []
    deletes = [p for m, p, _ in fake_api.requests if m == "DELETE"]
    assert deletes == [f"/v2alpha1/projects/{P}/locations/us-west4-a/queuedResources/onechip-v5e-1?force=true"]


def test_down_waits_out_provisioning(fake_api):
    fake_api.wait_s, fake_api.provisioning_s = 0.0, 1.5
    # created directly (not through cloud_up, which waits for ACTIVE), to catch it in PROVISIONING
    tpu = TpuApi(P)
    req = CloudUpRequest(project=P, zones=["us-west4-a"])
    resource = provision.new_resource(tpu, req, "qr-prov", "us-west4-a")
    node = provision.node_body(resource, {})
    tpu.create_queued_resource("us-west4-a", "qr-prov", provision.queued_resource_body(resource, node, 60))
    records.save(resource)
    assert provision.state_of("queued-resource", tpu.get_queued_resource("us-west4-a", "qr-prov")) == "PROVISIONING"
    result = api.cloud_down(CloudNameRequest(name="qr-prov"))
    assert result.deleted == ["queued-resource qr-prov (us-west4-a)"]
    refused = [p for m, p, _ in fake_api.requests if m == "DELETE"]
    assert len(refused) >= 2  # the first delete met FAILED_PRECONDITION (PROVISIONING), a later one succeeded


def test_probe_tells_refusals_apart_and_records_them(fake_api):
    attempts = api.cloud_probe(
        CloudProbeRequest(project=P, zones=["us-west4-a", "europe-west4-a", "us-central1-b"], provisioning="spot")
    )
    assert [a.outcome for a in attempts] == ["available", "stockout", "quota"]
    assert not fake_api.nodes  # the probe node was deleted at once
    zones = api.cloud_zones(CloudZonesRequest(chip="v5e-1", provisioning="spot"))
    probed = {z.zone: z.outcome for z in zones if z.source == "onechip cloud probe"}
    assert probed == {"us-west4-a": "available", "europe-west4-a": "stockout", "us-central1-b": "quota"}
    assert zones[0].source == "onechip cloud probe"  # probes (newest) before the catalog's observations


def test_probe_flex_start_queued_is_not_capacity(fake_api):
    (attempt,) = api.cloud_probe(CloudProbeRequest(project=P, zones=["us-central1-b"], wait_s=0.5))
    assert attempt.outcome == "queued"
    assert not fake_api.queued


def test_zones_from_the_catalog_with_sources():
    zones = api.cloud_zones(CloudZonesRequest(chip="v5e-1", provisioning="flex-start"))
    by_zone = {z.zone: z for z in zones}
    assert by_zone["us-west4-a"].outcome == "available"
    assert by_zone["europe-west4-a"].outcome == "unsupported"
    assert all(z.source and z.date for z in zones)


def test_chip_is_taken_as_google_names_it_and_read_as_onechips_key():
    # the API's 'v5litepod-1' is v5e-1, as plan --chip reads it (planner.chips.google_tpu)
    assert api.cloud_zones(CloudZonesRequest(chip="v5litepod-1")) == api.cloud_zones(CloudZonesRequest(chip="v5e-1"))


def test_ctrl_c_while_waiting_names_what_exists(fake_api, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(provision, "wait_queued", interrupt)
    with pytest.raises(Interrupted) as info:
        up(zones=["us-west4-a"])
    message = str(info.value)
    assert "queued-resource onechip-v5e-1 exists in us-west4-a" in message
    assert "onechip cloud down --name onechip-v5e-1 --zone us-west4-a --project proj-1 --yes" in message
    assert [r.name for r in records.load_all()] == ["onechip-v5e-1"]  # recorded, so `down` finds it


def test_secret_comes_from_secret_manager_and_is_never_sent(fake_api):
    token = fake_api.secrets["hf-token"]
    up(zones=["us-west4-a"])
    assert TpuApi(P).access_secret("hf-token") == token
    assert token not in fake_api.sent_text()


def test_an_ssh_public_key_that_is_a_fifo_or_not_text_is_one_line(tmp_path):
    """cloud up --ssh-key K read K.pub with read_text: a FIFO waited for a writer without end, and bytes that are not
    UTF-8 were 'internal error (UnicodeDecodeError ...)'; a missing K.pub still means no ssh-keys metadata."""
    fifo, binary = tmp_path / "fifo", tmp_path / "binary"
    os.mkfifo(fifo.with_name("fifo.pub"))
    # a writer for whoever opens it, so a reader that reads it gets a key (and the test fails) instead of waiting
    writer = threading.Thread(target=_feed, args=(fifo.with_name("fifo.pub"), b"ssh-ed25519 AAAA me\n"), daemon=True)
    writer.start()
    binary.with_name("binary.pub").write_bytes(b"ssh-ed25519 \xff\xfe\n")
    for key, why in ((fifo, "not a regular file"), (binary, "not UTF-8 text")):
        with pytest.raises(ConfigError) as info:
            provision.ssh_keys_metadata("me", key)
        assert str(info.value) == f"{key}.pub is not an ssh public key ({why})"
    assert provision.ssh_keys_metadata("me", tmp_path / "absent") == {}
    if writer.is_alive():  # still waiting for a reader: one that opens without waiting lets it finish
        fd = os.open(fifo.with_name("fifo.pub"), os.O_RDONLY | os.O_NONBLOCK)
        writer.join(5)
        os.close(fd)


def _feed(path, data: bytes) -> None:
    with contextlib.suppress(OSError), path.open("wb") as sink:  # BrokenPipeError: the reader refused it
        sink.write(data)


def test_an_ssh_public_key_past_the_input_bound_is_one_line_and_not_read(tmp_path, monkeypatch):
    # K.pub was read whole, whatever its size, into the TPU's metadata (paths.read_regular bounds it)
    monkeypatch.setattr("onechip.paths.MAX_INPUT_BYTES", 1024)  # the bound, small enough to write here
    key = tmp_path / "id"
    key.with_name("id.pub").write_text("ssh-ed25519 " + "A" * 1013)  # 1,025 bytes
    with pytest.raises(ConfigError) as info:
        provision.ssh_keys_metadata("me", key)
    assert (
        str(info.value)
        == f"{key}.pub is not an ssh public key (larger than 1,024 bytes, more than any file onechip reads)"
    )


@pytest.mark.parametrize("provisioning", ["spot", "flex-start"])
def test_a_tpu_ready_since_up_was_stopped_bills_from_its_create_time_in_status_and_on_resume(fake_api, provisioning):
    # Before: `up` stopped before READY (Ctrl-C, its --timeout) left a record without granted_at; the TPU went READY
    # and billed, and `cloud status` said "$0.00 so far" (a flex-start one had no billing end); `cloud up` run again
    # resumed it and stamped it granted now, hours late (the --max-hours warning came late by as much)
    tpu = TpuApi(P)
    limit = {"max_run_duration_s": "8h"} if provisioning == "flex-start" else {"max_hours": 8}
    request = CloudUpRequest.model_validate({"project": P, "zones": ["us-west4-a"], "provisioning": provisioning,
                                             **limit})  # fmt: skip
    resource = provision.new_resource(tpu, request, "onechip-v5e-1", "us-west4-a")
    records.save(resource)  # as `up` records it before its create is sent
    kind = "queued-resource" if provisioning == "flex-start" else "node"
    fake_api.put(kind, "us-west4-a", "onechip-v5e-1", "ACTIVE" if kind == "queued-resource" else "READY",
                 spot=provisioning == "spot")  # fmt: skip
    three_h_ago = datetime.now(UTC) - timedelta(hours=3)
    node_id = f"projects/{P}/locations/us-west4-a/nodes/{resource.node_id}"
    fake_api.nodes[node_id]["createTime"] = three_h_ago.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    (st,) = api.cloud_status(CloudNameRequest())
    assert st.usd_so_far == pytest.approx(3 * resource.usd_per_hour, rel=0.01), st
    assert st.deadline is not None and datetime.fromisoformat(st.deadline) < datetime.now(UTC) + timedelta(hours=6)
    again = up(zones=["us-west4-a"], provisioning=provisioning, **limit)
    assert again.reused and again.resource.granted_at is not None
    granted = datetime.fromisoformat(again.resource.granted_at.replace("Z", "+00:00"))
    assert abs((granted - three_h_ago).total_seconds()) < 2
    (saved,) = records.load_all()
    assert saved.granted_at == again.resource.granted_at


def test_a_flex_start_run_suspended_says_whether_its_max_run_duration_ran_out():
    # Before: 'SUSPENDED: it will not run again' either way: a run the cloud ended early read as one that ran its term
    from onechip.schemas.cloud import CloudResource

    resource = CloudResource(name="q", kind="queued-resource", node_id="q-node", project="proj-1",
                             zone="us-west4-a", chip="v5e-1", accelerator_type="v5litepod-1", runtime_version="v",
                             provisioning="flex-start", created_at="2026-12-01T00:00:00+00:00",
                             state="SUSPENDED")  # fmt: skip
    end = datetime(2026, 12, 1, 4, tzinfo=UTC)
    assert provision.ended_line(resource, end, end + timedelta(seconds=1)).startswith(
        "SUSPENDED: its run ended and its TPU was deleted (its max run duration ran out at 2026-12-01T04:00:00+00:00); "
        "it does not run and will not run again, and nothing of it bills; delete it: onechip cloud down --name q "
    )
    assert "(before its max run duration, due 2026-12-01T04:00:00+00:00)" in provision.ended_line(
        resource, end, end - timedelta(hours=1)
    )
    failed = resource.model_copy(update={"state": "FAILED"})
    assert provision.ended_line(failed).startswith("FAILED: the request was never fulfilled: nothing was granted; it ")
