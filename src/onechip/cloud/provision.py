"""Getting a TPU and giving it back: up (three provisioning models, zones tried in order), probe, status, down.

    flex-start   a v2alpha1 queued resource: provisioningModel FLEX_START, runDuration.maxRunDuration (billing
                 stops on its own), queueingPolicy.validUntilDuration (how long it may wait in the queue).
                 States: WAITING_FOR_RESOURCES -> PROVISIONING -> ACTIVE; its node then CREATING -> READY.
    spot         a v2 node with schedulingConfig.spot; bills until deleted (its own quota, seed).
    on-demand    a v2 node; bills until deleted.

Traps from the seeds, handled here: quota is not capacity (a refusal is read by code and message, and the
next zone is tried: cloud.refusals); a queued resource in PROVISIONING cannot be deleted (it is waited out,
then deleted); there is no dry-run (probe creates for real and deletes at once, and says so); every resource
is labelled `created-by: onechip` and recorded before it is waited on, so Ctrl-C leaves nothing unsaid:
Interrupted names what exists and the command that deletes it. The HF token is not handled here at all: no
create body or metadata ever holds a secret (only the public ssh key goes into `ssh-keys`).
"""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from onechip.cloud import offers, records, refusals
from onechip.cloud.tpu_api import Json, TpuApi
from onechip.errors import CloudError, ConfigError, Interrupted
from onechip.progress import ProgressEvent, ProgressFn
from onechip.schemas.cloud import (
    Attempt,
    CloudDownResult,
    CloudNameRequest,
    CloudProbeRequest,
    CloudResource,
    CloudStatus,
    CloudUpRequest,
    CloudUpResult,
    ZoneOffer,
    api_duration,
)

FAILOVER = {"stockout", "quota", "unsupported", "expired"}  # refusals after which the next zone is tried
QUEUE_GRACE_S = 30.0  # past valid-until, the API may take a poll or two to mark the request FAILED
CREATE_GRACE_S = 60.0  # a queued resource just created may answer NOT_FOUND this long
GONE_STATES = {"FAILED", "SUSPENDED", "SUSPENDING", "DELETING", "PREEMPTED", "TERMINATED", "STOPPED"}


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def delete_command(resource: CloudResource) -> str:
    """The command that deletes `resource` (printed on Ctrl-C, after up, by status)."""
    return f"onechip cloud down --name {resource.name} --zone {resource.zone} --project {resource.project} --yes"


def ssh_keys_metadata(user: str, key: Path | None) -> dict[str, str]:
    """{'ssh-keys': 'USER:PUBLIC KEY'} from `key`.pub (default: gcloud's ~/.ssh/google_compute_engine), or {}
    when there is no public key. A public key only: metadata is readable from the VM (seed)."""
    private = key or Path.home() / ".ssh" / "google_compute_engine"
    public = private.with_name(private.name + ".pub")
    try:
        text = public.read_text(encoding="utf-8").strip()
    except OSError:
        return {}
    if "PRIVATE KEY" in text or not text.startswith(("ssh-", "ecdsa-")):
        raise ConfigError(f"{public} is not an ssh public key")
    return {"ssh-keys": f"{user}:{text}"}


def node_body(resource: CloudResource, metadata: dict[str, str]) -> Json:
    """The v2 Node a create sends: type, runtime, external IP, labels, spot when spot; no secret."""
    body: Json = {
        "acceleratorType": resource.accelerator_type,
        "runtimeVersion": resource.runtime_version,
        "networkConfig": {"enableExternalIps": True},
        "labels": dict(records.LABELS),
        "metadata": dict(metadata),
    }
    if resource.provisioning == "spot":
        body["schedulingConfig"] = {"spot": True}
    return body


def queued_resource_body(resource: CloudResource, node: Json, valid_until_s: float) -> Json:
    """The v2alpha1 QueuedResource of a flex-start request (gcloud alpha ... queued-resources create
    --provisioning-model=flex-start --max-run-duration=4h, as the seed ran it)."""
    spec = {"parent": f"projects/{resource.project}/locations/{resource.zone}", "nodeId": resource.node_id,
            "node": node}  # fmt: skip
    return {
        "tpu": {"nodeSpec": [spec]},
        "provisioningModel": "FLEX_START",
        "runDuration": {"maxRunDuration": api_duration(resource.max_run_duration_s or 0)},
        "queueingPolicy": {"validUntilDuration": api_duration(valid_until_s)},
    }


