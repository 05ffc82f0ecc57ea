"""`onechip deploy k8s`: the replica deployment as Kubernetes manifests for GKE (TPU or GPU node pools).

    manifests(plan, request, share) -> list[dict]   vLLM Deployment (the planned serve flags), its Service, and
                                                    the router: `--router vllm-router` (default) with Kubernetes
                                                    service discovery (ServiceAccount, Role to watch pods,
                                                    RoleBinding, Deployment, Service), or `--router
                                                    inferencepool`: the Gateway API Inference Extension
                                                    (InferencePool, endpoint picker ConfigMap, ServiceAccount,
                                                    Roles, Deployment, Service, HTTPRoute to a named Gateway)
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
from onechip.planner.rules import chip_key
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
# Gateway API Inference Extension v1.5.0 (the last release whose repository ships the endpoint picker and its
# chart; tests/fixtures/k8s-schemas/SOURCE.md): the InferencePool API, the EPP image its chart pins
# (config/charts/inferencepool/values.yaml inferenceExtension.image, tag v1.5.0), its ports (epplib
# _deployment.yaml: grpc ext-proc 9002, grpc health 9003, metrics 9090) and default plugins (epplib
# _config.yaml for vllm over http). The HTTPRoute is Gateway API v1 (standard channel, v1.5.1).
GIE_VERSION = "v1.5.0"
INFERENCE_POOL_API = "inference.networking.k8s.io/v1"
HTTP_ROUTE_API = "gateway.networking.k8s.io/v1"
EPP_IMAGE = f"registry.k8s.io/gateway-api-inference-extension/epp:{GIE_VERSION}"
EPP_PORTS = {"grpc": 9002, "grpc-health": 9003, "metrics": 9090}
EPP_CONFIG_FILE = "default-plugins.yaml"
CUSTOM_PLURALS = {"InferencePool": "inferencepools", "HTTPRoute": "httproutes"}  # resource names in the CRDs
EPP_PLUGINS: dict[str, Any] = {
    "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
    "kind": "EndpointPickerConfig",
    "plugins": [
        {"type": "queue-scorer"},
        {"type": "kv-cache-utilization-scorer"},
        {"type": "prefix-cache-scorer"},
        {"type": "metrics-data-source",
         "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True}},
        {"type": "core-metrics-extractor"},
    ],
    "schedulingProfiles": [{"name": "default", "plugins": [
        {"pluginRef": "queue-scorer", "weight": 2},
        {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
        {"pluginRef": "prefix-cache-scorer", "weight": 3},
    ]}],
}  # fmt: skip


def accelerator(chip: str) -> tuple[str, str, str]:
    """The GKE labels of `chip` as the planner resolved it ('H100', 'nvidia-l4' are the catalog's h100, l4)."""
    key = chip_key(chip)
    family = key.split("-")[0] if key.startswith("v") else key
    if family not in GKE_ACCELERATORS:
        raise ConfigError(f"deploy k8s: no GKE node pool known for --chip {chip}; known: {', '.join(GKE_ACCELERATORS)}")
    return GKE_ACCELERATORS[family]


def _meta(name: str, namespace: str, app: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {"app": app, "app.kubernetes.io/managed-by": "onechip"}}


def engine_container(plan: Plan, request: DeployK8sRequest, share: int) -> tuple[dict[str, Any], dict[str, str]]:
    """The vLLM container (the planned serve command in the pod) and the pod's node selector."""
    target = ServeTarget(kind="vllm", port=ENGINE_PORT, bind_host="0.0.0.0", launcher=["vllm", "serve"])  # noqa: S104
    command = flags.serve_command(plan, target)
    label, value, resource = accelerator(plan.chip)
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
    """Every object `deploy k8s` writes, in apply order: the vLLM Deployment and Service, then the router
    (`request.router`: vllm-router, or an InferencePool with its endpoint picker and HTTPRoute). Raises
    ConfigError for a chip GKE has no pool for, or a vllm-router policy asked of the endpoint picker."""
    ns, engine_app = request.namespace, f"{request.name}-vllm"
    container, selector = engine_container(plan, request, share)
    pod = {
        "nodeSelector": selector, "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }  # fmt: skip
    count = request.replicas or 1  # api.deploy_k8s sets the default it chose (default_replicas) before this
    objects = [_deployment(engine_app, ns, pod, count), _service(engine_app, ns, ENGINE_PORT)]
    if request.router == "inferencepool":
        return objects + inference_pool_objects(request, engine_app)
    return objects + router_objects(request, engine_app)


def router_objects(request: DeployK8sRequest, engine_app: str) -> list[dict[str, Any]]:
    """vllm-router discovering the engine pods by label: ServiceAccount, Role (watch pods), RoleBinding,
    Deployment, Service."""
    ns, router_app = request.namespace, f"{request.name}-router"
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
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    router = _deployment(router_app, ns, {"serviceAccountName": router_app, "containers": [router_container]})
    return [*_account(router_app, ns, {router_app: rules}), router, _service(router_app, ns, ROUTER_PORT)]


def inference_pool_objects(request: DeployK8sRequest, engine_app: str) -> list[dict[str, Any]]:
    """The Gateway API Inference Extension in front of the engine pods, as its v1.5.0 Helm chart renders it
    (config/charts/inferencepool with epplib; provider none, one EPP replica, tracing and the Prometheus
    ServiceMonitor off): the InferencePool selecting the pods, the endpoint picker's ConfigMap (the chart's
    default plugins), ServiceAccount with its two Roles (pods; inferencepools and the x-k8s objectives),
    Deployment and Service, and an HTTPRoute from the Gateway `request.gateway` to the pool. Raises
    ConfigError when a vllm-router policy other than cache_aware is asked: the EPP scores endpoints by prefix
    cache, queue and KV-cache use (its plugins), it has no such policies."""
    if request.router_policy != "cache_aware":
        raise ConfigError(
            f"--router-policy {request.router_policy} is a vllm-router policy; the InferencePool's endpoint picker "
            "scores by prefix cache, queue and KV cache (its default plugins): leave --router-policy out"
        )
    ns, pool, epp = request.namespace, f"{request.name}-pool", f"{request.name}-epp"
    gie = INFERENCE_POOL_API.split("/")[0]
    inference_pool = {
        "apiVersion": INFERENCE_POOL_API, "kind": "InferencePool", "metadata": _meta(pool, ns, pool),
        "spec": {
            "targetPorts": [{"number": ENGINE_PORT}], "appProtocol": "http",
            "selector": {"matchLabels": {"app": engine_app}},
            "endpointPickerRef": {"name": epp, "port": {"number": EPP_PORTS["grpc"]}, "failureMode": "FailOpen"},
        },
    }  # fmt: skip
    config = {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(epp, ns, epp),
        "data": {EPP_CONFIG_FILE: yaml.safe_dump(EPP_PLUGINS, sort_keys=False)},
    }  # fmt: skip
    field = {"NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}
    probe = {"grpc": {"port": EPP_PORTS["grpc-health"], "service": "inference-extension"}}
    container = {
        "name": "epp", "image": EPP_IMAGE, "imagePullPolicy": "Always", "args": epp_args(request, pool),
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"memory": "16Gi"}},
        "ports": [{"name": name, "containerPort": port} for name, port in EPP_PORTS.items()],
        "livenessProbe": probe | {"initialDelaySeconds": 5, "periodSeconds": 10},
        "readinessProbe": probe | {"periodSeconds": 2},
        "env": [{"name": k, "valueFrom": {"fieldRef": {"fieldPath": v}}} for k, v in field.items()],
        "volumeMounts": [{"name": "plugins-config-volume", "mountPath": "/config"}],
    }  # fmt: skip
    pod = {
        "serviceAccountName": epp, "terminationGracePeriodSeconds": 130, "containers": [container],
        "volumes": [{"name": "plugins-config-volume", "configMap": {"name": epp}}],
    }  # fmt: skip
    picker = _deployment(epp, ns, pod)
    picker["spec"]["strategy"] = {"type": "Recreate"}  # the chart: one active EPP holds the prefix-cache state
    verbs = ["get", "watch", "list"]
    roles = {
        f"{epp}-sa": [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}],
        f"{epp}-non-sa": [
            {"apiGroups": ["inference.networking.x-k8s.io"], "verbs": verbs,
             "resources": ["inferenceobjectives", "inferencemodelrewrites"]},
            {"apiGroups": [gie], "resources": ["inferencepools"], "verbs": verbs},
        ],
    }  # fmt: skip
    ports = [
        {"name": "grpc-ext-proc", "protocol": "TCP", "port": EPP_PORTS["grpc"]},
        {"name": "http-metrics", "protocol": "TCP", "port": EPP_PORTS["metrics"]},
    ]
    route = {
        "apiVersion": HTTP_ROUTE_API, "kind": "HTTPRoute", "metadata": _meta(pool, ns, pool),
        "spec": {
            "parentRefs": [{"group": HTTP_ROUTE_API.split("/")[0], "kind": "Gateway", "name": request.gateway}],
            "rules": [{
                "backendRefs": [{"group": gie, "kind": "InferencePool", "name": pool}],
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "timeouts": {"request": "300s"},
            }],
        },
    }  # fmt: skip
    return [inference_pool, config, *_account(epp, ns, roles), picker, _service(epp, ns, ports), route]


