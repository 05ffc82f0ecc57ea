"""Tidy-ups after pass 58 on `onechip cloud`, against the loopback fake TPU API: every place that names the TPU of a
request uses one rule (provision.tpu_name), so a demo that names its chip as Google does finds the TPU `cloud up`
named."""

from __future__ import annotations

from onechip import api
from onechip.api._demo_host import _provisioned
from onechip.cloud import provision
from onechip.schemas.requests import DemoRequest

P = "proj-1"
OK = "us-west4-a"


def _demo(**extra) -> DemoRequest:
    return DemoRequest(cloud="gcp", engine="vllm-docker", model="google/gemma-4-E2B-it", project=P, zones=[OK],
                       provisioning="spot", max_hours=1.0, **extra)  # fmt: skip


def test_a_demo_naming_its_chip_as_google_does_finds_the_tpu_cloud_up_named(fast):
    # was: `demo --cloud gcp --chip v5litepod-1` got its TPU from `cloud up`, which names it after onechip's key
    # (cloud_target: v5litepod-1 -> v5e-1, so 'onechip-v5e-1'), while the demo looked for 'onechip-v5litepod-1' to
    # delete after a failure (_provisioned), for --again and for --keep's line: the TPU it created was never found
    since = provision.now_iso()  # as api.demo stamps its start
    request = _demo(chip="v5litepod-1")
    created = api.cloud_up(api.demo_cloud_request(request)).resource
    assert created.name == "onechip-v5e-1"  # catalog/cloud_tpu.json: v5litepod-1 is Google's name of v5e-1
    found = _provisioned(request, since)
    assert found is not None and found.name == created.name