def labelled(item: Json) -> bool:
    """Does a node or queued resource from the API carry onechip's label (on itself or its node spec)?"""
    labels = dict(item.get("labels") or {})
    for spec in (item.get("tpu") or {}).get("nodeSpec") or []:
        labels.update((spec.get("node") or {}).get("labels") or {})
    return all(labels.get(k) == v for k, v in records.LABELS.items())


def external_ip(node: Json) -> str | None:
    for endpoint in node.get("networkEndpoints") or []:
        ip = (endpoint.get("accessConfig") or {}).get("externalIp")
        if ip:
            return str(ip)
    return None


def qr_state(item: Json) -> str:
    return str((item.get("state") or {}).get("state") or "")


def qr_failure(item: Json, where: str) -> CloudError:
    """The CloudError of a FAILED queued resource (its failedData.error), 'expired' when it has none."""
    error = ((item.get("state") or {}).get("failedData") or {}).get("error")
    if isinstance(error, dict) and error.get("message"):
        return refusals.from_status(error, where)
    return CloudError(f"{where}: the queued resource failed (valid-until reached)", reason="expired")


# --- waiting


def _tick(on_progress: ProgressFn, resource: CloudResource, state: str, elapsed: float, total: float | None) -> None:
    resource.state = state
    on_progress(ProgressEvent("cloud", f"{resource.name} in {resource.zone}: {state}", elapsed, total))


def wait_queued(api: TpuApi, resource: CloudResource, valid_until_s: float, on_progress: ProgressFn) -> None:
    """Poll a queued resource until ACTIVE. FAILED (or still waiting at valid-until + grace) raises
    CloudError 'expired' after deleting the request; PROVISIONING cannot be deleted and is waited out."""
    started = time.monotonic()
    while True:
        elapsed = time.monotonic() - started
        try:
            item = api.get_queued_resource(resource.zone, resource.name)
        except CloudError as exc:  # just created: the API may not show it for a few seconds
            if exc.reason != "not-found" or elapsed > CREATE_GRACE_S:
                raise
            item = {}
        state = qr_state(item)
        _tick(on_progress, resource, state or "CREATING", elapsed, valid_until_s)
        if state == "ACTIVE":
            return
        if state == "FAILED" or (state != "PROVISIONING" and elapsed > valid_until_s + QUEUE_GRACE_S):
            error = (
                qr_failure(item, f"{resource.name} in {resource.zone}")
                if state == "FAILED"
                else CloudError(f"{resource.name} in {resource.zone}: still {state} at --valid-until", reason="expired")
            )
            _delete_quietly(api, resource)
            raise error
        time.sleep(api.poll_s)


def wait_node_ready(api: TpuApi, resource: CloudResource, timeout_s: float, on_progress: ProgressFn) -> Json:
    """Poll the node until READY; record its external IP and the time billing started. Raises CloudError
    when it ends up in a gone state (preempted, failed) or is not READY within `timeout_s`."""
    started = time.monotonic()
    while True:
        elapsed = time.monotonic() - started
        node = api.get_node(resource.zone, resource.node_id)
        state = str(node.get("state") or "CREATING")
        _tick(on_progress, resource, state, elapsed, None)
        if state == "READY":
            resource.external_ip = external_ip(node)
            resource.granted_at = resource.granted_at or now_iso()
            records.save(resource)
            return node
        if state in GONE_STATES:
            raise CloudError(f"node {resource.node_id} in {resource.zone} is {state}", reason="other")
        if elapsed > timeout_s:
            raise CloudError(f"node {resource.node_id} in {resource.zone} not READY after {timeout_s:.0f} s")
        time.sleep(api.poll_s)


def _delete_quietly(api: TpuApi, resource: CloudResource) -> None:
    """Best-effort delete after a failed attempt; a resource already gone is fine."""
    try:
        delete(api, resource)
    except CloudError as exc:
        if exc.reason != "not-found":
            raise


