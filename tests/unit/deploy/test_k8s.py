"""deploy/k8s.py: every manifest `deploy k8s` writes validates against the Kubernetes v1.33 OpenAPI schema
(strict; tests/fixtures/k8s-schemas/SOURCE.md), and carries the planned serve flags and the router's
service discovery."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from onechip import api
from onechip.errors import ConfigError
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import DeployK8sRequest, PlanRequest

SCHEMAS = Path(__file__).parents[2] / "fixtures" / "k8s-schemas" / "v1.33-strict"
GEMMA = "google/gemma-4-E2B-it"


def _validator(doc: dict) -> jsonschema.Draft202012Validator:
    group = doc["apiVersion"].split("/")[0].split(".")[0] if "/" in doc["apiVersion"] else None
    version = doc["apiVersion"].split("/")[-1]
    name = f"{doc['kind'].lower()}-{group}-{version}.json" if group else f"{doc['kind'].lower()}-{version}.json"
    schema = json.loads((SCHEMAS / name).read_text())
    defs = json.loads((SCHEMAS / "_definitions.json").read_text())
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _deploy(tmp_path: Path, **fields: object):
    request = build_request(DeployK8sRequest, {"model": GEMMA, "out": tmp_path, **fields})
    return api.deploy_k8s(request)


@pytest.mark.parametrize("chip,replicas,share", [("v5e-4", 4, 1), ("v5e-4", 1, 4), ("l4", 3, 1)])
def test_every_manifest_validates_against_the_kubernetes_schema(tmp_path, chip, replicas, share):
    result = _deploy(tmp_path, chip=chip, replicas=replicas, hf_token_secret="hf")
    docs = list(yaml.safe_load_all(Path(result.path).read_text()))
    assert docs == result.manifests and len(docs) == 7
    for doc in docs:
        _validator(doc).validate(doc)
    assert result.chips_per_replica == share


def test_a_wrong_field_fails_the_schema(tmp_path):
    # the check can fail: a misspelt container field is refused by the strict schema
    doc = _deploy(tmp_path, chip="v5e-4", replicas=4).manifests[0]
    doc["spec"]["template"]["spec"]["containers"][0]["argz"] = []
    with pytest.raises(jsonschema.ValidationError, match="argz"):
        _validator(doc).validate(doc)


def test_the_vllm_pods_run_the_planned_command_on_their_chip_share(tmp_path):
    result = _deploy(tmp_path, chip="v5e-4", replicas=4, hf_token_secret="hf")
    engine = result.manifests[0]
    pod = engine["spec"]["template"]["spec"]
    container = pod["containers"][0]
    plan = api.plan(build_request(PlanRequest, {"model": GEMMA, "chip": "v5e-4", "launch": "vllm-docker"}))
    assert plan.serve_command is not None
    # the same planned flags as `plan` prints (TP=1: one chip per pod), bound to the pod's address
    planned = plan.serve_command.argv[2:]
    args = container["args"]
    assert args[: args.index("--host")] == planned[: planned.index("--host")]
    assert args[args.index("--host") + 1] == "0.0.0.0" and engine["spec"]["replicas"] == 4
    # GKE: one v5e chip per pod on a 1x1 node ("Plan TPUs in GKE": tpu-v5-lite-podslice, topology 1x1)
    assert container["resources"]["limits"] == {"google.com/tpu": "1"}
    assert pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == "1x1"
    # the token comes from a Secret by name, never inline
    token = next(e for e in container["env"] if e["name"] == "HF_TOKEN")
    assert token == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}


def test_the_router_discovers_the_vllm_pods_by_label(tmp_path):
    docs = {f"{d['kind']}/{d['metadata']['name']}": d for d in _deploy(tmp_path, chip="l4", replicas=2).manifests}
    router = docs["Deployment/onechip-router"]["spec"]["template"]["spec"]
    line = router["containers"][0]["command"][-1]
    assert "vllm-router==0.1.17" in line and "--service-discovery --selector app=onechip-vllm" in line
    assert "--policy cache_aware" in line and router["serviceAccountName"] == "onechip-router"
    assert docs["Role/onechip-router"]["rules"][0]["verbs"] == ["get", "list", "watch"]
    assert docs["Service/onechip-router"]["spec"].get("type") is None  # ClusterIP: not exposed


def test_apply_needs_a_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with pytest.raises(ConfigError, match="needs a kubeconfig"):
        _deploy(tmp_path, chip="l4", replicas=2, apply=True)


def test_a_chip_without_a_gke_pool_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="no GKE node pool"):
        _deploy(tmp_path, chip="mi300x", replicas=2)
