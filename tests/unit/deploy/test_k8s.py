"""deploy/k8s.py: every manifest `deploy k8s` writes validates against the Kubernetes v1.33 OpenAPI schema
(strict) and, for the InferencePool variant, the pinned CRD schemas (InferencePool from
gateway-api-inference-extension v1.5.0, HTTPRoute from gateway-api v1.5.1; tests/fixtures/k8s-schemas/SOURCE.md),
and carries the planned serve flags and the router's service discovery or the endpoint picker's wiring."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from factories import SMOLLM2_CONFIG, sized_checkpoint
from onechip import api
from onechip.errors import ConfigError
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import DeployK8sRequest, PlanRequest

FIXTURES = Path(__file__).parents[2] / "fixtures" / "k8s-schemas"
SCHEMAS = FIXTURES / "v1.33-strict"
CRDS = FIXTURES / "crds"
GEMMA = "google/gemma-4-E2B-it"


def _validator(doc: dict) -> jsonschema.Draft202012Validator:
    group = doc["apiVersion"].split("/")[0].split(".")[0] if "/" in doc["apiVersion"] else None
    version = doc["apiVersion"].split("/")[-1]
    name = f"{doc['kind'].lower()}-{group}-{version}.json" if group else f"{doc['kind'].lower()}-{version}.json"
    schema = json.loads(((CRDS if (CRDS / name).is_file() else SCHEMAS) / name).read_text())
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


def test_a_local_checkpoint_directory_is_said_to_be_absent_from_the_pods(tmp_path):
    local = sized_checkpoint(tmp_path / "ckpt", SMOLLM2_CONFIG, 2**30)
    result = _deploy(tmp_path, model=str(local), chip="l4", replicas=2)
    assert result.manifests[0]["spec"]["template"]["spec"]["containers"][0]["args"][0] == str(local)
    assert any(note.startswith(f"{local} is a checkpoint directory on this machine") for note in result.notes)
    assert not any("checkpoint directory" in note for note in _deploy(tmp_path, chip="l4", replicas=2).notes)


def test_apply_needs_a_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with pytest.raises(ConfigError, match="needs a kubeconfig"):
        _deploy(tmp_path, chip="l4", replicas=2, apply=True)


def test_a_chip_without_a_gke_pool_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="no GKE node pool"):
        _deploy(tmp_path, chip="mi300x", replicas=2)
    with pytest.raises(ConfigError, match="no GKE node pool"):
        _deploy(tmp_path, chip="RTX A6000", replicas=2)  # a gpus.json card: planned, but GKE offers no pool of it


@pytest.mark.parametrize(("chip", "label"), [("H100", "nvidia-h100-80gb"), ("nvidia-l4", "nvidia-l4")])
def test_a_chip_by_the_name_people_write_gets_its_gke_pool(tmp_path, chip, label):
    # `plan --chip H100` plans the catalog's h100 (planner.chips); deploy k8s must label the pods the same way
    pod = _deploy(tmp_path, chip=chip, replicas=2).manifests[0]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": label}


# --- --router inferencepool (Gateway API Inference Extension v1.5.0, its chart config/charts/inferencepool)


def _pool(tmp_path: Path, **fields: object) -> dict[str, dict]:
    result = _deploy(tmp_path, router="inferencepool", **fields)
    docs = list(yaml.safe_load_all(Path(result.path).read_text()))
    assert docs == result.manifests
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


@pytest.mark.parametrize("chip,replicas", [("v5e-4", 4), ("l4", 3), ("h100", 2)])
def test_every_inferencepool_manifest_validates_against_the_pinned_schemas(tmp_path, chip, replicas):
    docs = _pool(tmp_path, chip=chip, replicas=replicas, namespace="serving", gateway="my-gateway")
    assert list(docs) == [
        "Deployment/onechip-vllm", "Service/onechip-vllm", "InferencePool/onechip-pool", "ConfigMap/onechip-epp",
        "ServiceAccount/onechip-epp", "Role/onechip-epp-sa", "RoleBinding/onechip-epp-sa", "Role/onechip-epp-non-sa",
        "RoleBinding/onechip-epp-non-sa", "Deployment/onechip-epp", "Service/onechip-epp", "HTTPRoute/onechip-pool",
    ]  # fmt: skip
    for doc in docs.values():
        _validator(doc).validate(doc)
    # the real API groups of the pinned releases: InferencePool is GA (v1) since GIE v1.0; HTTPRoute v1
    assert docs["InferencePool/onechip-pool"]["apiVersion"] == "inference.networking.k8s.io/v1"
    assert docs["HTTPRoute/onechip-pool"]["apiVersion"] == "gateway.networking.k8s.io/v1"


def test_the_crd_schemas_refuse_what_the_api_server_refuses(tmp_path):
    docs = _pool(tmp_path, chip="l4", replicas=2)
    pool = docs["InferencePool/onechip-pool"]
    # v1alpha2's targetPortNumber is gone from v1 (the v1.5.0 CRD has only targetPorts): strict refuses it
    pool["spec"]["targetPortNumber"] = 8000
    with pytest.raises(jsonschema.ValidationError, match="targetPortNumber"):
        _validator(pool).validate(pool)
    route = docs["HTTPRoute/onechip-pool"]
    route["spec"]["rules"][0]["backendRefs"][0]["weight"] = -1  # gateway-api v1.5.1: weight minimum 0
    with pytest.raises(jsonschema.ValidationError, match="-1"):
        _validator(route).validate(route)


def test_the_pool_selects_the_vllm_pods_and_names_its_endpoint_picker(tmp_path):
    docs = _pool(tmp_path, chip="v5e-4", replicas=4, namespace="serving")
    engine = docs["Deployment/onechip-vllm"]
    spec = docs["InferencePool/onechip-pool"]["spec"]
    # the pool selects exactly the vLLM pods, on the port the engine listens on
    assert spec["selector"]["matchLabels"] == engine["spec"]["template"]["metadata"]["labels"]
    port = engine["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert spec["targetPorts"] == [{"number": port}] and spec["appProtocol"] == "http"
    # endpointPickerRef names the EPP Service and its ext-proc port (chart: extProcPort 9002, FailOpen)
    ref = spec["endpointPickerRef"]
    service = docs[f"Service/{ref['name']}"]
    assert ref["port"]["number"] in [p["port"] for p in service["spec"]["ports"]] and ref["port"]["number"] == 9002
    assert ref["failureMode"] == "FailOpen"
    picker = docs["Deployment/onechip-epp"]["spec"]["template"]
    assert service["spec"]["selector"] == picker["metadata"]["labels"]


def test_the_endpoint_picker_runs_the_pinned_image_with_the_charts_flags(tmp_path):
    docs = _pool(tmp_path, chip="l4", replicas=2, namespace="serving")
    pod = docs["Deployment/onechip-epp"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    # inferencepool chart v1.5.0 values.yaml: registry.k8s.io / gateway-api-inference-extension/epp : v1.5.0
    assert container["image"] == "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"
    args = container["args"]
    assert args[args.index("--pool-name") + 1] == "onechip-pool"
    assert args[args.index("--pool-namespace") + 1] == "serving"
    assert args[args.index("--pool-group") + 1] == "inference.networking.k8s.io"
    # the plugin file it reads is the ConfigMap's key, mounted at /config
    config = docs["ConfigMap/onechip-epp"]
    path = args[args.index("--config-file") + 1]
    assert path.startswith("/config/") and path.removeprefix("/config/") in config["data"]
    assert {"name": "plugins-config-volume", "configMap": {"name": "onechip-epp"}} in pod["volumes"]
    plugins = yaml.safe_load(config["data"]["default-plugins.yaml"])
    weights = {p["pluginRef"]: p["weight"] for p in plugins["schedulingProfiles"][0]["plugins"]}
    assert weights == {"queue-scorer": 2, "kv-cache-utilization-scorer": 2, "prefix-cache-scorer": 3}  # epplib
    # its account may read pods and the pool (chart rbac.yaml / epplib _rbac.yaml), nothing cluster-wide
    assert pod["serviceAccountName"] == "onechip-epp"
    rules = docs["Role/onechip-epp-sa"]["rules"] + docs["Role/onechip-epp-non-sa"]["rules"]
    granted = {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}
    assert {("", "pods"), ("inference.networking.k8s.io", "inferencepools")} <= granted
    assert all(set(rule["verbs"]) == {"get", "list", "watch"} for rule in rules)
    for name in ("onechip-epp-sa", "onechip-epp-non-sa"):
        binding = docs[f"RoleBinding/{name}"]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "onechip-epp", "namespace": "serving"}]


def test_the_route_sends_the_named_gateway_to_the_pool(tmp_path):
    docs = _pool(tmp_path, chip="l4", replicas=2, gateway="edge")
    rule = docs["HTTPRoute/onechip-pool"]["spec"]
    assert rule["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}]
    backend = rule["rules"][0]["backendRefs"]
    assert backend == [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "onechip-pool"}]
    assert not any(k.startswith("Deployment/onechip-router") for k in docs)  # no vllm-router beside the pool


def test_a_vllm_router_policy_is_refused_for_the_endpoint_picker(tmp_path):
    with pytest.raises(ConfigError, match="round_robin is a vllm-router policy"):
        _deploy(tmp_path, chip="l4", replicas=2, router="inferencepool", router_policy="round_robin")


def test_a_gateway_name_that_is_no_dns_label_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="--gateway"):
        _deploy(tmp_path, chip="l4", replicas=2, router="inferencepool", gateway="Bad_Name")


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [("name", "a" * 60, "at most 50 characters"), ("namespace", "n" * 51, "at most 50 characters"),
     ("hf_token_secret", "s" * 254, "at most 253 characters"), ("name", "My_App", "lower-case letters")],
)  # fmt: skip
def test_a_name_too_long_is_refused_for_its_length(tmp_path, field, value, said):
    # a lower-case name of 60 characters was refused as "must be lower-case letters, digits and '-'", which it was
    with pytest.raises(ConfigError, match=said):
        _deploy(tmp_path, chip="l4", **{field: value})


def test_apply_creates_the_custom_objects_through_their_crd_resources(tmp_path, monkeypatch):
    # kubernetes.utils.create_from_dict maps only built-in kinds to typed APIs; InferencePool and HTTPRoute go
    # through CustomObjectsApi with the CRDs' plural names (inferencepools, httproutes)
    import sys
    import types

    created: list[tuple] = []
    client = types.SimpleNamespace(
        ApiClient=lambda: "api",
        CustomObjectsApi=lambda api: types.SimpleNamespace(
            create_namespaced_custom_object=lambda g, v, ns, plural, body: created.append((g, v, ns, plural))
        ),
    )
    utils = types.SimpleNamespace(create_from_dict=lambda api, doc: created.append((doc["kind"],)))
    config = types.SimpleNamespace(load_kube_config=lambda config_file: None)
    fake = types.ModuleType("kubernetes")
    fake.client, fake.utils, fake.config = client, utils, config  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kubernetes", fake)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    result = _deploy(tmp_path, chip="l4", replicas=2, router="inferencepool", namespace="serving", apply=True)
    assert result.applied and len(created) == len(result.manifests)
    assert ("inference.networking.k8s.io", "v1", "serving", "inferencepools") in created
    assert ("gateway.networking.k8s.io", "v1", "serving", "httproutes") in created
    assert ("Deployment",) in created and ("ConfigMap",) in created


@pytest.mark.parametrize(("chip", "replicas", "tp", "share"), [("l4", 2, 2, 1), ("v5e-4", 4, 4, 1), ("v5e-4", 2, 1, 2)])
def test_a_parallel_size_other_than_the_pods_chips_is_refused(tmp_path, chip, replicas, tp, share):
    # was exit 0: the pods requested `share` chips (engines.replicas.replica_share) while vLLM ran
    # --tensor-parallel-size tp from --set, so the pod could not start (tp > share) or left chips idle (tp < share)
    with pytest.raises(ConfigError) as refused:
        _deploy(tmp_path / "k", chip=chip, replicas=replicas, sets=[f"tensor-parallel-size={tp}"])
    assert str(refused.value) == (
        f"tensor-parallel-size x pipeline-parallel-size is {tp}, but each replica gets {share} chip(s) ({chip} over "
        f"--replicas {replicas}): leave out --set tensor-parallel-size=N, or make the product {share}"
    )
    assert not (tmp_path / "k").exists()


@pytest.mark.parametrize(("chip", "pods", "share"), [("v5e-1", 1, 1), ("v6e-1", 1, 1), ("v5e-4", 4, 1),
                                                     ("v6e-8", 2, 4), ("l4", 2, 1), ("h100", 2, 1)])  # fmt: skip
def test_the_default_replicas_work_on_every_gke_chip_and_are_said(tmp_path, chip, pods, share):
    # was "--replicas 2 does not split 1 chip(s) evenly" for `deploy k8s MODEL --chip v5e-1` (the user typed no
    # --replicas), and "2 TPU chips per replica has no single-host GKE topology" for v5e-4
    result = api.deploy_k8s(build_request(DeployK8sRequest, {"model": GEMMA, "out": tmp_path, "chip": chip}))
    assert (result.replicas, result.chips_per_replica) == (pods, share)
    assert result.manifests[0]["spec"]["replicas"] == pods
    assert f"--replicas not given: {pods} vLLM pod(s) of {share} {chip} chip(s) each" in result.notes[0]


@pytest.mark.parametrize(
    ("chip", "replicas", "said"),
    [("v5e-1", 2, "--replicas 2 does not split 1 chip(s)"), ("v5e-4", 2, "2 TPU chips per replica has no single-host")],
)
def test_a_given_replicas_that_cannot_split_stays_refused(tmp_path, chip, replicas, said):
    with pytest.raises(ConfigError, match=re.escape(said)):
        _deploy(tmp_path, chip=chip, replicas=replicas)
    assert not (tmp_path / "onechip.yaml").exists()


def test_the_default_replicas_give_each_pod_chips_that_hold_the_model(tmp_path):
    # Llama-3.1-8B's 14.96 GiB of weights exceed one v5e chip's cap: the default of 4 one-chip pods on a v5e-4 was
    # refused ("the plan says one replica does not fit") though one pod of four chips, --replicas 1, fits
    request = build_request(DeployK8sRequest, {"model": "meta-llama/Llama-3.1-8B-Instruct", "out": tmp_path,
                                               "chip": "v5e-4"})  # fmt: skip
    result = api.deploy_k8s(request)
    assert (result.replicas, result.chips_per_replica) == (1, 4)
    assert result.notes[0].startswith("--replicas not given: 1 vLLM pod(s) of 4 v5e-4 chip(s) each")
    with pytest.raises(ConfigError, match="does not fit"):  # given, it is what the user asked: refused
        api.deploy_k8s(request.model_copy(update={"replicas": 4}))
