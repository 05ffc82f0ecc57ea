"""The Cloud TPU API over REST (httpx), and Secret Manager's `versions:access`.

    v2       projects/P/locations/Z/nodes               spot and on-demand TPU VMs (create ?nodeId=)
    v2alpha1 projects/P/locations/Z/queuedResources     flex-start: {"provisioningModel": "FLEX_START",
                                                        "runDuration": {"maxRunDuration": "14400s"}}, which
                                                        the Python client (google-cloud-tpu) does not expose
    v2       projects/P/locations/Z/operations/ID       long-running operations ({"done", "error"|"response"})
    v1       projects/P/secrets/S/versions/latest:access (secretmanager.googleapis.com) payload.data, base64

Where flex-start's fields sit in the v2alpha1 body (top-level provisioningModel and runDuration) follows the
issue and the seed's describe output ('provisioningModel: FLEX_START', 'maxRunDuration: 14400s'); it has not
been checked against a live API from this project (cloud.provision.queued_resource_body builds it).

One REST client for all of them, so one environment variable (ONECHIP_TPU_API_ENDPOINT, see cloud.auth)
points every call at a test server. Every failure is a CloudError with the API's message and a `reason`
(cloud.refusals). Request bodies carry no secret: the HF token never goes into metadata or a create body
(the seed: a TPU VM's metadata is readable from the VM).
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable
from typing import Any

import httpx

from onechip.cloud import refusals
from onechip.cloud.auth import Credentials, endpoint_override
from onechip.errors import CloudError

TPU_URL = "https://tpu.googleapis.com"
SECRETS_URL = "https://secretmanager.googleapis.com"
POLL_ENV = "ONECHIP_CLOUD_POLL_S"  # seconds between polls (default 5; tests against the fake use 0.05)
Json = dict[str, Any]


class TpuApi:
    """REST calls for one project. `http` may be given (tests: httpx.MockTransport); otherwise a client
    with a 60 s timeout. `poll_s` is the pause between polls of an operation or a state."""

    def __init__(self, project: str | None, *, http: httpx.Client | None = None, poll_s: float | None = None):
        self.credentials = Credentials()
        override = endpoint_override()
        self.tpu_url = override or TPU_URL
        self.secrets_url = override or SECRETS_URL
        resolved = project or self.credentials.project
        if not resolved:
            raise CloudError("give --project (no project in the Application Default Credentials)", reason="auth")
        self.project = resolved
        self.http = http or httpx.Client(timeout=60.0)
        self.poll_s = poll_s if poll_s is not None else float(os.environ.get(POLL_ENV) or 5.0)

    def parent(self, zone: str) -> str:
        return f"projects/{self.project}/locations/{zone}"

    def call(self, method: str, url: str, *, params: Json | None = None, body: Json | None = None) -> Json:
        """One request; the JSON answer. Raises CloudError (API refusal, or the API unreachable)."""
        where = f"{method} {url.split('/projects/', 1)[-1]}"
        try:
            answer = self.http.request(method, url, params=params, json=body, headers=self.credentials.headers())
        except httpx.HTTPError as exc:
            raise CloudError(f"cannot reach {url.split('/v')[0]}: {type(exc).__name__}", reason="other") from None
        try:
            data = answer.json() if answer.content else {}
        except ValueError:
            data = {}
        if answer.status_code >= 400:
            raise refusals.from_http(answer.status_code, data, where)
        return data if isinstance(data, dict) else {}

    # --- nodes (v2): spot and on-demand

    def create_node(self, zone: str, node_id: str, node: Json) -> Json:
        """POST a node; returns the long-running operation."""
        url = f"{self.tpu_url}/v2/{self.parent(zone)}/nodes"
        return self.call("POST", url, params={"nodeId": node_id}, body=node)

    def get_node(self, zone: str, node_id: str) -> Json:
        return self.call("GET", f"{self.tpu_url}/v2/{self.parent(zone)}/nodes/{node_id}")

    def delete_node(self, zone: str, node_id: str) -> Json:
        return self.call("DELETE", f"{self.tpu_url}/v2/{self.parent(zone)}/nodes/{node_id}")

    def list_nodes(self, zone: str) -> list[Json]:
        return list(self.call("GET", f"{self.tpu_url}/v2/{self.parent(zone)}/nodes").get("nodes", []))

    # --- queued resources (v2alpha1): flex-start

    def create_queued_resource(self, zone: str, qr_id: str, body: Json) -> Json:
        url = f"{self.tpu_url}/v2alpha1/{self.parent(zone)}/queuedResources"
        return self.call("POST", url, params={"queuedResourceId": qr_id}, body=body)

    def get_queued_resource(self, zone: str, qr_id: str) -> Json:
        return self.call("GET", f"{self.tpu_url}/v2alpha1/{self.parent(zone)}/queuedResources/{qr_id}")

    def delete_queued_resource(self, zone: str, qr_id: str) -> Json:
        """Delete a queued resource and its node (force=true). A request in PROVISIONING cannot be deleted:
        the API answers FAILED_PRECONDITION (reason 'precondition')."""
        url = f"{self.tpu_url}/v2alpha1/{self.parent(zone)}/queuedResources/{qr_id}"
        return self.call("DELETE", url, params={"force": "true"})

    def list_queued_resources(self, zone: str) -> list[Json]:
        url = f"{self.tpu_url}/v2alpha1/{self.parent(zone)}/queuedResources"
        return list(self.call("GET", url).get("queuedResources", []))

    # --- operations

    def wait_operation(self, operation: Json, timeout_s: float, on_tick: Callable[[float], None] | None = None) -> Json:
        """Poll a long-running operation until done; return its `response`. Raises CloudError from its
        `error` (e.g. code 8 stockout) or when it is not done within `timeout_s`."""
        started = time.monotonic()
        version = "v2alpha1" if "/v2alpha1/" in str(operation.get("name", "")) else "v2"
        while not operation.get("done"):
            elapsed = time.monotonic() - started
            if elapsed > timeout_s:
                raise CloudError(f"operation {operation.get('name')} not done after {timeout_s:.0f} s")
            if on_tick is not None:
                on_tick(elapsed)
            time.sleep(self.poll_s)
            operation = self.call("GET", f"{self.tpu_url}/{version}/{operation['name']}")
        if "error" in operation:
            raise refusals.from_status(dict(operation["error"]), str(operation.get("name", "operation")))
        return dict(operation.get("response") or {})

    # --- Secret Manager

    def access_secret(self, name: str, version: str = "latest") -> str:
        """The payload of secret `name` (a bare name in this project, or projects/P/secrets/S), decoded.
        The value is returned only; it is never logged or put in an error."""
        path = name if name.startswith("projects/") else f"projects/{self.project}/secrets/{name}"
        data = self.call("GET", f"{self.secrets_url}/v1/{path}/versions/{version}:access")
        try:
            return base64.b64decode(str(data["payload"]["data"])).decode().strip()
        except (KeyError, TypeError, ValueError):
            raise CloudError(f"secret {name}: the answer holds no readable payload") from None