def delete(api: TpuApi, resource: CloudResource, timeout_s: float = 600.0) -> None:
    """Delete a queued resource with its node (force), or a node; wait for the operation; forget the record.
    Raises CloudError 'precondition' for a queued resource in PROVISIONING (cannot be deleted yet)."""
    try:
        if resource.kind == "queued-resource":
            operation = api.delete_queued_resource(resource.zone, resource.name)
        else:
            operation = api.delete_node(resource.zone, resource.node_id)
        api.wait_operation(operation, timeout_s)
    except CloudError as exc:
        if exc.reason != "not-found":
            raise
    records.forget(resource.name)


# --- up


def new_resource(api: TpuApi, request: CloudUpRequest, name: str, zone: str) -> CloudResource:
    """The record of what `up` is about to create in `zone` (priced from the catalog)."""
    accelerator_type, runtime = offers.tpu_type(request.chip)
    flex = request.provisioning == "flex-start"
    quote = offers.quote(request.chip, request.provisioning, zone, None)
    return CloudResource(
        name=name, kind="queued-resource" if flex else "node", node_id=f"{name}-node" if flex else name,
        project=api.project, zone=zone, chip=request.chip, accelerator_type=accelerator_type,
        runtime_version=runtime, provisioning=request.provisioning, created_at=now_iso(),
        max_run_duration_s=request.max_run_duration_s if flex else None, max_hours=request.max_hours,
        usd_per_hour=quote.usd_per_hour, price_source=quote.price_source, ssh_user=request.ssh_user,
    )  # fmt: skip


def create(api: TpuApi, request: CloudUpRequest, resource: CloudResource, on_progress: ProgressFn) -> None:
    """Record `resource`, send its create, wait until its node is READY. A refusal raises CloudError (after
    deleting whatever the attempt left, and forgetting the record); Ctrl-C raises Interrupted naming what
    may exist. Recorded before the request is sent, so an interrupted create is never unaccounted for."""
    node = node_body(resource, ssh_keys_metadata(request.ssh_user, request.ssh_key))
    records.save(resource)
    try:
        try:
            if resource.kind == "queued-resource":
                node.pop("schedulingConfig", None)
                body = queued_resource_body(resource, node, request.valid_until_s)
                api.create_queued_resource(resource.zone, resource.name, body)
                wait_queued(api, resource, request.valid_until_s, on_progress)
            else:
                operation = api.create_node(resource.zone, resource.node_id, node)
                _wait_created(api, request, resource, operation, on_progress)
            wait_node_ready(api, resource, request.timeout_s, on_progress)
        except CloudError:
            if not _exists(api, resource):
                records.forget(resource.name)
            raise
    except KeyboardInterrupt:
        raise Interrupted(interrupted_message(resource)) from None


def _wait_created(api: TpuApi, request: CloudUpRequest, resource: CloudResource, operation: Json,
                  on_progress: ProgressFn) -> None:  # fmt: skip
    """Wait for a node create's operation; on its error (stockout: code 8) delete what it left and raise."""
    try:
        api.wait_operation(operation, request.timeout_s, lambda s: _tick(on_progress, resource, "CREATING", s, None))
    except CloudError:
        _delete_quietly(api, resource)
        raise


def _exists(api: TpuApi, resource: CloudResource) -> bool:
    """Does the API still have `resource`? (True when it cannot tell: a record is only dropped for sure.)"""
    try:
        if resource.kind == "queued-resource":
            api.get_queued_resource(resource.zone, resource.name)
        else:
            api.get_node(resource.zone, resource.node_id)
    except CloudError as exc:
        return exc.reason != "not-found"
    return True


def interrupted_message(resource: CloudResource) -> str:
    """What exists after Ctrl-C, whether it bills, and the command that deletes it."""
    billing = (
        "a queued request bills nothing until granted, then until its max run duration"
        if resource.kind == "queued-resource"
        else "it bills until deleted"
    )
    return (
        f"interrupted: {resource.kind} {resource.name} exists in {resource.zone} (last state "
        f"{resource.state or 'CREATING'}; {billing}); delete it with: {delete_command(resource)}"
    )


