"""Cloud pass 71, gap 5: every refusal and failure a fake API scenario can reach, through the CLI, meets one contract:
a non-zero exit (the class's), one `error:` line on stderr and no traceback, the line naming what may still exist
with the command that deletes it, and no secret the API's message carried (each message of the fake here quotes a
bearer token and an HF token, as a proxy or a debug build could)."""

from __future__ import annotations

import pytest
from test_cloud_failures import up

import fakes.tpu_api as fake_module
from fakes.tpu_api import Fault
from onechip.cloud import records
from onechip.errors import CloudError

P = "proj-1"
OK = "us-west4-a"
NAME = "onechip-v5e-1"
BEARER = "ya29.A0ARrdaM-FAKEfakeFAKEfake0123456789abcdefghij"
HF = "hf_FAKEmessageTokenabcdefghij0123456789"
SPOT = ["--provisioning", "spot", "--max-hours", "1"]
DELETE = f"onechip cloud down --name {NAME} --zone {OK} --project {P} --yes"

pytestmark = pytest.mark.usefixtures("short_deadline")


@pytest.fixture
def leaky(fast, monkeypatch):
    """`fast`, every error message of the fake quoting a bearer token and an HF token."""
    for template in ("STOCKOUT", "QUOTA", "UNSUPPORTED", "INTERNAL", "EXPIRED", "RATE_LIMIT", "LOCATION"):
        said = getattr(fake_module, template)
        monkeypatch.setattr(fake_module, template, f"{said} (debug: Authorization: Bearer {BEARER}; token={HF})")
    return fast


# (scenario, how the fake is set, the command's arguments after `cloud up --project P --zone Z --yes`, exit code,
# words the line must hold, whether a TPU may exist: then the line names its delete command)
SCENARIOS = [
    ("quota at create", lambda f: setattr(f.zones[OK], "spot", "quota"), SPOT, 7, "quota", False),
    ("quota as 403", lambda f: f.faults.append(Fault("POST", r"/nodes\?", "quota-403", times=50)), SPOT, 7, "quota",
     False),
    ("PERMISSION_DENIED (IAM)", lambda f: f.faults.append(Fault("POST", r"/nodes\?", "iam-403", times=50)), SPOT, 7,
     "permission tpu.nodes.create", False),
    ("location not usable", lambda f: f.faults.append(Fault("POST", r"/nodes\?", "location-403", times=50)), SPOT, 7,
     "", False),
    ("429 with Retry-After", lambda f: f.faults.append(Fault("POST", r"/nodes\?", "bare-429", times=500)), SPOT, 7,
     "", True),
    ("503 with Retry-After", lambda f: f.faults.append(Fault("POST", r"/nodes\?", "retry-after", times=500)), SPOT, 7,
     "", True),
    ("429 RetryInfo", lambda f: f.faults.append(Fault("POST", r"/nodes\?", "retry-info", times=500)), SPOT, 7, "",
     True),
    ("stockout", lambda f: setattr(f.zones[OK], "spot", "stockout"), SPOT, 7, "stockout", False),
    ("flex-start unsupported", lambda f: setattr(f.zones[OK], "flex", "unsupported"), [], 7, "not supported", False),
    ("queued resource FAILED", lambda f: setattr(f.zones[OK], "flex", "internal"), [], 7, "", True),
    ("queued resource expired", lambda f: setattr(f.zones[OK], "flex", "never"), ["--valid-until", "1s"], 7, "",
     True),
    ("echoed credentials", lambda f: f.faults.append(Fault("POST", r"/nodes\?", "echo-auth", times=50)), SPOT, 7, "",
     False),
]  # fmt: skip


@pytest.mark.parametrize(("scenario", "setup", "argv", "code", "words", "may_exist"), SCENARIOS,
                         ids=[s[0] for s in SCENARIOS])  # fmt: skip
def test_each_refusal_of_cloud_up_is_one_line_a_code_and_no_secret(leaky, run, scenario, setup, argv, code, words,
                                                                  may_exist):  # fmt: skip
    setup(leaky)
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--yes", *argv)
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert rc == code and len(lines) == 1 and "Traceback" not in err, (rc, out, err)
    (said,) = lines
    assert words.lower() in said.lower(), said
    assert BEARER not in out + err and HF not in out + err, err
    exists = {r.name for r in records.load_all()}
    if exists:  # what is recorded may bill: the line names it and how to delete it
        assert NAME in said and "onechip cloud down" in said, said
    assert may_exist or not exists, exists


def test_a_node_never_ready_within_its_bound_is_one_line_naming_it_and_its_delete(leaky):
    # an operation that never finishes: the node stays CREATING past the wait's bound (CloudUpRequest.timeout_s)
    leaky.create_s = 60.0
    with pytest.raises(CloudError) as info:
        up(zones=[OK], provisioning="spot", max_hours=1.0, timeout_s=0.5)
    said = str(info.value)
    assert "\n" not in said and info.value.exit_code == 7 and NAME in said and DELETE in said, said
    assert {r.name for r in records.load_all()} == {NAME}  # it may bill: recorded, so `cloud down` finds it
