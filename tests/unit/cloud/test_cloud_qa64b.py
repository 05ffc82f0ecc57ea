"""QA of round 64's owner label (helper qa64b, 2026-12-07): `down` by a record or by --zone, and this home's owner-id
file when it is not one; each test failed before its fix."""

from __future__ import annotations

import pytest
import test_cloud_cloud64

from onechip import api
from onechip.cloud import records, refusals
from onechip.errors import ConfigError
from onechip.schemas.cloud import CloudNameRequest, CloudUpRequest

P = test_cloud_cloud64.P
OK = test_cloud_cloud64.OK
ANOTHER = "0123456789abcdef" * 2  # another onechip home's owner id (records.owner_id's shape: uuid4 hex)


def _taken_by_another_home(fast, name: str) -> str:
    """This home's TPU `name`, deleted outside onechip and made again under that name by another onechip home: the
    API's node now carries created-by onechip and that home's onechip-owner. Its key in the fake."""
    key = f"projects/{P}/locations/{OK}/nodes/{name}"
    fast.nodes[key]["labels"] = dict(fast.nodes[key]["labels"], **{records.OWNER_LABEL: ANOTHER})
    return key


@pytest.mark.parametrize("by", ["record", "zone"])
def test_down_never_deletes_another_onechip_homes_tpu(fast, by):
    # `down` checked only created-by=onechip on the API's copy, so a TPU another onechip home made under a name this
    # home recorded (or listed by --zone) was deleted: the owner label (records.OWNER_LABEL) says whose it is
    tpu = test_cloud_cloud64._spot_up().resource
    key = _taken_by_another_home(fast, tpu.node_id)
    if by == "zone":
        records.forget(tpu)
    result = api.cloud_down(CloudNameRequest(project=P, zones=[OK] if by == "zone" else []))
    assert key in fast.nodes and not any(m == "DELETE" for m, _, _ in fast.requests), result
    (kept,) = result.kept
    assert "another onechip" in kept and ANOTHER in kept and tpu.name in kept, kept


def test_down_still_deletes_a_tpu_of_this_home_or_without_the_owner_label(fast):
    # an onechip before the owner label wrote none: met as before (created-by alone)
    tpu = test_cloud_cloud64._spot_up().resource
    key = f"projects/{P}/locations/{OK}/nodes/{tpu.node_id}"
    del fast.nodes[key]["labels"][records.OWNER_LABEL]
    result = api.cloud_down(CloudNameRequest(project=P))
    assert result.deleted and key not in fast.nodes, result


@pytest.mark.parametrize("held", ["garbage\n", "0123456789abcdef0123456789abcde\n", b"\xff\xfe\x00"])
def test_an_owner_id_file_that_holds_no_id_is_refused_not_replaced(offline_home, held):
    # records.owner_id made a new id over a file that held none: every TPU this home had labelled with the id it held
    # then read as another onechip's (up refused to resume it), and the id was lost for good
    path = offline_home / "cloud" / "owner-id"
    path.parent.mkdir(parents=True)
    (path.write_bytes if isinstance(held, bytes) else path.write_text)(held)  # type: ignore[operator]
    before = path.read_bytes()
    with pytest.raises(ConfigError) as info:
        records.owner_id()
    said = str(info.value)
    assert str(path) in said and "\n" not in said and "garbage" not in said, said
    assert path.read_bytes() == before


def test_an_owner_id_file_where_a_folder_is_is_one_line(offline_home):
    path = offline_home / "cloud" / "owner-id"
    path.mkdir(parents=True)
    with pytest.raises(ConfigError) as info:
        records.owner_id()
    assert str(path) in str(info.value) and path.is_dir(), info.value


def test_the_first_owner_id_is_made_once_and_kept(offline_home):
    made = records.owner_id()
    # its first line; the second names the home it was made for (records.HOME_LINE, stop 65)
    assert (offline_home / "cloud" / "owner-id").read_text().splitlines()[0] == made == records.owner_id()


# --- a refusal's details (google.rpc.Status.details) with odd fields

QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def _refused(message: str, details: list) -> str:
    return str(refusals.from_status({"code": 429, "message": message, "details": details}, "zone z"))


def test_a_quota_the_details_name_is_set_apart_from_the_message():
    # RESOURCE_EXHAUSTED's stock message ends in '.', and the details' words were joined to it with no space
    said = _refused("Quota exceeded.", [{"@type": QUOTA_FAILURE, "violations": [{"quotaId": "TPUPerZone"}]}])
    assert said == "zone z: Quota exceeded. (quota: TPUPerZone)", said


def test_a_huge_name_in_the_details_is_cut_to_one_short_line():
    # a detail is the server's text: 100,000 characters of it made a 100,000-character error line
    said = _refused("Quota exceeded.", [{"@type": QUOTA_FAILURE, "violations": [{"quotaId": "Q" * 100_000}]}])
    assert len(said) < 400 and said.startswith("zone z: Quota exceeded. (quota: QQQ"), len(said)


def test_a_service_or_project_not_in_its_shape_is_never_put_in_a_command():
    # the `gcloud services enable` command is built from metadata.service and metadata.consumer: a value that is no
    # service name (a DNS name) or project was pasted into a command the user is told to run
    meta = {"service": "tpu.googleapis.com; rm -rf ~", "consumer": "projects/p; curl x"}
    said = _refused("denied", [{"@type": ERROR_INFO, "reason": "SERVICE_DISABLED", "metadata": meta}])
    assert "gcloud services enable" not in said and "rm -rf" not in said and "curl" not in said, said


def test_down_with_an_owner_id_file_that_holds_no_id_deletes_nothing_and_says_why(fast, offline_home):
    # `down` reads whose each TPU is: with no id to compare it raised at the first TPU with an owner label, after the
    # delete of one without (an onechip before the label made it) had been sent, and the line did not say so
    for name in ("a-older", "b-newer"):
        api.cloud_up(CloudUpRequest(project=P, zones=[OK], name=name, provisioning="spot", no_limit=True))
    del fast.nodes[f"projects/{P}/locations/{OK}/nodes/a-older"]["labels"][records.OWNER_LABEL]
    (offline_home / "cloud" / "owner-id").write_text("garbage\n")
    with pytest.raises(ConfigError) as info:
        api.cloud_down(CloudNameRequest(project=P))
    assert "owner-id" in str(info.value) and not any(m == "DELETE" for m, _, _ in fast.requests), info.value
    assert sorted(r.name for r in records.load_all()) == ["a-older", "b-newer"]


def test_status_says_a_tpu_under_a_recorded_name_is_another_onechip_homes(fast):
    # its cost was counted as this home's, without a word that another home made it
    tpu = test_cloud_cloud64._spot_up().resource
    _taken_by_another_home(fast, tpu.node_id)
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert any("another onechip" in w and ANOTHER in w for w in st.warnings), st.warnings