def find_existing(api: TpuApi, name: str, zones: list[str]) -> CloudResource | None:
    """A recorded resource called `name` in one of `zones` that the API still has, labelled and not gone
    (what `up` resumes and `demo --again` reuses); None otherwise."""
    for resource in records.load_all():
        if resource.name != name or resource.zone not in zones or resource.project != api.project:
            continue
        try:
            item = (api.get_queued_resource if resource.kind == "queued-resource" else api.get_node)(
                resource.zone, resource.name if resource.kind == "queued-resource" else resource.node_id
            )
        except CloudError as exc:
            if exc.reason == "not-found":
                records.forget(name)
                continue
            raise
        state = qr_state(item) if resource.kind == "queued-resource" else str(item.get("state") or "")
        if labelled(item) and state not in GONE_STATES:
            return resource
    return None


def zones_for(request: CloudUpRequest | CloudProbeRequest) -> list[str]:
    """The zones to try, in order: --zone, else those the catalog and probes saw offering chip + model."""
    zones = request.zones or offers.default_zones(records.observed(), request.chip, request.provisioning)
    if not zones:
        raise ConfigError(
            f"no zone is known to offer {request.chip} {request.provisioning}; give --zone Z1,Z2 "
            f"(see `onechip cloud zones --chip {request.chip}`)"
        )
    return zones


def up(api: TpuApi, request: CloudUpRequest, on_progress: ProgressFn) -> CloudUpResult:
    """Get `request.chip` with `request.provisioning`, trying each zone in order; a stockout, quota,
    unsupported-model or expired refusal moves on to the next zone (after deleting what the attempt left).
    A labelled resource of the same name that is still alive is resumed instead of created again.
    Returns the READY resource and every attempt. Raises CloudError (every zone refused: each reason listed),
    Interrupted (Ctrl-C: what exists and the delete command), ConfigError."""
    name = request.name or f"onechip-{request.chip}"
    zones = zones_for(request)
    limit_s = request.max_run_duration_s if request.provisioning == "flex-start" else (
        request.max_hours * 3600 if request.max_hours else None)  # fmt: skip
    existing = find_existing(api, name, zones)
    if existing is not None:
        on_progress(ProgressEvent("cloud", f"reusing {existing.kind} {name} in {existing.zone}"))
        try:
            if existing.kind == "queued-resource":
                wait_queued(api, existing, request.valid_until_s, on_progress)
            wait_node_ready(api, existing, request.timeout_s, on_progress)
        except KeyboardInterrupt:
            raise Interrupted(interrupted_message(existing)) from None
        quote = offers.quote(existing.chip, existing.provisioning, existing.zone, limit_s)
        return CloudUpResult(resource=existing, reused=True, quote=quote, delete_command=delete_command(existing))
    attempts: list[Attempt] = []
    for zone in zones:
        resource = new_resource(api, request, name, zone)
        started = time.monotonic()
        try:
            create(api, request, resource, on_progress)
        except CloudError as exc:
            attempts.append(_attempt(zone, request, exc, time.monotonic() - started))
            if exc.reason not in FAILOVER:
                raise
            on_progress(ProgressEvent("cloud", f"{zone}: {exc.reason}; trying the next zone"))
            continue
        attempts.append(Attempt(zone=zone, provisioning=request.provisioning, outcome="available",
                                elapsed_s=round(time.monotonic() - started, 1), checked_at=now_iso()))  # fmt: skip
        quote = offers.quote(request.chip, request.provisioning, zone, limit_s)
        return CloudUpResult(resource=resource, attempts=attempts, quote=quote, delete_command=delete_command(resource))
    tried = "; ".join(f"{a.zone}: {a.outcome} ({a.message})" for a in attempts)
    raise CloudError(f"no zone gave {request.chip} {request.provisioning}: {tried}", reason=attempts[-1].outcome)


def _attempt(zone: str, request: CloudUpRequest | CloudProbeRequest, exc: CloudError, elapsed_s: float) -> Attempt:
    outcome = exc.reason if exc.reason in FAILOVER else "error"
    return Attempt(
        zone=zone, provisioning=request.provisioning, outcome=outcome, code=exc.code,  # type: ignore[arg-type]
        message=str(exc).split(": ", 1)[-1][:300], elapsed_s=round(elapsed_s, 1), checked_at=now_iso(),
    )  # fmt: skip


