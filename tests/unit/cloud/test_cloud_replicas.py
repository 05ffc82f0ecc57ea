"""`onechip cloud up --replicas N` against the loopback fake TPU API (issue 23): N one-chip TPUs (or one slice),
each got as `cloud up` gets one (provisioning models, zone failover), priced for every chip before anything
is created; `cloud status` lists each; `cloud down` deletes all of them and only ours. A set that cannot be
completed (TPU 2 of 3 stocked out) or is interrupted between creates leaves nothing billing that onechip does
not record, and says so in one line."""

from __future__ import annotations

import pytest
import test_cloud_failures as failures
from test_cloud_failures import FOREIGN, OK, P, assert_tracked_then_down, ours

from fakes.tpu_api import Zone
from onechip import api
from onechip.cloud import provision, records
from onechip.errors import CloudError, ConfigError, Interrupted
from onechip.progress import ProgressEvent
from onechip.schemas.cloud import CloudNameRequest, CloudUpRequest

fast = failures.fast  # the fake at its quickest, a foreign node beside ours
SPOT = ["--provisioning", "spot", "--max-hours", "1"]
SPARE = "asia-east1-c"  # a zone of the fake with no rule: grants everything (OK holds the foreign node)


def up(on_progress=None, **kw):
    request = CloudUpRequest.model_validate({"project": P, "valid_until_s": "1s", "timeout_s": 1.0, **kw})
    return api.cloud_up(request, on_progress) if on_progress else api.cloud_up(request)


def creates(fake) -> list[str]:
    return [p for m, p, _ in fake.requests if m == "POST"]


def test_up_replicas_2_status_and_down_delete_both_tpus(fast, run):
    rc, out, err = run("cloud", "up", "--project", P, "--zone", SPARE, *SPOT, "--replicas", "2", "--yes")
    assert rc == 0, err
    # priced for both chips before anything was created: prices.json v5e-1 spot $0.5779/chip-hour (seed article)
    assert "will create 2 x v5e-1 spot: $1.1558/h (2 chips x $0.5779/chip-hour)" in out
    text = " ".join(out.split())
    assert "ready node onechip-v5e-1-0 in asia-east1-c" in text and "ready node onechip-v5e-1-1 in asia-east1-c" in text
    assert "delete them: onechip cloud down --name onechip-v5e-1 --project proj-1 --yes" in text
    assert ours(fast) == {(SPARE, "node", "onechip-v5e-1-0"), (SPARE, "node", "onechip-v5e-1-1")}
    for key in (f"projects/{P}/locations/{SPARE}/nodes/onechip-v5e-1-{k}" for k in range(2)):
        assert fast.nodes[key]["labels"] == {"created-by": "onechip", "onechip-replica-set": "onechip-v5e-1",
                                             "onechip-owner": records.owner_id()}  # fmt: skip
        assert fast.nodes[key]["schedulingConfig"] == {"spot": True}
    rc, out, err = run("cloud", "status")
    text = " ".join(out.split())
    assert rc == 0 and "onechip-v5e-1-0 (node, replica 0 of set onechip-v5e-1) in asia-east1-c: READY" in text
    assert "onechip-v5e-1-1 (node, replica 1 of set onechip-v5e-1) in asia-east1-c: READY" in text
    rc, out, err = run("cloud", "down", "--name", "onechip-v5e-1", "--yes")  # the set's name: every TPU of it
    assert rc == 0, err
    assert out.count("deleted node onechip-v5e-1-") == 2
    assert ours(fast) == set() and FOREIGN in fast.nodes and records.load_all() == []


def test_flex_start_replicas_each_fail_over_and_are_queued_resources(fast):
    result = up(zones=["europe-west4-a", OK], replicas=2)  # europe-west4-a: FLEX_START unsupported for v5e-1
    assert [(r.name, r.kind, r.zone, r.state) for r in result.resources] == [
        ("onechip-v5e-1-0", "queued-resource", OK, "READY"), ("onechip-v5e-1-1", "queued-resource", OK, "READY")
    ]  # fmt: skip
    assert [(a.zone, a.outcome) for a in result.attempts] == [("europe-west4-a", "unsupported"), (OK, "available")] * 2
    assert result.quote.chips == 2 and result.quote.stops_itself
    assert result.resource == result.resources[0]
    assert_tracked_then_down(fast)


def test_a_set_that_stocks_out_at_tpu_2_of_3_is_deleted_and_said_in_one_line(fast):
    fast.zones[SPARE] = Zone(capacity=1)  # the zone grants one TPU, then answers the real stockout (code 8)
    with pytest.raises(CloudError) as info:
        up(zones=[SPARE], provisioning="spot", max_hours=1.0, replicas=3)
    said = str(info.value)
    assert "\n" not in said and info.value.reason == "stockout"
    assert said.startswith("cloud up --replicas: onechip-v5e-1-1 failed: no zone gave v5e-1 spot")
    assert said.endswith("deleted the 1 TPU(s) of the set already granted (onechip-v5e-1-0)")
    assert len(creates(fast)) == 2  # the third was never asked for
    assert ours(fast) == set() and records.load_all() == []  # nothing of the set bills, nothing recorded is left


def test_a_stockout_in_one_zone_moves_the_rest_of_the_set_on(fast):
    fast.zones[SPARE] = Zone(capacity=1)
    result = up(zones=[SPARE, "us-east5-b"], provisioning="on-demand", no_limit=True, replicas=3)
    assert [r.zone for r in result.resources] == [SPARE, "us-east5-b", "us-east5-b"]
    assert [a.outcome for a in result.attempts] == ["available", "stockout", "available", "stockout", "available"]
    assert_tracked_then_down(fast)


