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
                   with code 4 DEADLINE_EXCEEDED ('Deadline exceeded ...', the failure issue 24 reports)
    "internal"     a queued resource FAILED with code 13 INTERNAL after `wait_s` (not the zone's capacity)
    "op-stockout"  flex-start: the create's operation ends with code 8 and no queued resource exists (issue
                   25: a flex-start stockout that was read as "not found")
A zone with `capacity` N grants N TPUs at most: a create past them (nodes and queued resources it holds)
stocks out as "stockout" does, whatever the rule (a set of TPUs whose second one is refused).
A granted queued resource turns SUSPENDED (its node deleted) `run_s` after ACTIVE when `run_s` is set: the
end of a flex-start run. `put` places a resource in any state of the API's enums (labelled or not).

Failure injection, for the state-machine tests: `faults` is a list of `Fault(method, path regex, kind,
times, after)`; the first request matching one is answered with `kind` (and `times` counts down):
    400 401 403 404 409 429 500 503 ...  Google's error body with that HTTP status (the request has no effect)
    "rate-limit" HTTP 429 RESOURCE_EXHAUSTED with an ErrorInfo RATE_LIMIT_EXCEEDED detail and Service Control's
                 'Quota exceeded for quota metric ... per minute' message (no effect)
    "html"       HTTP 200 with an HTML page (a proxy or login page, not the API)
    "truncated"  HTTP 200 with the JSON cut in half
    "shape"      HTTP 200 with a JSON object of the wrong shape
    "timeout"    the request takes effect, then the answer comes once the client gave up (closed the connection
                 at its timeout), or after `hang_s`
    "lost-500"   the request takes effect, then is answered HTTP 500 INTERNAL (a front end failed after the
                 backend acted: the create landed, its answer did not)
    "empty"      HTTP 200 with an empty body (a proxy's; Google's API always sends a JSON object, '{}' at least)
    "retry-after" HTTP 503 UNAVAILABLE with a Retry-After header of `retry_after_s` seconds (no effect)
    "stockout-429" HTTP 429 RESOURCE_EXHAUSTED with the zone's 'no more capacity' message (no effect)
    "quota-403"  HTTP 403 PERMISSION_DENIED with the zone's 'Quota limit ... has been exceeded' message (no effect)
    "bare-429"   HTTP 429 with no body, and a Retry-After of `retry_after_s` seconds (a front end's refusal; no effect)
    "location-403" HTTP 403 PERMISSION_DENIED 'Location Z is not found or access is unauthorized.' (what Google's
                 APIs answer for a zone the project may not use, or that does not exist: googleapiclient's HttpError
                 quoted in skypilot-org/skypilot's GCP failover handler; no effect)
    "iam-403"    HTTP 403 PERMISSION_DENIED in the location's words ('Location Z is not found or access is
                 unauthorized.') whose google.rpc.ErrorInfo reason is IAM_PERMISSION_DENIED (domain iam.googleapis.com,
                 the permission in its metadata): a permission the caller lacks, worded so that what exists is not
                 told (ErrorInfo's reason is the error's machine-readable cause, cloud.google.com/apis/design/errors;
                 no effect)
    "rate-limit-403" HTTP 403 with the older JSON APIs' rate-limit body: errors[].reason rateLimitExceeded, domain
                 usageLimits (Compute Engine's 'Rate Limit Exceeded'; no effect)
    "precondition" HTTP 400 FAILED_PRECONDITION (google.rpc.Code's HTTP mapping, cloud.google.com/apis/design/errors:
                 'the system is not in a state required for the operation'; what the API answers a delete of a
                 resource in a state it cannot delete from, a node's included; no effect)
    "retry-info" HTTP 429 RESOURCE_EXHAUSTED, a rate limit (ErrorInfo RATE_LIMIT_EXCEEDED) whose google.rpc.RetryInfo
                 detail asks for `retry_after_s` seconds (retryDelay, a google.protobuf.Duration: '2s'), and no
                 Retry-After header (no effect)
    "echo-auth"  HTTP 400 INVALID_ARGUMENT whose message quotes the request's Authorization header (a proxy that
                 echoes what it was sent; no effect): what a secret must never get through to the user
A queued resource's create answers a `requestId` it has seen with that request's operation and makes nothing
(AIP-155: the same request is executed once), unless `honour_request_id` is False (then the queuedResourceId alone
answers a repeat ALREADY_EXISTS, as AIP-133 says of any create with a taken id). A delete takes `delete_s` (0: at
once; `delete_s_of` a resource's own, by its id): the resource shows DELETING until its operation is done, then is
gone, as the real API's are. Lists answer
`page_size` items a page (0: all) with `nextPageToken`; a zone in `unreachable` lists nothing and names its location in
the answer's `unreachable` (ListNodesResponse / ListQueuedResourcesResponse: 'Locations that could not be reached';
AIP-217: a list that could not reach part of what it lists says so there, HTTP 200). Every request is kept in
`requests` (method, path with query, body text) and its Authorization header in `authorizations`, so a test can
assert what was sent (e.g. that no create body holds the HF token, and a token only ever travels in the header).
Time is real, so tests use fractions of a second.
"""

from __future__ import annotations

import base64
import json
import re
import select
import threading
import time
from collections.abc import Callable
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
INTERNAL = "An internal error has occurred. Please retry the request."
EXPIRED = "Deadline exceeded: the request was not fulfilled before its valid until time."
RATE_LIMIT = (
    "Quota exceeded for quota metric 'Create requests' and limit 'Create requests per minute per project' "
    "of service 'tpu.googleapis.com' for consumer 'project_number:123456789'."
)
LOCATION = "Location {zone} is not found or access is unauthorized."  # a 403 PERMISSION_DENIED (skypilot's quote)
UNKNOWN_ZONE = "Resource '{parent}' was not found"  # google.rpc NOT_FOUND for a location the API does not have
_STATUS_NAME = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}  # fmt: skip


@dataclass
class Fault:
    """Answer the next `times` requests whose method is `method` and whose path matches `path` with `kind`
    (after letting the first `after` of them through); `then` is called (under the fake's lock) as the last of
    them is answered: what the API does once an outage ends, in the order of requests, not of wall-clock time."""

    method: str
    path: str
    kind: int | str
    times: int = 1
    after: int = 0
    then: Callable[[], None] | None = None


@dataclass
class Zone:
    """How one zone answers, per provisioning model (see the module docstring)."""

    flex: str = "ok"
    spot: str = "ok"
    on_demand: str = "ok"
    capacity: int | None = None

    def rule(self, model: str, held: int = 0) -> str:
        if self.capacity is not None and held >= self.capacity:
            return "stockout"
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
    run_s: float | None = None
    delete_s: float = 0.0
    delete_s_of: dict[str, float] = field(default_factory=dict)  # node or queued resource id -> its delete's seconds
    page_size: int = 0
    hang_s: float = 1.0
    retry_after_s: int = 1
    faults: list[Fault] = field(default_factory=list)
    honour_request_id: bool = True
    only_zones: bool = False  # a location not in `zones` answers 404 NOT_FOUND, as the API answers a zone it has not
    unreachable: set[str] = field(default_factory=set)  # zones whose lists answer 200 with them in `unreachable`
    request_ids: dict[str, dict[str, Any]] = field(default_factory=dict)  # requestId -> the operation it answered
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)  # each request's Authorization header ('' when none)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    queued: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    clock_offset_s: float = 0.0  # the API's clock less this machine's: its Date headers and createTimes

    def __enter__(self) -> FakeTpuApi:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def date_time_string(self, timestamp: float | None = None) -> str:  # the Date header, by the API's clock
                return super().date_time_string(time.time() + fake.clock_offset_s if timestamp is None else timestamp)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                with fake.lock:
                    fake.requests.append((self.command, self.path, body))
                    fake.authorizations.append(self.headers.get("Authorization") or "")
                    fault = fake._fault(self.command, self.path)
                    if isinstance(fault, int):
                        status, answer = _error(fault, _STATUS_NAME.get(fault, "UNKNOWN"), f"injected HTTP {fault}")
                    elif fault == "lost-500":
                        fake.handle(self.command, self.path, body)
                        status, answer = _error(500, "INTERNAL", INTERNAL)
                    elif fault == "retry-after":
                        status, answer = _error(503, "UNAVAILABLE", "The service is currently unavailable.")
                    elif fault == "precondition":
                        status, answer = _error(400, "FAILED_PRECONDITION", "injected: not in a state for this request")
                    elif fault == "echo-auth":
                        said = self.headers.get("Authorization") or "none"
                        status, answer = _error(400, "INVALID_ARGUMENT", f"cannot use the credentials {said}")
                    elif fault == "stockout-429":
                        zone = self.path.split("/locations/", 1)[-1].split("/", 1)[0]
                        status, answer = _error(429, "RESOURCE_EXHAUSTED", STOCKOUT.format(zone=zone))
                    elif fault == "quota-403":
                        zone = self.path.split("/locations/", 1)[-1].split("/", 1)[0]
                        status, answer = _error(403, "PERMISSION_DENIED", QUOTA.format(zone=zone))
                    elif fault == "bare-429":
                        status, answer = 429, {}
                    elif fault == "location-403":
                        zone = self.path.split("/locations/", 1)[-1].split("/", 1)[0]
                        status, answer = _error(403, "PERMISSION_DENIED", LOCATION.format(zone=zone))
                    elif fault == "iam-403":
                        zone = self.path.split("/locations/", 1)[-1].split("/", 1)[0]
                        status, answer = _error(403, "PERMISSION_DENIED", LOCATION.format(zone=zone))
                        answer["error"]["details"] = [
                            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "IAM_PERMISSION_DENIED",
                             "domain": "iam.googleapis.com", "metadata": {"permission": "tpu.nodes.create"}}
                        ]  # fmt: skip
                    elif fault == "rate-limit-403":
                        status, answer = _error(403, "PERMISSION_DENIED", "Rate Limit Exceeded")
                        answer["error"]["errors"] = [
                            {"message": "Rate Limit Exceeded", "domain": "usageLimits", "reason": "rateLimitExceeded"}
                        ]
                    elif fault == "rate-limit":
                        status, answer = _error(429, "RESOURCE_EXHAUSTED", RATE_LIMIT)
                        answer["error"]["details"] = [
                            {
                                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                "reason": "RATE_LIMIT_EXCEEDED",
                                "domain": "googleapis.com",
                            }
                        ]
                    elif fault == "retry-info":
                        status, answer = _error(429, "RESOURCE_EXHAUSTED", RATE_LIMIT)
                        delay = f"{fake.retry_after_s}s"  # google.protobuf.Duration in JSON
                        answer["error"]["details"] = [
                            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
                             "domain": "googleapis.com"},
                            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
                        ]  # fmt: skip
                    else:
                        status, answer = fake.handle(self.command, self.path, body)
                data = json.dumps(answer).encode()
                kind = "application/json"
                if fault == "timeout":  # no answer until the client gave up (closed its end), or hang_s passed
                    select.select([self.connection], [], [], fake.hang_s)
                elif fault == "html":
                    data, kind = b"<!DOCTYPE html><html><body>Sign in</body></html>", "text/html"
                elif fault == "truncated":
                    data = data[: len(data) // 2]
                elif fault == "shape":
                    data = b'{"unexpected": [1, 2, 3]}'
                elif fault in ("empty", "bare-429"):
                    data = b""
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    if fault in ("retry-after", "bare-429"):
                        self.send_header("Retry-After", str(fake.retry_after_s))
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up waiting ("timeout"): the request took effect anyway
                    pass

            do_GET = do_POST = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _fault(self, method: str, path: str) -> int | str | None:
        for fault in self.faults:
            if fault.times > 0 and fault.method == method and re.search(fault.path, path):
                if fault.after > 0:
                    fault.after -= 1
                    continue
                fault.times -= 1
                if fault.times == 0 and fault.then is not None:
                    fault.then()
                return fault.kind
        return None

    def put(self, kind: str, zone: str, name: str, state: str, *, labelled: bool = True, project: str = "proj-1",
            spot: bool = False) -> None:  # fmt: skip
        """Place a queued resource (with its node when ACTIVE) or a node in `state`, as if created earlier."""
        parent = f"projects/{project}/locations/{zone}"
        labels = {"created-by": "onechip"} if labelled else {}
        node = {"acceleratorType": "v5litepod-1", "runtimeVersion": "v2-alpha-tpuv5-lite", "labels": labels}
        if spot:
            node["schedulingConfig"] = {"spot": True}
        if kind == "node":
            key = f"{parent}/nodes/{name}"
            self.nodes[key] = dict(node, name=key, state=state, createTime=self._now(), _ready_at=time.monotonic())
            return
        key = f"{parent}/queuedResources/{name}"
        spec = {"parent": parent, "nodeId": f"{name}-node", "node": node}
        now = time.monotonic()
        self.queued[key] = {"name": key, "createTime": self._now(), "tpu": {"nodeSpec": [spec]},
                            "state": {"state": state}, "provisioningModel": "FLEX_START", "_rule": "ok", "_spec": spec,
                            "_provision_at": now,
                            "_active_at": now + self.provisioning_s, "_expire_at": now + 3600}  # fmt: skip
        if state == "ACTIVE":
            self._grant(self.queued[key], now)

    def _now(self) -> str:
        """Now by the API's clock, as its createTime says it."""
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + self.clock_offset_s))

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
        if self.only_zones and zone not in self.zones:
            return _error(404, "NOT_FOUND", UNKNOWN_ZONE.format(parent=parent))
        self._advance()
        if collection == "operations" and method == "GET":
            op = self.operations.get(f"{parent}/operations/{ident}")
            return (200, op) if op else _error(404, "NOT_FOUND", "operation not found")
        if collection == "nodes":
            listing = ident is None and method == "GET"
            return self._nodes(method, parent, zone, ident or query.get("nodeId"), body, listing, query)
        if collection == "queuedResources":
            listing = ident is None and method == "GET"
            if method == "POST" and self.honour_request_id and query.get("requestId") in self.request_ids:
                return 200, self._public(self.request_ids[query["requestId"]])
            return self._queued(method, parent, zone, ident or query.get("queuedResourceId"), body, listing, query)
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

    def _page(self, key: str, items: list[dict[str, Any]], query: dict[str, str]) -> dict[str, Any]:
        if not self.page_size:
            return {key: items}
        start = int(query.get("pageToken") or 0)
        page: dict[str, Any] = {key: items[start : start + self.page_size]}
        if start + self.page_size < len(items):
            page["nextPageToken"] = str(start + self.page_size)
        return page

    def _nodes(self, method: str, parent: str, zone: str, ident: str | None, body: str, listing: bool,
               raw_query: dict[str, str]):  # fmt: skip
        key = f"{parent}/nodes/{ident}"
        if method == "GET" and listing:
            if zone in self.unreachable:
                return 200, {"nodes": [], "unreachable": [parent]}
            found = [self._node_view(n) for k, n in self.nodes.items() if k.startswith(parent + "/")]
            return 200, self._page("nodes", found, raw_query)
        if method == "GET":
            return (200, self._node_view(self.nodes[key])) if key in self.nodes else _error(404, "NOT_FOUND", "node")
        if method == "DELETE":
            if key not in self.nodes:
                return _error(404, "NOT_FOUND", f"node {ident} not found")
            return 200, self._delete_later(parent, [key])
        node = json.loads(body or "{}")
        model = "spot" if (node.get("schedulingConfig") or {}).get("spot") else "on-demand"
        rule = self.zones.get(zone, Zone()).rule(model, self._held(parent))
        if key in self.nodes:
            return _error(409, "ALREADY_EXISTS", f"node {ident} already exists")
        if rule == "quota":
            return _error(429, "RESOURCE_EXHAUSTED", QUOTA.format(zone=zone))
        done_at = time.monotonic() + self.create_s
        if rule == "stockout":
            return 200, self._operation(parent, done_at, {"code": 8, "message": STOCKOUT.format(zone=zone)})
        node.update(name=key, state="CREATING", createTime=self._now(), _ready_at=done_at)
        self.nodes[key] = node
        return 200, self._operation(parent, done_at)

    def _held(self, parent: str) -> int:
        """TPUs the zone holds: its nodes, and its queued resources not yet granted (a granted one's node
        is counted as a node)."""
        nodes = sum(1 for k in self.nodes if k.startswith(parent + "/"))
        waiting = sum(
            1 for k, q in self.queued.items() if k.startswith(parent + "/") and q["state"]["state"] != "ACTIVE"
        )
        return nodes + waiting

    def _node_view(self, node: dict[str, Any]) -> dict[str, Any]:
        view = {k: v for k, v in node.items() if not k.startswith("_")}
        if view.get("state") == "READY":
            view["networkEndpoints"] = [
                {"ipAddress": "10.130.0.2", "port": 8470, "accessConfig": {"externalIp": self.external_ip}}
            ]
        return view

    # --- queued resources

    def _queued(self, method: str, parent: str, zone: str, ident: str | None, body: str, listing: bool,
                raw_query: dict[str, str]):  # fmt: skip
        key = f"{parent}/queuedResources/{ident}"
        if method == "GET" and listing:
            if zone in self.unreachable:
                return 200, {"queuedResources": [], "unreachable": [parent]}
            found = [self._public(q) for k, q in self.queued.items() if k.startswith(parent + "/")]
            return 200, self._page("queuedResources", found, raw_query)
        if method == "GET":
            return (200, self._public(self.queued[key])) if key in self.queued else _error(404, "NOT_FOUND", "qr")
        if method == "DELETE":
            return self._delete_queued(parent, key)
        qr = json.loads(body or "{}")
        spec = qr["tpu"]["nodeSpec"][0]
        rule = self.zones.get(zone, Zone()).rule(
            "flex-start" if qr.get("provisioningModel") == "FLEX_START" else "spot", self._held(parent)
        )
        if rule == "unsupported":
            return _error(400, "INVALID_ARGUMENT", UNSUPPORTED.format(type=spec["node"]["acceleratorType"]))
        if rule == "quota":
            return _error(429, "RESOURCE_EXHAUSTED", QUOTA.format(zone=zone))
        if key in self.queued:
            return _error(409, "ALREADY_EXISTS", f"queued resource {ident} already exists")
        now = time.monotonic()
        if rule == "op-stockout":
            return 200, self._operation(parent, now, {"code": 8, "message": STOCKOUT.format(zone=zone)})
        valid_s = float(str(qr.get("queueingPolicy", {}).get("validUntilDuration", "3600s")).rstrip("s"))
        qr.update(name=key, createTime=self._now(), state={"state": "WAITING_FOR_RESOURCES"}, _rule=rule,
                  _provision_at=now + self.wait_s, _active_at=now + self.wait_s + self.provisioning_s,
                  _expire_at=now + valid_s, _spec=spec)  # fmt: skip
        self.queued[key] = qr
        op = self._operation(parent, now)
        if raw_query.get("requestId"):
            self.request_ids[raw_query["requestId"]] = self.operations[op["name"]]
        return 200, op

    def _delete_queued(self, parent: str, key: str):
        qr = self.queued.get(key)
        if qr is None:
            return _error(404, "NOT_FOUND", "queued resource not found")
        if qr["state"]["state"] == "PROVISIONING":
            return _error(400, "FAILED_PRECONDITION", "Cannot delete a queued resource in state PROVISIONING.")
        return 200, self._delete_later(parent, [key, f"{qr['_spec']['parent']}/nodes/{qr['_spec']['nodeId']}"])

    def _delete_later(self, parent: str, keys: list[str]) -> dict[str, Any]:
        """The operation of a delete of `keys` (a queued resource and its node, or a node): each shows
        DELETING until it is done, after `delete_s` (or the first key's `delete_s_of`), then is gone."""
        delay_s = self.delete_s_of.get(keys[0].rsplit("/", 1)[-1], self.delete_s)
        done_at = time.monotonic() + delay_s
        for key in keys:
            if key in self.queued:
                self.queued[key]["state"] = {"state": "DELETING"}
            elif key in self.nodes:
                self.nodes[key]["state"] = "DELETING"
        op = self._operation(parent, done_at)
        self.operations[op["name"]]["_deletes"] = keys
        if not delay_s:
            self._advance()
            return self._public(self.operations[op["name"]])
        return op

    # --- time passes

    def _advance(self) -> None:
        now = time.monotonic()
        for op in self.operations.values():
            if not op["done"] and now >= op["_done_at"]:
                op["done"] = True
                for key in op.get("_deletes", []):
                    self.queued.pop(key, None)
                    self.nodes.pop(key, None)
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
            elif rule == "internal" and now >= qr["_provision_at"]:
                qr["state"] = {"state": "FAILED", "failedData": {"error": {"code": 13, "message": INTERNAL}}}
            elif rule == "stockout" and now >= qr["_provision_at"]:
                error = {"code": 8, "message": STOCKOUT.format(zone=qr["name"].split("/")[3])}
                qr["state"] = {"state": "FAILED", "failedData": {"error": error}}
            elif rule == "ok" and now >= qr["_provision_at"]:
                qr["state"] = {"state": "PROVISIONING"}
        elif state == "PROVISIONING" and now >= qr["_active_at"]:
            self._grant(qr, now)
        elif state == "ACTIVE" and self.run_s is not None and now >= qr["_granted_at"] + self.run_s:
            qr["state"] = {"state": "SUSPENDED", "stateInitiator": "SERVICE"}  # the run ended: node deleted
            self.nodes.pop(f"{qr['_spec']['parent']}/nodes/{qr['_spec']['nodeId']}", None)

    def _grant(self, qr: dict[str, Any], now: float) -> None:
        qr["state"], qr["_granted_at"] = {"state": "ACTIVE"}, now
        spec = qr["_spec"]
        node = dict(
            spec["node"],
            name=f"{spec['parent']}/nodes/{spec['nodeId']}",
            state="READY",
            createTime=self._now(),
        )
        self.nodes[node["name"]] = node


def _error(status: int, name: str, message: str) -> tuple[int, dict[str, Any]]:
    """Google's error body: {"error": {"code": HTTP status, "message", "status": gRPC status name}}."""
    return status, {"error": {"code": status, "message": message, "status": name}}