# --- probe


def probe(api: TpuApi, request: CloudProbeRequest, on_progress: ProgressFn) -> list[Attempt]:
    """For each zone: a real create of `request.chip` with `request.provisioning`, deleted at once (there is
    no dry-run API). Spot/on-demand: the node create's answer (stockout fails fast, seed survey). Flex-start:
    the queued resource's first states within `request.wait_s` ('queued' = still waiting: quota is not
    capacity, and a request without quota waits just the same). Each answer is recorded for `cloud zones`."""
    out = []
    for zone in zones_for(request):
        up_request = CloudUpRequest.model_validate(
            {"chip": request.chip, "project": api.project, "zones": [zone], "provisioning": request.provisioning,
             "valid_until_s": request.wait_s, "no_limit": request.provisioning != "flex-start", "timeout_s": 600.0}
        )  # fmt: skip
        resource = new_resource(api, up_request, f"onechip-probe-{secrets.token_hex(3)}", zone)
        started = time.monotonic()
        on_progress(ProgressEvent("probe", f"{zone}: creating {resource.accelerator_type} ({request.provisioning})"))
        try:
            create(api, up_request, resource, on_progress)
            attempt = Attempt(zone=zone, provisioning=request.provisioning, outcome="available",
                              elapsed_s=round(time.monotonic() - started, 1), checked_at=now_iso())  # fmt: skip
            delete(api, resource)
        except CloudError as exc:
            attempt = _attempt(zone, request, exc, time.monotonic() - started)
            if exc.reason == "expired" and request.provisioning == "flex-start":
                attempt.outcome, attempt.message = "queued", f"still queued after {request.wait_s:.0f} s; deleted"
        out.append(attempt)
        records.observe(ZoneOffer(chip=request.chip, zone=zone, provisioning=request.provisioning,
                                  outcome=attempt.outcome, source="onechip cloud probe", date=attempt.checked_at,
                                  note=attempt.message))  # fmt: skip
    return out


# --- status and down


def _fetch(api: TpuApi, resource: CloudResource) -> Json | None:
    """The API's view of a recorded resource (None when it is gone)."""
    try:
        if resource.kind == "queued-resource":
            item = api.get_queued_resource(resource.zone, resource.name)
            resource.state = qr_state(item)
            if resource.state == "ACTIVE":
                node = api.get_node(resource.zone, resource.node_id)
                resource.external_ip = external_ip(node) or resource.external_ip
            return item
        node = api.get_node(resource.zone, resource.node_id)
        resource.state = str(node.get("state") or "")
        resource.external_ip = external_ip(node) or resource.external_ip
        return node
    except CloudError as exc:
        if exc.reason == "not-found":
            return None
        raise


def status(api: TpuApi, resource: CloudResource, now: datetime | None = None) -> CloudStatus:
    """State, zone, external IP, model, elapsed time and $ so far (billed time from READY, capped at the
    flex-start max run duration, x the catalog price), and a warning when --max-hours has passed."""
    now = now or datetime.now(UTC)
    exists = _fetch(api, resource) is not None
    elapsed = (now - datetime.fromisoformat(resource.created_at)).total_seconds()
    billed_from = datetime.fromisoformat(resource.granted_at) if resource.granted_at else None
    billed_s = max(0.0, (now - billed_from).total_seconds()) if billed_from else 0.0
    limit_s = resource.max_run_duration_s or (resource.max_hours * 3600 if resource.max_hours else None)
    if resource.provisioning == "flex-start" and limit_s:
        billed_s = min(billed_s, limit_s)
    deadline = (
        (billed_from or datetime.fromisoformat(resource.created_at)) + timedelta(seconds=limit_s) if limit_s else None
    )
    warnings = []
    if exists and deadline and now > deadline and resource.provisioning != "flex-start":
        warnings.append(f"--max-hours {resource.max_hours:g} passed at {deadline.isoformat(timespec='seconds')} and "
                        f"it is still billing; delete it: {delete_command(resource)}")  # fmt: skip
    if exists and resource.provisioning != "flex-start" and limit_s is None:
        warnings.append(f"no limit: it bills until deleted ({delete_command(resource)})")
    usd = round(billed_s / 3600 * resource.usd_per_hour, 4) if resource.usd_per_hour is not None else None
    return CloudStatus(
        resource=resource, exists=exists, elapsed_s=round(elapsed, 1), usd_so_far=usd,
        deadline=deadline.isoformat(timespec="seconds") if deadline else None, warnings=warnings,
    )  # fmt: skip


