"""`onechip deploy k8s`: the replica deployment as Kubernetes manifests for GKE (TPU or GPU node pools).

    manifests(plan, request, share) -> list[dict]   vLLM Deployment (the planned serve flags), its Service, and
                                                    vllm-router with Kubernetes service discovery (ServiceAccount,
                                                    Role to watch pods, RoleBinding, Deployment, Service)
    to_yaml(docs) -> str                            one multi-document YAML file

The serve command is onechip.vllm.flags.serve_command of the plan (bound to 0.0.0.0 in the pod, port 8000),
so the flags are the ones `plan` prints; the router flags are engines.router's, with `--service-discovery
--selector app=NAME` in place of `--worker-urls` (vllm-router 0.1.17 --help: "Enable Kubernetes service
discovery", "Label selector ... key1=value1", `--service-discovery-port`, `--service-discovery-namespace`).

GKE node selection (cloud.google.com/gke-* labels and the google.com/tpu / nvidia.com/gpu resources) follows
GKE's docs "Plan TPUs in GKE" (tpu-v5-lite-podslice and tpu-v6e-slice with topologies 1x1, 2x2, 2x4) and
"About GPUs in GKE" (cloud.google.com/gke-accelerator values). The HF token is referenced by Secret name only.
The router image: vllm-router publishes a wheel, not an image, so the default pod installs the pinned wheel into
python:3.12-slim at start (the cluster needs PyPI; `--router-image` names an image that has it).
"""

from __future__ import annotations

from typing import Any

import yaml

from onechip.engines.router import HEALTH_CHECK_INTERVAL_S
from onechip.errors import ConfigError
from onechip.schemas import Plan, ServeTarget
from onechip.schemas.requests import DeployK8sRequest
from onechip.vllm import flags

ENGINE_PORT = 8000
ROUTER_PORT = 30000
ROUTER_VERSION = "0.1.17"
ROUTER_BASE_IMAGE = "python:3.12-slim"
# GKE node labels per onechip chip: (accelerator label key, value, device resource); TPU topologies by chips
GKE_ACCELERATORS: dict[str, tuple[str, str, str]] = {
    "v5e": ("cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice", "google.com/tpu"),
    "v6e": ("cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice", "google.com/tpu"),
    "l4": ("cloud.google.com/gke-accelerator", "nvidia-l4", "nvidia.com/gpu"),
    "a100-40gb": ("cloud.google.com/gke-accelerator", "nvidia-tesla-a100", "nvidia.com/gpu"),
    "a100-80gb": ("cloud.google.com/gke-accelerator", "nvidia-a100-80gb", "nvidia.com/gpu"),
    "h100": ("cloud.google.com/gke-accelerator", "nvidia-h100-80gb", "nvidia.com/gpu"),
    "h200": ("cloud.google.com/gke-accelerator", "nvidia-h200-141gb", "nvidia.com/gpu"),
    "b200": ("cloud.google.com/gke-accelerator", "nvidia-b200", "nvidia.com/gpu"),
}
TPU_TOPOLOGY = {1: "1x1", 4: "2x2", 8: "2x4"}


def _accelerator(chip: str) -> tuple[str, str, str]:
    family = chip.split("-")[0] if chip.startswith("v") else chip
    if family not in GKE_ACCELERATORS:
        raise ConfigError(f"deploy k8s: no GKE node pool known for --chip {chip}; known: {', '.join(GKE_ACCELERATORS)}")
    return GKE_ACCELERATORS[family]


def _meta(name: str, namespace: str, app: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {"app": app, "app.kubernetes.io/managed-by": "onechip"}}