def test_ctrl_c_between_creates_names_the_set_and_up_again_creates_only_the_rest(fast):
    def ctrl_c_before_the_second(event: ProgressEvent) -> None:
        if event.message == "TPU 2 of 2: onechip-v5e-1-1":
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as info:
        up(ctrl_c_before_the_second, zones=[SPARE], provisioning="spot", max_hours=1.0, replicas=2)
    said = str(info.value)
    assert "\n" not in said
    assert said == ("interrupted: 1 TPU(s) of the set onechip-v5e-1 exist: node onechip-v5e-1-0 in asia-east1-c "
                    "(READY); they bill until deleted; delete them with: onechip cloud down --name onechip-v5e-1 "
                    "--project proj-1 --yes")  # fmt: skip
    assert ours(fast) == {(SPARE, "node", "onechip-v5e-1-0")}
    result = up(zones=[SPARE], provisioning="spot", max_hours=1.0, replicas=2)  # the same command again
    assert [r.name for r in result.resources] == ["onechip-v5e-1-0", "onechip-v5e-1-1"]
    assert len(creates(fast)) == 2  # the first reused, only the second created
    assert_tracked_then_down(fast)


@pytest.mark.parametrize("nth", [1, 2, 4, 7, 11])
def test_ctrl_c_anywhere_in_a_flex_start_set_then_down_deletes_what_onechip_made(fast, monkeypatch, nth):
    calls = [0]
    real_sleep = provision.time.sleep

    def sleep(seconds):
        calls[0] += 1
        if calls[0] == nth:
            raise KeyboardInterrupt
        real_sleep(seconds)

    monkeypatch.setattr(provision.time, "sleep", sleep)
    try:
        up(zones=[OK], replicas=2)
    except Interrupted as exc:
        assert "\n" not in str(exc)
        assert "onechip cloud down --name onechip-v5e-1 --project proj-1 --yes" in str(exc) or "nothing bills" in str(
            exc
        )
    monkeypatch.setattr(provision.time, "sleep", real_sleep)
    assert_tracked_then_down(fast)


def test_down_without_zone_leaves_a_labelled_set_member_it_did_not_record(fast):
    up(zones=[SPARE], provisioning="spot", max_hours=1.0, replicas=2)
    fast.put("node", SPARE, "onechip-v5e-1-2", "READY")  # labelled (a copied label, or another user's onechip)
    api.cloud_down(CloudNameRequest(project=P, name="onechip-v5e-1"))
    assert ours(fast) == {(SPARE, "node", "onechip-v5e-1-2")}  # not recorded here: not ours to delete
    fast.nodes.clear()


def test_a_v5e_4_slice_with_4_replicas_is_one_tpu_priced_for_4_chips(fast):
    request = CloudUpRequest.model_validate(
        {"project": P, "zones": [SPARE], "chip": "v5e-4", "replicas": 4, "provisioning": "spot", "max_hours": 1.0}
    )
    quote = api.cloud_quote(request)
    # accelerators.json: v5e-4 is 4 chips priced as v5e-1 (price_chip); prices.json v5e-1 spot $0.5779 (seed)
    assert (quote.tpus, quote.chips, quote.usd_per_chip_hour) == (1, 4, 0.5779)
    assert quote.usd_per_hour == pytest.approx(4 * 0.5779)
    result = api.cloud_up(request)
    assert result.resources == [] and result.resource.accelerator_type == "v5litepod-4"
    assert len(creates(fast)) == 1
    assert_tracked_then_down(fast)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"chip": "v5e-4", "replicas": 3}, "does not split 4 chip"),
        ({"name": "n" * 57, "replicas": 10}, "past 58 characters"),
        (
            {"model": "google/gemma-4-E2B-it", "replicas": 2, "hf_token_file": "/nonexistent/token"},
            "/nonexistent/token",
        ),
    ],
)
def test_a_set_that_cannot_be_made_is_refused_before_any_call(fast, fields, said):
    with pytest.raises(ConfigError, match=said):
        up(zones=[SPARE], provisioning="spot", max_hours=1.0, **fields)
    assert fast.requests == []


@pytest.mark.parametrize("replicas", ["2", 2.0, True, 0, 65])
def test_replicas_is_strict_and_bounded(replicas):
    with pytest.raises(ValueError):
        CloudUpRequest.model_validate({"project": P, "zones": [OK], "replicas": replicas})


def test_engines_that_do_not_start_leave_the_tpus_recorded_and_say_how_to_delete_them(fast, monkeypatch, tmp_path):
    # the TPUs' ssh port refuses (no sshd behind the fake's external IP on this port): the engines cannot start
    with pytest.raises(Exception) as info:
        up(zones=[SPARE], provisioning="spot", max_hours=1.0, replicas=2, model="google/gemma-4-E2B-it",
           ssh_options=["Port=1", "ConnectTimeout=5"], boot_timeout_s=30.0)  # fmt: skip
    said = str(info.value)
    assert "\n" not in said, said
    assert said.endswith(
        "the 2 TPU(s) stay up and bill: onechip cloud down --name onechip-v5e-1 --project proj-1 --yes"
    )
    assert ours(fast) == {(SPARE, "node", "onechip-v5e-1-0"), (SPARE, "node", "onechip-v5e-1-1")}
    assert_tracked_then_down(fast)