def _from_api(api: TpuApi, zone: str, item: Json, kind: str) -> CloudResource:
    """A CloudResource for a labelled item found in the API but not recorded here (created elsewhere)."""
    name = str(item.get("name", "")).rsplit("/", 1)[-1]
    spec = ((item.get("tpu") or {}).get("nodeSpec") or [{}])[0]
    node = spec.get("node") or item
    return CloudResource(
        name=name, kind=kind, node_id=str(spec.get("nodeId") or name), project=api.project, zone=zone,  # type: ignore[arg-type]
        chip=str(node.get("acceleratorType", "")), accelerator_type=str(node.get("acceleratorType", "")),
        runtime_version=str(node.get("runtimeVersion", "")),
        provisioning="flex-start" if kind == "queued-resource" else (
            "spot" if (node.get("schedulingConfig") or {}).get("spot") else "on-demand"),
        created_at=str(item.get("createTime") or now_iso()),
    )  # fmt: skip


def targets(api: TpuApi, request: CloudNameRequest, recorded: list[CloudResource]) -> list[CloudResource]:
    """What `down` would delete: recorded resources (by --name / --zone), plus labelled queued resources
    and nodes found in the --zone list; never anything without onechip's label."""
    chosen = [r for r in recorded if (not request.name or r.name == request.name)
              and (not request.zones or r.zone in request.zones) and r.project == api.project]  # fmt: skip
    known = {(r.zone, r.name) for r in chosen} | {(r.zone, r.node_id) for r in chosen}
    for zone in request.zones:
        qrs = api.list_queued_resources(zone)
        found = [_from_api(api, zone, qr, "queued-resource") for qr in qrs if labelled(qr)]
        qr_nodes = {r.node_id for r in found}
        found += [_from_api(api, zone, n, "node") for n in api.list_nodes(zone)
                  if labelled(n) and str(n.get("name", "")).rsplit("/", 1)[-1] not in qr_nodes]  # fmt: skip
        for resource in found:
            if (zone, resource.name) not in known and (not request.name or resource.name == request.name):
                chosen.append(resource)
                known.add((zone, resource.name))
    return chosen


def down(api: TpuApi, chosen: list[CloudResource], on_progress: ProgressFn) -> CloudDownResult:
    """Delete each of `chosen` (from `targets`) after checking onechip's label on the API's copy. A queued
    resource in PROVISIONING cannot be deleted (seed): it is waited out (up to 10 min), then deleted."""
    result = CloudDownResult()
    for resource in chosen:
        what = f"{resource.kind} {resource.name} ({resource.zone})"
        item = _fetch(api, resource)
        if item is None:
            records.forget(resource.name)
            result.kept.append(f"{what}: already gone")
            continue
        if not labelled(item):
            result.kept.append(f"{what}: not labelled created-by=onechip; onechip deletes only what it created")
            continue
        on_progress(ProgressEvent("cloud", f"deleting {what}"))
        _delete_when_possible(api, resource, on_progress)
        result.deleted.append(what)
    return result


def _delete_when_possible(
    api: TpuApi, resource: CloudResource, on_progress: ProgressFn, limit_s: float = 600.0
) -> None:
    started = time.monotonic()
    while True:
        try:
            delete(api, resource)
            return
        except CloudError as exc:
            if exc.reason != "precondition" or time.monotonic() - started > limit_s:
                raise
        on_progress(ProgressEvent("cloud", f"{resource.name} is PROVISIONING: cannot be deleted yet; waiting"))
        time.sleep(api.poll_s)
