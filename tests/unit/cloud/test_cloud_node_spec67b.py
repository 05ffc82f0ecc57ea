"""A queued resource the API lists with a `tpu.nodeSpec` that is no list of objects (helper qa67b, 2026-12-07): the
API's schema says a list of NodeSpec (v2alpha1 QueuedResource.Tpu.nodeSpec[]); another tool's or a changed API's copy
may not. qa67a made qr_node_ids read such a copy as naming no node; labels_of (every list `cloud status --zone` and
`cloud down --zone` take) and _from_api still iterated it, so a nodeSpec object raised AttributeError out of the
whole zone's listing: no TPU of that zone was shown, nor deleted."""

from __future__ import annotations

import pytest
import test_cloud_qa62
from test_cloud_qa62 import PARENT, QR, Z, _qr

from onechip.cloud import provision
from onechip.schemas.cloud import CloudNameRequest

script = test_cloud_qa62.script  # the scripted fake API's fixture, found by its name here
P = "proj-1"
LABELS = {"created-by": "onechip"}


def _odd(name: str, node_spec: object, **extra: object) -> dict:
    return {**_qr("ACTIVE"), "name": f"{PARENT}/queuedResources/{name}", "tpu": {"nodeSpec": node_spec}, **extra}


@pytest.mark.parametrize(
    "node_spec",
    [{"nodeId": "x-node", "node": {"labels": LABELS}}, "x-node", [1, None, "s"], [{"node": "n"}],
     [{"node": {"labels": ["created-by"]}}]],
)  # fmt: skip
def test_a_zone_listing_a_queued_resource_of_an_odd_node_spec_lists_the_others(script, node_spec):
    script.answers[("GET", QR)] = [(200, {"queuedResources": [_odd("x", node_spec), _qr("ACTIVE")]})]
    chosen = provision.targets(script.api, CloudNameRequest(project=P, zones=[Z]), [])
    assert ("queued-resource", "q") in [(r.kind, r.name) for r in chosen], chosen


def test_a_queued_resource_labelled_itself_with_an_odd_node_spec_is_taken(script):
    script.answers[("GET", QR)] = [(200, {"queuedResources": [_odd("x", {"nodeId": "x-node"}, labels=LABELS)]})]
    (found,) = provision.targets(script.api, CloudNameRequest(project=P, zones=[Z]), [])
    assert (found.name, found.node_id) == ("x", "x")  # no node id the API's format gives: its own name, as asked


def test_labels_that_are_no_object_are_none():
    assert provision.labels_of({"labels": ["created-by"], "tpu": {"nodeSpec": [{"node": {"labels": "x"}}]}}) == {}
    assert provision.labels_of(_qr("ACTIVE")) == LABELS
