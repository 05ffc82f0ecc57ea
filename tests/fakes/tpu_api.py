"""A loopback fake of the Cloud TPU API (v2 nodes, v2alpha1 queued resources, long-running operations) and
of Secret Manager's `versions:access`, speaking their REST shapes; what ONECHIP_TPU_API_ENDPOINT points at.

    POST   /v2/projects/P/locations/Z/nodes?nodeId=N                 -> Operation (done after `create_s`)
    GET    /v2/projects/P/locations/Z/nodes[/N]                      -> Node / {"nodes": [...]}
    DELETE /v2/projects/P/locations/Z/nodes/N                        -> Operation (done)
    POST   /v2alpha1/projects/P/locations/Z/queuedResources?queuedResourceId=Q -> Operation
    GET    /v2alpha1/projects/P/locations/Z/queuedResources[/Q]      -> QueuedResource / {"queuedResources"}
    DELETE /v2alpha1/projects/P/locations/Z/queuedResources/Q?force=true -> Operation; FAILED_PRECONDITION
                                                                      while PROVISIONING
    GET    /v2/projects/P/locations/Z/operations/ID (and /v2alpha1/) -> Operation
    GET    /v1/projects/P/secrets/S/versions/latest:access           -> {"payload": {"data": base64}}

Each zone behaves as its `Zone` says, per provisioning model:
    "ok"           granted: a node goes CREATING -> READY after `create_s`; a queued resource waits
                   `wait_s` in WAITING_FOR_RESOURCES, `provisioning_s` in PROVISIONING, then ACTIVE
    "stockout"     node create: the operation ends with code 8 and the real 'no more capacity' message;
                   queued resource: FAILED with that error after `wait_s`
    "quota"        HTTP 429 RESOURCE_EXHAUSTED 'Quota limit ... has been exceeded' at create
    "unsupported"  HTTP 400 INVALID_ARGUMENT 'FLEX_START provisioning model is not supported for
                   accelerator type "v5litepod-1"' (the seed's message) at create
    "never"        a queued resource waits in WAITING_FOR_RESOURCES until its validUntilDuration, then FAILED
Every request is kept in `requests` (method, path with query, body text) so a test can assert what was sent
(e.g. that no create body holds the HF token). Time is real, so tests use fractions of a second.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

STOCKOUT = (
    'There is no more capacity in the zone "{zone}"; you can try in another zone where Cloud TPU Nodes are '
    "offered (see https://cloud.google.com/tpu/docs/regions) [EID: 0x1f2e3d4c5b6a7988]"
)
QUOTA = "Quota limit 'TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI' has been exceeded. Limit: 0 in zone {zone}."
UNSUPPORTED = 'FLEX_START provisioning model is not supported for accelerator type "{type}"'
EXPIRED = "Queued resource request expired: capacity was not available before its valid until time."


@dataclass
class Zone:
    """How one zone answers, per provisioning model (see the module docstring)."""

    flex: str = "ok"
    spot: str = "ok"
    on_demand: str = "ok"

    def rule(self, model: str) -> str:
        return {"flex-start": self.flex, "spot": self.spot, "on-demand": self.on_demand}[model]


@dataclass
class FakeTpuApi:
    """Start with `with FakeTpuApi(zones={...}) as api:`; `api.url` is the base URL."""

    zones: dict[str, Zone] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    external_ip: str = "127.0.0.1"
    create_s: float = 0.2
    wait_s: float = 0.2
    provisioning_s: float = 0.2
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    queued: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> FakeTpuApi:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                with fake.lock:
                    fake.requests.append((self.command, self.path, body))
                    status, answer = fake.handle(self.command, self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def sent_text(self) -> str:
        """Everything sent to the fake (paths and bodies), for asserting that no secret was."""
        return "\n".join(f"{m} {p} {b}" for m, p, b in self.requests)

    # --- routing

    def handle(self, method: str, raw_path: str, body: str) -> tuple[int, dict[str, Any]]:
        parts = urlsplit(raw_path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        path = parts.path
        if m := re.fullmatch(r"/v1/(projects/[^/]+/secrets/[^/]+)/versions/([^/:]+):access", path):
            return self._secret(m.group(1))
        m = re.fullmatch(r"/(v2|v2alpha1)/projects/([^/]+)/locations/([^/]+)/(\w+)(?:/([^/]+))?", path)
        if not m:
            return _error(404, "NOT_FOUND", f"no such path {path}")
        _, project, zone, collection, ident = m.groups()
        parent = f"projects/{project}/locations/{zone}"
        self._advance()
        if collection == "operations" and method == "GET":
            op = self.operations.get(f"{parent}/operations/{ident}")
            return (200, op) if op else _error(404, "NOT_FOUND", "operation not found")
        if collection == "nodes":
            return self._nodes(method, parent, zone, ident or query.get("nodeId"), body, ident is None)
        if collection == "queuedResources":
            return self._queued(method, parent, zone, ident or query.get("queuedResourceId"), body, ident is None)
        return _error(404, "NOT_FOUND", f"no such collection {collection}")

    def _secret(self, name: str) -> tuple[int, dict[str, Any]]:
        short = name.rsplit("/", 1)[-1]
        if short not in self.secrets:
            return _error(404, "NOT_FOUND", f"Secret [{name}] not found or has no versions.")
        data = base64.b64encode(self.secrets[short].encode()).decode()
        return 200, {"name": f"{name}/versions/1", "payload": {"data": data}}

    def _operation(self, parent: str, done_at: float, error: dict[str, Any] | None = None) -> dict[str, Any]:
        name = f"{parent}/operations/operation-{len(self.operations) + 1}"
        op: dict[str, Any] = {
            "name": name,
            "metadata": {"@type": "type.googleapis.com/google.cloud.common.OperationMetadata"},
            "done": False,
            "_done_at": done_at,
            "_error": error,
        }
        self.operations[name] = op
        return self._public(op)

    @staticmethod
    def _public(op: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in op.items() if not k.startswith("_")}

    # --- nodes

    def _nodes(self, method: str, parent: str, zone: str, ident: str | None, body: str, listing: bool):
        key = f"{parent}/nodes/{ident}"
        if method == "GET" and listing:
            return 200, {"nodes": [self._node_view(n) for k, n in self.nodes.items() if k.startswith(parent)]}
        if method == "GET":
            return (200, self._node_view(self.nodes[key])) if key in self.nodes else _error(404, "NOT_FOUND", "node")
        if method == "DELETE":
            if key not in self.nodes:
                return _error(404, "NOT_FOUND", f"node {ident} not found")
            del self.nodes[key]
            return 200, self._operation(parent, 0.0)
        node = json.loads(body or "{}")
        model = "spot" if (node.get("schedulingConfig") or {}).get("spot") else "on-demand"
        rule = self.zones.get(zone, Zone()).rule(model)
        if key in self.nodes:
            return _error(409, "ALREADY_EXISTS", f"node {ident} already exists")
        if rule == "quota":
            return _error(429, "RESOURCE_EXHAUSTED", QUOTA.format(zone=zone))
        done_at = time.monotonic() + self.create_s
        if rule == "stockout":
            return 200, self._operation(parent, done_at, {"code": 8, "message": STOCKOUT.format(zone=zone)})
        node.update(name=key, state="CREATING", createTime=_now(), _ready_at=done_at)
        self.nodes[key] = node
        return 200, self._operation(parent, done_at)

    def _node_view(self, node: dict[str, Any]) -> dict[str, Any]:
        view = {k: v for k, v in node.items() if not k.startswith("_")}
        if view.get("state") == "READY":
            view["networkEndpoints"] = [
                {"ipAddress": "10.130.0.2", "port": 8470, "accessConfig": {"externalIp": self.external_ip}}
            ]
        return view

    # --- queued resources

    def _queued(self, method: str, parent: str, zone: str, ident: str | None, body: str, listing: bool):
        key = f"{parent}/queuedResources/{ident}"
        if method == "GET" and listing:
            return 200, {"queuedResources": [self._public(q) for k, q in self.queued.items() if k.startswith(parent)]}
        if method == "GET":
            return (200, self._public(self.queued[key])) if key in self.queued else _error(404, "NOT_FOUND", "qr")
        if method == "DELETE":
            return self._delete_queued(parent, key)
        qr = json.loads(body or "{}")
        spec = qr["tpu"]["nodeSpec"][0]
        rule = self.zones.get(zone, Zone()).rule(
            "flex-start" if qr.get("provisioningModel") == "FLEX_START" else "spot"
        )
        if rule == "unsupported":
            return _error(400, "INVALID_ARGUMENT", UNSUPPORTED.format(type=spec["node"]["acceleratorType"]))
        if rule == "quota":
            return _error(429, "RESOURCE_EXHAUSTED", QUOTA.format(zone=zone))
        now = time.monotonic()
        valid_s = float(str(qr.get("queueingPolicy", {}).get("validUntilDuration", "3600s")).rstrip("s"))
        qr.update(name=key, createTime=_now(), state={"state": "WAITING_FOR_RESOURCES"}, _rule=rule,
                  _provision_at=now + self.wait_s, _active_at=now + self.wait_s + self.provisioning_s,
                  _expire_at=now + valid_s, _spec=spec)  # fmt: skip
        self.queued[key] = qr
        return 200, self._operation(parent, now)

    def _delete_queued(self, parent: str, key: str):
        qr = self.queued.get(key)
        if qr is None:
            return _error(404, "NOT_FOUND", "queued resource not found")
        if qr["state"]["state"] == "PROVISIONING":
            return _error(400, "FAILED_PRECONDITION", "Cannot delete a queued resource in state PROVISIONING.")
        del self.queued[key]
        self.nodes.pop(f"{qr['_spec']['parent']}/nodes/{qr['_spec']['nodeId']}", None)
        return 200, self._operation(parent, 0.0)

    # --- time passes

    def _advance(self) -> None:
        now = time.monotonic()
        for op in self.operations.values():
            if not op["done"] and now >= op["_done_at"]:
                op["done"] = True
                if op["_error"]:
                    op["error"] = op["_error"]
                else:
                    op["response"] = {"@type": "type.googleapis.com/google.cloud.tpu.v2.Node"}
        for node in self.nodes.values():
            if node.get("state") == "CREATING" and now >= node["_ready_at"]:
                node["state"] = "READY"
        for qr in self.queued.values():
            self._advance_queued(qr, now)

    def _advance_queued(self, qr: dict[str, Any], now: float) -> None:
        state = qr["state"]["state"]
        rule = qr["_rule"]
        if state == "WAITING_FOR_RESOURCES":
            if rule == "never" and now >= qr["_expire_at"]:
                qr["state"] = {"state": "FAILED", "failedData": {"error": {"code": 4, "message": EXPIRED}}}
            elif rule == "stockout" and now >= qr["_provision_at"]:
                error = {"code": 8, "message": STOCKOUT.format(zone=qr["name"].split("/")[3])}
                qr["state"] = {"state": "FAILED", "failedData": {"error": error}}
            elif rule == "ok" and now >= qr["_provision_at"]:
                qr["state"] = {"state": "PROVISIONING"}
        elif state == "PROVISIONING" and now >= qr["_active_at"]:
            qr["state"] = {"state": "ACTIVE"}
            spec = qr["_spec"]
            node = dict(spec["node"], name=f"{spec['parent']}/nodes/{spec['nodeId']}", state="READY", createTime=_now())
            self.nodes[node["name"]] = node


def _error(status: int, name: str, message: str) -> tuple[int, dict[str, Any]]:
    """Google's error body: {"error": {"code": HTTP status, "message", "status": gRPC status name}}."""
    return status, {"error": {"code": status, "message": message, "status": name}}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