def epp_args(request: DeployK8sRequest, pool: str) -> list[str]:
    """The endpoint picker's flags as the v1.5.0 chart writes them for a vLLM pool (pool flags, JSON logs, the
    plugin file, `inferenceExtension.flags` v=1, tracing off)."""
    return [
        "--pool-name", pool, "--pool-namespace", request.namespace, "--pool-group", INFERENCE_POOL_API.split("/")[0],
        "--zap-encoder", "json", "--config-file", f"/config/{EPP_CONFIG_FILE}", "--v", "1", "--tracing=false",
    ]  # fmt: skip


def _deployment(app: str, namespace: str, pod: dict[str, Any], replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(app, namespace, app),
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}}, "spec": pod},
        },
    }  # fmt: skip


def _service(app: str, namespace: str, port: int | list[dict[str, Any]]) -> dict[str, Any]:
    """A ClusterIP Service in front of the pods labelled app=`app`: one HTTP `port`, or these `ports`."""
    ports = [{"name": "http", "port": port, "targetPort": port}] if isinstance(port, int) else port
    return {
        "apiVersion": "v1", "kind": "Service", "metadata": _meta(app, namespace, app),
        "spec": {"selector": {"app": app}, "ports": ports},
    }  # fmt: skip


def _account(app: str, namespace: str, roles: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """ServiceAccount `app`, then a Role and a RoleBinding (to that account) per entry of `roles` (name: rules)."""
    rbac = "rbac.authorization.k8s.io"
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(app, namespace, app)}]
    for name, rules in roles.items():
        out.append(
            {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": _meta(name, namespace, app), "rules": rules}
        )
        out.append({
            "apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": _meta(name, namespace, app),
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": app, "namespace": namespace}],
        })  # fmt: skip
    return out


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """One multi-document YAML file (kubectl apply -f)."""
    return yaml.safe_dump_all(docs, sort_keys=False)
