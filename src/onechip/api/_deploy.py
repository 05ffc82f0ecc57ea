"""`deploy k8s`: the replica set as Kubernetes manifests (deploy.k8s), written to a directory, optionally applied."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field

from onechip.api._plan import plan_replica
from onechip.deploy import k8s
from onechip.engines import replicas
from onechip.errors import ConfigError, MissingDependencyError
from onechip.paths import write_text_atomic
from onechip.schemas import Plan
from onechip.schemas.common import ResultModel
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import DeployK8sRequest, PlanRequest
from onechip.vllm import flag_table


class DeployResult(ResultModel):
    """What `deploy k8s` wrote (and applied)."""

    path: str = Field(description="The manifest file (multi-document YAML).")
    objects: list[str] = Field(default_factory=list, description="kind/name of each object, in apply order.")
    manifests: list[dict[str, Any]] = Field(default_factory=list, description="The objects as written.")
    replicas: int = Field(description="vLLM pods (the Deployment's replicas): --replicas, or the default chosen.")
    chips_per_replica: int = Field(description="Chips (TPU) or GPUs each vLLM pod requests.")
    applied: bool = Field(default=False, description="The objects were created in the cluster.")
    notes: list[str] = Field(default_factory=list, description="What to know before applying.")


def kubeconfig() -> Path | None:
    """$KUBECONFIG's first file, else ~/.kube/config, when it exists."""
    first = (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
    path = Path(first).expanduser() if first else Path.home() / ".kube" / "config"
    return path if path.is_file() else None


def replica_choices(chip: str) -> list[int]:
    """The pod counts `deploy k8s` tries, in order, when --replicas is not given: 2 (a router in front of one pod
    balances nothing), then the more that split `chip` into pods GKE has a node shape for (a 4-chip TPU slice: 2 pods
    of 2 chips have no single-host topology, k8s.TPU_TOPOLOGY, so 4 of one), then 1 (a one-chip TPU: 2 do not split
    it; a model one chip of the slice cannot hold). GPUs give each pod one card, so 2 always. The old default of 2
    refused `--chip v5e-1` the user never chose."""
    tpu = k8s.accelerator(chip)[2] == "google.com/tpu"
    out = []
    for n in (2, 4, 8):
        try:
            share = replicas.replica_share(chip, "vllm-docker", n, 0)
        except ConfigError:
            continue
        if not tpu or share in k8s.TPU_TOPOLOGY:
            out.append(n)
            if not tpu:
                return out
    return [*out, 1]


def _replica_plan(request: DeployK8sRequest, count: int) -> tuple[Plan, int]:
    """The plan of one of `count` replicas and its chip share. Raises ConfigError when it does not fit."""
    share = replicas.replica_share(request.chip, "vllm-docker", count, 0)
    values = {"model": request.model, "chip": request.chip, "sets": request.sets}
    base = flag_table.with_sets(build_request(PlanRequest, values, user_input=False))
    plan = plan_replica(base, share, count, "--set tensor-parallel-size=N")
    if not plan.fits:
        raise ConfigError(
            f"the plan says one replica does not fit ({plan.verdict}); {plan.fit_hint(flag_table.SET_LENGTH)}"
        )
    return plan, share


def _chosen_plan(request: DeployK8sRequest) -> tuple[Plan, int, int]:
    """(plan, share, count) for the first of replica_choices whose replica fits (Llama-3.1-8B on a v5e-4: 4 pods of
    one 16 GiB chip do not hold its weights, 1 of four does); the last choice's refusal when none does."""
    choices = replica_choices(request.chip)
    for count in choices[:-1]:
        try:
            return (*_replica_plan(request, count), count)
        except ConfigError:
            continue
    return (*_replica_plan(request, choices[-1]), choices[-1])


def deploy_k8s(request: DeployK8sRequest) -> DeployResult:
    """Plan one replica for its share of `request.chip` (engines.replicas.replica_share: a v5e-4 with 4
    replicas is one chip per pod), build the manifests and write `request.out`/<name>.yaml. Without --replicas, the
    first of replica_choices whose replica fits, said in the first note. With `apply`, create them with the
    `kubernetes` client from the kubeconfig. Raises ConfigError (unknown chip, no GKE pool, a replica that does not
    fit, no kubeconfig for --apply), MissingDependencyError (`kubernetes` absent for --apply)."""
    chosen = request.replicas is None
    if request.replicas is None:
        plan, share, count = _chosen_plan(request)
    else:
        count = request.replicas
        plan, share = _replica_plan(request, count)
    request = request.model_copy(update={"replicas": count})
    docs = k8s.manifests(plan, request, share)
    path = Path(request.out) / f"{request.name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, k8s.to_yaml(docs))
    if request.router == "inferencepool":
        notes = [
            f"the HTTPRoute attaches to Gateway {request.gateway!r} in {request.namespace}: create it with an "
            "implementation that supports InferencePool (GKE Inference Gateway, Istio, kgateway, NGINX Gateway "
            f"Fabric), and install the InferencePool CRD first: kubectl apply -f https://github.com/kubernetes-sigs/"
            f"gateway-api-inference-extension/releases/download/{k8s.GIE_VERSION}/manifests.yaml",
        ]
    else:
        notes = [
            f"the router Service {request.name}-router is ClusterIP: vllm-router authenticates no client, so "
            "expose it only behind an authenticating gateway",
        ]
    if plan.model_source == "local":
        notes.append(
            f"{plan.model} is a checkpoint directory on this machine: the pods serve that path, so mount it there "
            "(a volume) or deploy the model's Hub id"
        )
    if request.hf_token_secret is None:
        notes.append("no --hf-token-secret: gated models will not download")
    if chosen:
        notes.insert(0, f"--replicas not given: {count} vLLM pod(s) of {share} {request.chip} chip(s) each "
                     "(one node each; pass --replicas to choose)")  # fmt: skip
    result = DeployResult(
        path=str(path), objects=[f"{d['kind']}/{d['metadata']['name']}" for d in docs], manifests=docs,
        replicas=count, chips_per_replica=share, notes=notes,
    )  # fmt: skip
    if request.apply:
        _apply(docs)
        result.applied = True
    return result


def _apply(docs: list[dict[str, Any]]) -> None:
    config = kubeconfig()
    if config is None:
        raise ConfigError("--apply needs a kubeconfig ($KUBECONFIG or ~/.kube/config); none found")
    try:
        from kubernetes import client, utils
        from kubernetes import config as kube_config
    except ImportError:
        raise MissingDependencyError("--apply needs the Kubernetes client: pip install kubernetes") from None
    kube_config.load_kube_config(config_file=str(config))
    api_client = client.ApiClient()
    custom = client.CustomObjectsApi(api_client)
    for doc in docs:
        if doc["kind"] in k8s.CUSTOM_PLURALS:  # utils.create_from_dict knows only the built-in kinds
            group, version = doc["apiVersion"].split("/")
            custom.create_namespaced_custom_object(
                group, version, doc["metadata"]["namespace"], k8s.CUSTOM_PLURALS[doc["kind"]], doc
            )
        else:
            utils.create_from_dict(api_client, doc)