def engine_container(plan: Plan, request: DeployK8sRequest, share: int) -> tuple[dict[str, Any], dict[str, str]]:
    """The vLLM container (the planned serve command in the pod) and the pod's node selector."""
    target = ServeTarget(kind="vllm", port=ENGINE_PORT, bind_host="0.0.0.0", launcher=["vllm", "serve"])  # noqa: S104
    command = flags.serve_command(plan, target)
    label, value, resource = _accelerator(plan.chip)
    selector = {label: value}
    if resource == "google.com/tpu":
        if share not in TPU_TOPOLOGY:
            raise ConfigError(f"deploy k8s: {share} TPU chips per replica has no single-host GKE topology (1, 4, 8)")
        selector["cloud.google.com/gke-tpu-topology"] = TPU_TOPOLOGY[share]
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in command.env.items()]
    if request.hf_token_secret:
        secret = {"secretKeyRef": {"name": request.hf_token_secret, "key": "token"}}
        env.append({"name": "HF_TOKEN", "valueFrom": secret})
    image = request.image or flags.default_image(plan)
    if image is None:
        raise ConfigError(f"deploy k8s: no default image for {plan.engine}; pass --image")
    container = {
        "name": "vllm", "image": image, "command": command.argv[:2], "args": command.argv[2:], "env": env,
        "ports": [{"name": "http", "containerPort": ENGINE_PORT}],
        "resources": {"limits": {resource: str(share)}, "requests": {resource: str(share)}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": ENGINE_PORT}, "periodSeconds": 10},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }  # fmt: skip
    return container, selector


def router_args(request: DeployK8sRequest, app: str) -> list[str]:
    """vllm-router in the cluster: discovers the engine pods by label instead of --worker-urls."""
    return [
        "--host", "0.0.0.0", "--port", str(ROUTER_PORT), "--policy", request.router_policy,  # noqa: S104
        "--service-discovery", "--selector", f"app={app}", "--service-discovery-port", str(ENGINE_PORT),
        "--service-discovery-namespace", request.namespace,
        "--health-check-interval-secs", str(HEALTH_CHECK_INTERVAL_S),
    ]  # fmt: skip


def manifests(plan: Plan, request: DeployK8sRequest, share: int) -> list[dict[str, Any]]:
    """Every object `deploy k8s` writes, in apply order. Raises ConfigError for a chip GKE has no pool for."""
    ns, name = request.namespace, request.name
    engine_app, router_app = f"{name}-vllm", f"{name}-router"
    container, selector = engine_container(plan, request, share)
    pod = {
        "nodeSelector": selector, "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }  # fmt: skip
    engine = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(engine_app, ns, engine_app),
        "spec": {
            "replicas": request.replicas, "selector": {"matchLabels": {"app": engine_app}},
            "template": {"metadata": {"labels": {"app": engine_app}}, "spec": pod},
        },
    }  # fmt: skip
    engine_svc = _service(engine_app, ns, ENGINE_PORT)
    router_container: dict[str, Any]
    if request.router_image:
        router_container = {"name": "router", "image": request.router_image, "command": ["vllm-router"]}
        router_container["args"] = router_args(request, engine_app)
    else:
        line = " ".join(["exec", "vllm-router", *router_args(request, engine_app)])
        install = f"pip install --no-cache-dir vllm-router=={ROUTER_VERSION} && {line}"
        router_container = {"name": "router", "image": ROUTER_BASE_IMAGE, "command": ["sh", "-c", install]}
    router_container |= {
        "ports": [{"name": "http", "containerPort": ROUTER_PORT}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": ROUTER_PORT}, "periodSeconds": 10},
    }
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(router_app, ns, router_app)}
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(router_app, ns, router_app),
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
    }  # fmt: skip
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": _meta(router_app, ns, router_app),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": router_app},
        "subjects": [{"kind": "ServiceAccount", "name": router_app, "namespace": ns}],
    }  # fmt: skip
    router = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(router_app, ns, router_app),
        "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": router_app}},
            "template": {
                "metadata": {"labels": {"app": router_app}},
                "spec": {"serviceAccountName": router_app, "containers": [router_container]},
            },
        },
    }  # fmt: skip
    return [engine, engine_svc, account, role, binding, router, _service(router_app, ns, ROUTER_PORT)]


def _service(app: str, namespace: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Service", "metadata": _meta(app, namespace, app),
        "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": port, "targetPort": port}]},
    }  # fmt: skip


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """One multi-document YAML file (kubectl apply -f)."""
    return yaml.safe_dump_all(docs, sort_keys=False)
