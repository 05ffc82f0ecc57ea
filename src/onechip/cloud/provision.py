"""Getting a TPU and giving it back: up (three provisioning models, zones tried in order), up_set (N one-chip
TPUs as one set, for N replicas), probe, status, down.

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

import re
import secrets
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

from onechip.cloud import offers, records, refusals
from onechip.cloud.tpu_api import OUTAGE, Json, TpuApi, through_outages
from onechip.errors import CloudDownError, CloudError, ConfigError, Interrupted, OnechipError
from onechip.paths import NotRegularFileError, TooLargeError, read_regular
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas.cloud import (
    MAX_HOURS,
    NOT_RECORDED,
    Attempt,
    CloudDownResult,
    CloudNameRequest,
    CloudProbeRequest,
    CloudResource,
    CloudStatus,
    CloudUpRequest,
    CloudUpResult,
    Provisioning,
    Quote,
    ZoneOffer,
    api_duration,
    parse_duration,
)

# refusals after which the next zone is tried (the attempt's resource is deleted first); 'failed' is a
# queued resource FAILED with any other code, 'ended' one that ended (suspended, preempted) before it was ready,
# 'inaccessible' a zone this project may not use (cloud.refusals)
FAILOVER = {"stockout", "quota", "unsupported", "expired", "failed", "ended", "inaccessible"}
INACCESSIBLE = "zone not usable for this project"  # how an 'inaccessible' refusal is said
# failures of a read that may be one zone's alone (an outage there, the list's `unreachable`, a rate limit, a 403 for
# that location): status and down report that zone and go on with the others. Any other (credentials, an endpoint
# that is not the API, a zone the API has not) is the whole command's, said once.
ZONE_FAILURES = ("transient", "rate-limit", "inaccessible")
Member = tuple[str, int] | None  # (set name, index) of a TPU of a `cloud up --replicas N` set
QUEUE_GRACE_S = 30.0  # past valid-until, the API may take a poll or two to mark the request FAILED
CREATE_GRACE_S = 60.0  # a resource just created (or found made by a retried create) may answer NOT_FOUND this long
DELETE_WAIT_S = 600.0  # a delete that cannot start (PROVISIONING) or has not finished is waited this long
# a `down` waits this long in all for its deletes, every TPU of it together (sent first, then waited on): PROVISIONING
# waited out, a delete not finished, an outage read (the labels too) and sent again through. Per TPU, N TPUs held it
# N x 10 min
DOWN_WAIT_S = DELETE_WAIT_S
GONE = "gone"  # the state `status` gives a recorded resource the API no longer has (no state of the API's enums)

# Every state of each kind, from the TPU API's discovery documents (googleapis/google-api-go-client
# tpu/v2alpha1/tpu-api.json at 123f55c3: QueuedResourceState.state and Node.state), by what it means here:
#   waiting   may still become ready by itself: polled, bounded by --valid-until / --timeout
#   ready     ACTIVE (queued resource), READY (node)
#   ended     will not become ready by itself (failed; suspended once its run ended; preempted, stopped):
#             what onechip created in such a state is deleted before the name is used again
#   deleting  on its way out: waited until the API no longer has it
# A state outside these lists (a newer API) counts as waiting, so it is bounded like one and never deleted.
QR_PHASE = {
    "STATE_UNSPECIFIED": "waiting", "CREATING": "waiting", "ACCEPTED": "waiting", "PROVISIONING": "waiting",
    "WAITING_FOR_RESOURCES": "waiting", "ACTIVE": "ready", "FAILED": "ended", "SUSPENDING": "ended",
    "SUSPENDED": "ended", "DELETING": "deleting",
}  # fmt: skip
NODE_PHASE = {
    "STATE_UNSPECIFIED": "waiting", "CREATING": "waiting", "READY": "ready", "RESTARTING": "waiting",
    "REIMAGING": "waiting", "REPAIRING": "waiting", "STARTING": "waiting", "UNHIDING": "waiting",
    "STOPPED": "ended", "STOPPING": "ended", "PREEMPTED": "ended", "TERMINATED": "ended", "HIDING": "ended",
    "HIDDEN": "ended", "UNKNOWN": "ended", "DELETING": "deleting",
}  # fmt: skip


def now_iso(api: TpuApi | None = None) -> str:
    """Now, to the second; by `api`'s clock (TpuApi.now) when given: a time compared with the API's own."""
    return (api.now() if api is not None else datetime.now(UTC)).isoformat(timespec="seconds")


def delete_command(resource: CloudResource) -> str:
    """The command that deletes `resource` (printed on Ctrl-C, after up, by status)."""
    return f"onechip cloud down --name {resource.name} --zone {resource.zone} --project {resource.project} --yes"


def ssh_keys_metadata(user: str, key: Path | None) -> dict[str, str]:
    """{'ssh-keys': 'USER:PUBLIC KEY'} from `key`.pub (default: gcloud's ~/.ssh/google_compute_engine), or {}
    when there is no public key. A public key only: metadata is readable from the VM (seed). Raises ConfigError for
    a .pub that is not a regular file, larger than paths.MAX_INPUT_BYTES, not UTF-8 text, or no ssh public key."""
    private = key or Path.home() / ".ssh" / "google_compute_engine"
    public = private.with_name(private.name + ".pub")
    try:  # read_regular: a FIFO is refused, not waited on, and a file past its bound is not read
        text = read_regular(public).decode("utf-8").strip()
    except (NotRegularFileError, TooLargeError) as exc:
        raise ConfigError(f"{public} is not an ssh public key ({exc.strerror})") from None
    except UnicodeDecodeError:  # its text is never shown: it quotes the file's bytes
        raise ConfigError(f"{public} is not an ssh public key (not UTF-8 text)") from None
    except OSError:
        return {}
    if "PRIVATE KEY" in text or not text.startswith(("ssh-", "ecdsa-")):
        raise ConfigError(f"{public} is not an ssh public key")
    return {"ssh-keys": f"{user}:{text}"}


def node_body(resource: CloudResource, metadata: dict[str, str]) -> Json:
    """The v2 Node a create sends: type, runtime, external IP, labels (onechip's, this home's owner id, a set's
    name), spot when spot; no secret."""
    labels = {**records.LABELS, records.OWNER_LABEL: records.owner_id()}
    if resource.replica_set:
        labels[records.SET_LABEL] = resource.replica_set
    body: Json = {
        "acceleratorType": resource.accelerator_type,
        "runtimeVersion": resource.runtime_version,
        "networkConfig": {"enableExternalIps": True},
        "labels": labels,
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


def node_specs(item: Json) -> list[Json]:
    """The node specs of a queued resource from the API (tpu.nodeSpec[], v2alpha1 QueuedResource.Tpu), each an
    object; none for a node, and none that is no object: a copy whose nodeSpec is no list (another tool's, a changed
    API's) raised AttributeError out of the whole zone's listing where it was iterated (labels_of)."""
    tpu = item.get("tpu")
    specs = tpu.get("nodeSpec") if isinstance(tpu, dict) else None
    return [spec for spec in specs if isinstance(spec, dict)] if isinstance(specs, list) else []


def labels_of(item: Json) -> dict[str, str]:
    """The labels of a node or queued resource from the API, on itself or its node spec's node (labels that are no
    object, or a node that is none, give none)."""
    labels: dict[object, object] = {}
    for node in (item, *(spec.get("node") for spec in node_specs(item))):
        found = node.get("labels") if isinstance(node, dict) else None
        labels.update(found if isinstance(found, dict) else {})
    return {str(k): str(v) for k, v in labels.items()}


def labelled(item: Json) -> bool:
    """Does a node or queued resource from the API carry onechip's label (on itself or its node spec)?"""
    return _onechips(labels_of(item))


def _onechips(labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in records.LABELS.items())


def another_onechips(item: Json) -> bool:
    """Is `item`, labelled onechip's, another onechip home's: its owner label (records.OWNER_LABEL, written at every
    create) names another id than this home's (records.held_owner_id; a home with none has labelled nothing)? One
    without that label (made by an onechip before it) is not told apart, as before. Raises ConfigError when this
    home's owner-id file holds no id."""
    return _another_home(labels_of(item))


def _another_home(labels: dict[str, str]) -> bool:
    owner = labels.get(records.OWNER_LABEL)
    return _onechips(labels) and owner is not None and owner != records.held_owner_id()


def down_keeps(labels: dict[str, str]) -> str:
    """Why `cloud down` keeps a TPU the API has with `labels` (labels_of), '' when it deletes it: not labelled
    created-by=onechip, or labelled another onechip home's (`another_onechips`). The one decision the down makes
    (`_ours`) and its preview says (CLI listing, MCP cloud_down's, by `listed_keeps`). Raises ConfigError when this
    home's owner-id file holds no id (the down then deletes nothing)."""
    if not _onechips(labels):
        return "not labelled created-by=onechip; onechip deletes only what it created"
    if _another_home(labels):  # made under this name (or listed by --zone) by another onechip home: never deleted
        return (
            f"labelled {records.OWNER_LABEL}={labels.get(records.OWNER_LABEL, '')[:63]}, another onechip home's "
            "(this home's id: <home>/cloud/owner-id); onechip deletes only what this home created"
        )
    return ""


def listed_keeps(resource: CloudResource) -> str:
    """down_keeps of `resource` as its zone's list showed it (CloudResource.labels, set by `targets`): why `cloud
    down` will keep it, '' when it will delete it or was not listed (its zone's list failed: the down reads it then).
    Raises ConfigError as down_keeps does."""
    return "" if resource.labels is None else down_keeps(resource.labels)


def another_onechips_line(zone: str, kind: str, ident: str, item: Json) -> str:
    """The one line refusing onechip's TPU of another onechip home (`another_onechips`) under the name `up` uses."""
    owner = labels_of(item).get(records.OWNER_LABEL, "")
    return (
        f"{zone} already has a TPU {kind} named {ident} that another onechip created (label "
        f"{records.OWNER_LABEL}={owner[:63]}, not this one's); it was not touched; give another --name"
    )


def external_ip(node: Json) -> str | None:
    for endpoint in node.get("networkEndpoints") or []:
        ip = (endpoint.get("accessConfig") or {}).get("externalIp")
        if ip:
            return str(ip)
    return None


def see_ip(resource: CloudResource, ip: str | None) -> None:
    """Set the node's current external IP (None: it has none now), keeping the last one it had in
    last_external_ip: `cloud down` stops the engines started there, though the address is no longer the node's."""
    resource.last_external_ip = ip or resource.external_ip or resource.last_external_ip
    resource.external_ip = ip


def state_of(kind: str, item: Json) -> str:
    """The API's state name of a queued resource ({"state": {"state": ...}}) or a node ({"state": ...})."""
    state = item.get("state")
    if kind == "queued-resource":
        return str((state or {}).get("state") or "") if isinstance(state, dict) else ""
    return str(state or "")


def phase(kind: str, state: str) -> str:
    """waiting, ready, ended or deleting (see QR_PHASE / NODE_PHASE); an unknown state is waiting."""
    return (QR_PHASE if kind == "queued-resource" else NODE_PHASE).get(state, "waiting")


def unknown_state(kind: str, state: str) -> str:
    """The one line for a state of a queued resource or node outside its enums (QR_PHASE, NODE_PHASE: a newer API),
    '' for a known one or none: read as the enums' STATE_UNSPECIFIED, a wait (bounded, never deleted as ended)."""
    if not state or state in (QR_PHASE if kind == "queued-resource" else NODE_PHASE):
        return ""
    what = "QueuedResourceState" if kind == "queued-resource" else "Node.state"
    return (f"{what} {state!r} is not one onechip knows (a newer API): read as STATE_UNSPECIFIED, waited on within "
            "its bound, never deleted as ended")  # fmt: skip


def qr_failure(item: Json, where: str) -> CloudError:
    """The CloudError of a FAILED queued resource, by its failedData.error code (4 DEADLINE_EXCEEDED is
    'expired', 8 RESOURCE_EXHAUSTED stockout or quota, any other 'failed'): each moves to the next zone."""
    error = ((item.get("state") or {}).get("failedData") or {}).get("error")
    if not isinstance(error, dict):
        return CloudError(f"{where}: the queued resource FAILED (no error given)", reason="failed")
    failure = refusals.from_status(error, where)
    if failure.reason not in FAILOVER:
        failure.reason = "failed"
    return failure


# NodeSpec.node_id's format (TPU API v2alpha1 QueuedResource.Tpu.NodeSpec: 'Should follow the ^[A-Za-z0-9_.+%-]+$
# regex format'; google.cloud.tpu_v2.types.QueuedResource.Tpu.NodeSpec): only such an id goes into a node's URL
_NODE_ID = re.compile(r"[A-Za-z0-9_.+%-]+")


def qr_node_id(item: Json, asked: str) -> str:
    """The id of the node a queued resource makes, as the API's copy of it says: its one nodeSpec's nodeId (NodeSpec:
    'The unqualified resource name'; only a single-node request has one), else `asked` (what the create sent: none
    given, several specs, or one not in the API's format). A granted request whose node the API named otherwise was
    polled under the name asked, 404, and deleted as 'ended' once granted."""
    specs = node_specs(item)
    ident = specs[0].get("nodeId") if len(specs) == 1 else None
    return ident if isinstance(ident, str) and _NODE_ID.fullmatch(ident) and ident not in (".", "..") else asked


def _multi_node_params(item: Json) -> list[tuple[str, int]]:
    """(node id prefix, node count) of each multislice spec of a queued resource (NodeSpec.multiNodeParams, v2alpha1:
    'This field must be populated in case of multi-node requests instead of node_id'; node_count 'Required ... This
    needs to be > 1'; 'If this field is not provided we use queued_resource_id as the node_id_prefix':
    google.cloud.tpu_v2alpha1.types.QueuedResource.Tpu.NodeSpec.MultiNodeParams, google-cloud-tpu 1.18.4). A spec
    with multiNodeParams is a multi-node request whatever its count says: a count the API does not take (0, 1, absent:
    proto3's JSON leaves a 0 out; not a whole number) is 0 here, nodes that cannot be counted. Before, 0 or absent
    named no node and 1 one, so the request read as one node's: `up` resumed it as the chip asked for."""
    own = str(item.get("name", "")).rsplit("/", 1)[-1]
    found = []
    for spec in node_specs(item):
        params = spec.get("multiNodeParams")
        if isinstance(params, dict):
            count = params.get("nodeCount")
            count = int(count) if isinstance(count, int | str) and str(count).isdecimal() else 0
            found.append((str(params.get("nodeIdPrefix") or own), count if 1 < count <= 4096 else 0))  # past any slice
    return found


def qr_node_ids(item: Json) -> list[str]:
    """The ids of every node a queued resource makes, spec by spec: its nodeId, or for a multislice spec
    (`_multi_node_params`: 'If node_count = 3 and node_id_prefix = "np", node ids of nodes created will be "np-0",
    "np-1", "np-2"') PREFIX-0 ... PREFIX-(nodeCount - 1); none for a count the API does not take (`_multi_node_params`).
    An id not in the API's format (_NODE_ID) is left out. onechip creates one spec with a nodeId
    (queued_resource_body); a multislice one is another tool's, or by hand."""
    ids: list[str] = [f"{prefix}-{k}" for prefix, count in _multi_node_params(item) for k in range(count)]
    ids += [spec["nodeId"] for spec in node_specs(item)
            if not isinstance(spec.get("multiNodeParams"), dict) and isinstance(spec.get("nodeId"), str)]  # fmt: skip
    return [i for i in ids if _NODE_ID.fullmatch(i) and i not in (".", "..")]


def qr_owns_node(item: Json, node_id: str) -> bool:
    """Whether the node `node_id` is one of those queued resource `item` makes: one `qr_node_ids` names, or PREFIX-K
    of a multislice spec whose count cannot be read (its nodes are named so all the same)."""
    prefixes = [prefix for prefix, count in _multi_node_params(item) if not count]
    return node_id in qr_node_ids(item) or any(re.fullmatch(rf"{re.escape(p)}-\d+", node_id) for p in prefixes)


def multislice_line(item: Json) -> str:
    """The one line for a multislice queued resource (a multiNodeParams spec, or more than one node: `qr_node_ids`),
    '' for any other: onechip makes and serves one-node requests, so it names the nodes and reads none of them."""
    ids = qr_node_ids(item)
    odd = [prefix for prefix, count in _multi_node_params(item) if not count]
    if len(ids) < 2 and not odd:
        return ""
    shown = ", ".join(ids[:8]) + (f", ... ({len(ids) - 8} more)" if len(ids) > 8 else "")
    counted = f"{len(ids)} nodes ({shown})" if ids else "nodes"
    uncounted = (f"{' and ' if ids else ''}nodes {', '.join(f'{p}-K' for p in odd[:4])} of a multiNodeParams spec "
                 "whose nodeCount is not one the API takes (more than 1), so not counted")  # fmt: skip
    return (f"a multislice queued resource of {counted if ids else ''}{uncounted if odd else ''}: onechip makes and "
            "serves one-node requests only, so it reads none of their states or addresses; `onechip cloud down` "
            "deletes it with all its nodes")  # fmt: skip


def fetch(api: TpuApi, kind: str, zone: str, ident: str, retry: bool = True) -> Json | None:
    """The API's copy of a queued resource or node (None when the API does not have it). `retry` False: one try."""
    try:
        return (api.get_queued_resource if kind == "queued-resource" else api.get_node)(zone, ident, retry)
    except CloudError as exc:
        if exc.reason == "not-found":
            return None
        raise


def poll(api: TpuApi, kind: str, zone: str, ident: str, end_s: float, on_progress: ProgressFn) -> Json | None:
    """`fetch` in a wait loop: an outage (no answer, 5xx, rate limit) is said and read through until `end_s`
    (time.monotonic seconds), the wait's own deadline, not one call's (tpu_api.through_outages)."""
    return api.through_outages(lambda: fetch(api, kind, zone, ident), end_s,
                               lambda line: on_progress(ProgressEvent("cloud", line)))  # fmt: skip


def _ident(resource: CloudResource) -> str:
    return resource.name if resource.kind == "queued-resource" else resource.node_id


# --- waiting


def _tick(on_progress: ProgressFn, resource: CloudResource, state: str, elapsed: float, total: float | None,
          said: str = "") -> None:  # fmt: skip
    resource.state = state
    on_progress(ProgressEvent("cloud", f"{resource.name} in {resource.zone}: {state}{said}", elapsed, total))


def wait_queued(api: TpuApi, resource: CloudResource, valid_until_s: float, on_progress: ProgressFn,
                timeout_s: float) -> float:  # fmt: skip
    """Poll a queued resource until ACTIVE; return when it was read so (time.monotonic seconds: `wait_node_ready`'s
    `qr_read_s`). Raises CloudError when it ends instead (FAILED: by its error
    code; SUSPENDING/SUSPENDED/DELETING: 'ended') or is still waiting at valid-until + grace ('expired');
    PROVISIONING (it cannot be deleted) is waited out for up to `timeout_s` more. An outage of the API (5xx,
    no answer) is polled through up to that same end (`poll`): it ended before only the 30-s call deadline.
    The caller deletes what is left."""
    started = time.monotonic()
    where = f"{resource.name} in {resource.zone}"
    end_s = started + valid_until_s + QUEUE_GRACE_S + timeout_s
    seen = ""  # the last state the API showed it in: once shown, a NOT_FOUND is a delete, not a lag
    while True:
        elapsed = time.monotonic() - started
        item = poll(api, resource.kind, resource.zone, resource.name, end_s, on_progress)
        read_s = time.monotonic()
        if item is None and seen:  # deleted outside this run, on purpose: `up` stops (deleted_outside)
            raise deleted_outside(where, seen)
        if item is None and elapsed > CREATE_GRACE_S:  # just created, the API may not show it for a moment
            raise CloudError(f"{where}: the API does not have it {CREATE_GRACE_S:.0f} s after its create")
        seen = seen if item is None else state_of(resource.kind, item) or "STATE_UNSPECIFIED"
        state = state_of(resource.kind, item or {})
        if state != resource.state and (line := unknown_state(resource.kind, state)):
            on_progress(ProgressEvent("cloud", f"{where}: {line}"))  # once, not every poll
        _tick(on_progress, resource, state or "CREATING", elapsed, valid_until_s)
        step = phase(resource.kind, state)
        if step == "ready":
            named = qr_node_id(item or {}, resource.node_id)
            if named != resource.node_id:  # recorded under it: status reads it, down finds it
                on_progress(ProgressEvent("cloud", f"{where}: its node is {named} (the API's nodeSpec), not "
                                          f"{resource.node_id}"))  # fmt: skip
                resource.node_id = named
                records.save(resource)
            return read_s
        if state == "FAILED":
            raise qr_failure(item or {}, where)
        if step in ("ended", "deleting"):
            raise CloudError(f"{where}: {state} before it was granted", reason="ended")
        if state != "PROVISIONING" and elapsed > valid_until_s + QUEUE_GRACE_S:
            raise CloudError(f"{where}: still {state or 'CREATING'} at --valid-until", reason="expired")
        if elapsed > valid_until_s + QUEUE_GRACE_S + timeout_s:
            raise CloudError(f"{where}: still PROVISIONING {timeout_s:.0f} s past --valid-until")
        time.sleep(api.poll_s)


def deleted_outside(where: str, seen: str) -> CloudError:
    """The one line (reason 'deleted') for a TPU `up` waits on that the API showed (in state `seen`) and then no longer
    has: someone (the console, gcloud, another tool) deleted it on purpose, so `up` stops rather than create another in
    the next zone (it did: 'ended' moved on, a second request queued that nobody wanted). Not FAILOVER; its record is
    dropped by the caller (the API has nothing of it, and nothing of it bills)."""
    return CloudError(
        f"{where}: the API no longer has it: deleted outside this run while {seen} (by hand or by another tool); "
        "no other zone was tried - run `onechip cloud up` again for a new one",
        reason="deleted",
    )


def wait_node_ready(api: TpuApi, resource: CloudResource, timeout_s: float, on_progress: ProgressFn,
                    qr_read_s: float | None = None) -> Json:  # fmt: skip
    """Poll the node until READY and healthy (Node.health not UNHEALTHY: a READY node the API reports TIMEOUT or
    UNHEALTHY_* runs nothing reliably, and the API may repair it; a value onechip does not know is said once and read
    as unknown, HEALTH_UNSPECIFIED); record its external IP and the time billing
    started (READY: it bills, healthy or not). Raises CloudError 'ended' when it ends (preempted, stopped, deleting, its
    queued resource suspended or failed while it is not there: `_still_granted`, or not there CREATE_GRACE_S after the
    wait began), 'deleted' when deleted outside this run (`deleted_outside`), and 'other' when not READY and healthy
    within `timeout_s`; an outage
    of the API is polled through within `timeout_s` (`poll`). `qr_read_s`: when a queued resource was last read ACTIVE
    (time.monotonic seconds, `wait_queued`'s); a node not there within a poll of it does not read the queued resource
    again (`_still_granted`: the first poll read it twice, a GET whose answer it had a moment before)."""
    started = time.monotonic()
    where = f"node {resource.node_id} in {resource.zone}"
    last = ""  # the node state last seen (a queued resource's `state` is its own)
    seen = ""  # the last state the API showed the node in: a spot or on-demand node gone since was deleted outside
    while True:
        elapsed = time.monotonic() - started
        node = poll(api, "node", resource.zone, resource.node_id, started + timeout_s, on_progress)
        if node is None and seen and resource.kind == "node":  # a queued resource's node goes when its run ends
            raise deleted_outside(where, seen)
        seen = (state_of("node", node) or "STATE_UNSPECIFIED") if node is not None else seen
        if node is None and resource.kind == "queued-resource":
            if qr_read_s is None or time.monotonic() - qr_read_s >= api.poll_s:
                _still_granted(api, resource, started + timeout_s, on_progress)
            qr_read_s = None  # remembered within one poll: each later poll reads it
        state = state_of("node", node) if node is not None else "gone"
        health = str((node or {}).get("health") or "")
        if state != last and (line := unknown_state("node", state)):
            on_progress(ProgressEvent("cloud", f"{where}: {line}"))  # once, not every poll
        last = state
        if state == "READY" and health != resource.health and (line := unknown_health(health)):
            on_progress(ProgressEvent("cloud", f"node {resource.node_id}: {line}"))  # once, not every poll
        resource.health = health
        sick = state == "READY" and unhealthy(health)
        _tick(on_progress, resource, state or "CREATING", elapsed, None, f" ({health})" if sick else "")
        if node is None and elapsed <= CREATE_GRACE_S:  # a create whose answer was lost: the API may show it late
            time.sleep(api.poll_s)
            continue
        if node is not None and state == "READY":
            see_ip(resource, external_ip(node))
            resource.granted_at = resource.granted_at or now_iso(api)
            records.save(resource)
            if not sick:
                return node
        if node is None or phase("node", state) in ("ended", "deleting"):
            raise CloudError(f"{where} is {state}", reason="ended")
        if elapsed > timeout_s:
            if sick:
                raise CloudError(f"{where} is READY but {resource.health} (Node.health) after {timeout_s:.0f} s")
            raise CloudError(f"{where} not READY after {timeout_s:.0f} s")
        time.sleep(api.poll_s)


def _still_granted(api: TpuApi, resource: CloudResource, end_s: float, on_progress: ProgressFn) -> None:
    """Raise CloudError when the queued resource whose node is not there (yet) has ended: 'ended' for one SUSPENDING,
    SUSPENDED (a spot one preempted, a flex-start run over: 'the resources ... have been deleted', QueuedResourceState)
    or FAILED, 'deleted' for one the API no longer has. Its node's 404 was waited CREATE_GRACE_S as a create's lag
    first, then said 'node ... is gone', not why."""
    where = f"{resource.name} in {resource.zone}"
    item = poll(api, resource.kind, resource.zone, resource.name, end_s, on_progress)
    if item is None:
        raise deleted_outside(where, "granted")
    state = state_of(resource.kind, item)
    if state == "FAILED":
        raise qr_failure(item, where)
    if phase(resource.kind, state) in ("ended", "deleting"):
        raise CloudError(f"{where}: {state} before its node {resource.node_id} was READY", reason="ended")


def send_delete(api: TpuApi, resource: CloudResource, retry: bool = True) -> Json:
    """Send the delete of a queued resource with its node (force), or of a node, once; return its operation.
    Raises CloudError as the API refuses it (tpu_api.TpuApi.call: one call's retries; `retry` False: one try)."""
    if resource.kind == "queued-resource":
        return api.delete_queued_resource(resource.zone, resource.name, retry)
    return api.delete_node(resource.zone, resource.node_id, retry)


def delete(api: TpuApi, resource: CloudResource, on_progress: ProgressFn = no_progress,
           limit_s: float = DELETE_WAIT_S, end_s: float | None = None,
           sent: Json | CloudError | None = None) -> None:  # fmt: skip
    """Delete a queued resource with its node (force), or a node, and wait until the API no longer has it;
    then forget the record (only then: a delete that answered 'not found' while a GET still finds it is
    sent again). A queued resource in PROVISIONING cannot be deleted (FAILED_PRECONDITION, seed), nor any resource
    the API answers so (said with its state, _not_deletable_yet): it is waited out, and one already DELETING is
    waited for, whatever the API answers its delete (_on_its_way_out); one refused by an outage or a rate limit
    (tpu_api.OUTAGE) is sent again after the wait it asks for. All of it ends at `end_s` (time.monotonic seconds:
    a `down`'s, `limit_s` after it began, shared by all its TPUs, whose deletes it sent first); None: `limit_s` from
    now. Past it nothing is sent again nor read through, and a resource the API no longer has then counts as
    deleted. `sent`: what this delete's first send got (`send_delete`'s operation, or its refusal), met as a send
    made here; None: sent here. Raises CloudError when the API refuses or keeps failing. The wait is said through
    `on_progress` (a delete takes minutes)."""
    started = time.monotonic()
    shared = end_s is not None
    end_s = started + limit_s if end_s is None else end_s
    since_s = end_s - limit_s  # when the bound began: now, or the down's start
    version = "v2alpha1" if resource.kind == "queued-resource" else "v2"
    what = f"delete of {resource.kind} {resource.name} in {resource.zone}"
    resent = 0

    # the bound this delete is under, as the resend and give-up lines name it: a down's, shared by its TPUs, or its own
    bound = f"within the down's {limit_s:g} s, all its TPUs together" if shared else f"for up to {limit_s:g} s"

    def gave_up(exc: CloudError) -> CloudError:  # one call's tries alone read as giving up at once
        spent_s = time.monotonic() - started
        if resent:
            return exc.reworded(f"{exc}; the delete was sent again {resent} times over {spent_s:.0f} s ({bound})")
        if exc.reason in OUTAGE and shared and time.monotonic() >= end_s:
            return exc.reworded(f"{exc}; not sent again: the down's {limit_s:g} s, all its TPUs together, are spent")
        return exc

    def waiting(elapsed_s: float) -> None:
        on_progress(ProgressEvent("cloud", f"{resource.name} in {resource.zone}: waiting for the API to delete it",
                                  elapsed_s, limit_s))  # fmt: skip

    while True:
        first, sent = sent, None
        try:
            if isinstance(first, CloudError):
                raise first
            operation = send_delete(api, resource) if first is None else first
            api.wait_operation(
                operation, version, limit_s, waiting, what, end_s, since_s, lambda: _on_its_way_out(api, resource)
            )
        except CloudError as exc:
            if time.monotonic() > end_s:
                if not _gone(api, resource):  # a delete done while the down waited on the others is not a failure
                    raise gave_up(exc) from None
            elif exc.reason == "precondition":
                on_progress(ProgressEvent("cloud", _not_deletable_yet(api, resource, exc)))
            elif exc.reason != "not-found" and not _on_its_way_out(api, resource):
                wait_s = exc.retry_after_s or 0.0  # RetryInfo / Retry-After: what the API asked to wait
                if exc.reason not in OUTAGE or time.monotonic() + wait_s > end_s:
                    raise gave_up(exc) from None
                # an outage or a rate limit past the call's own deadline refused it (nothing was done): sent again,
                # within limit_s, as a delete the API cannot start yet is; the bound and the way out said, as an
                # outage may hold it there that long
                left_s = end_s - time.monotonic()
                on_progress(ProgressEvent("cloud", f"{exc}; the delete is sent again in {wait_s:g} s, {bound} "
                                                   f"({left_s:.0f} s left); Ctrl-C stops it, naming "
                                                   f"it and the command that deletes it"))  # fmt: skip
                resent += 1
                time.sleep(wait_s)
        while (item := poll(api, resource.kind, resource.zone, _ident(resource), end_s,
                            on_progress)) is not None:  # fmt: skip
            if time.monotonic() > end_s:
                # said with the resends too: a wait that ran out here, between two refused sends, is one the
                # API refused throughout (before: 'still there after its delete' alone, as if sent once)
                raise gave_up(CloudError(f"{resource.kind} {resource.name} in {resource.zone} is still there after "
                                         "its delete"))  # fmt: skip
            deleting = phase(resource.kind, state_of(resource.kind, item)) == "deleting"
            if deleting:  # not said while PROVISIONING: its own line says that wait
                waiting(time.monotonic() - since_s)
            time.sleep(api.poll_s)
            if not deleting:
                break  # not on its way out: send the delete again
        else:
            records.forget(resource)
            return


def _not_deletable_yet(api: TpuApi, resource: CloudResource, refusal: CloudError) -> str:
    """The progress line of a delete the API refused as FAILED_PRECONDITION ('not in a state required for the
    operation', google.rpc.Code): the state the API shows it in now (a queued resource PROVISIONING, the seed's case,
    or SUSPENDING; a node in transition), or, unreadable, the API's own words."""
    try:
        item = fetch(api, resource.kind, resource.zone, _ident(resource))
    except CloudError:
        item = None
    state = state_of(resource.kind, item) if item is not None else ""
    said = f"{resource.kind} {resource.name} is {state}" if state else f"{resource.kind} {resource.name}"
    return f"{said}: the API refuses its delete for now ({refusal}); waiting"


def _gone(api: TpuApi, resource: CloudResource) -> bool:
    """Whether the API no longer has `resource` (one read; False when it cannot be read)."""
    try:
        return fetch(api, resource.kind, resource.zone, _ident(resource)) is None
    except CloudError:
        return False


def _there(api: TpuApi, resource: CloudResource) -> bool:
    """Whether the API has `resource` (one read; False when it cannot be read)."""
    try:
        return fetch(api, resource.kind, resource.zone, _ident(resource)) is not None
    except CloudError:
        return False


def _on_its_way_out(api: TpuApi, resource: CloudResource) -> bool:
    """Whether the API shows `resource` DELETING, or has it no more: a delete refused then (Google's APIs answer a
    request that conflicts with an operation in progress ABORTED, HTTP 409: cloud.google.com/apis/design/errors;
    Compute Engine a resource in transition 400 resourceNotReady) is waited out as one that went through. False when
    it cannot be read."""
    try:
        item = fetch(api, resource.kind, resource.zone, _ident(resource))
    except CloudError:
        return False
    return item is None or phase(resource.kind, state_of(resource.kind, item)) == "deleting"


def _clean_up(api: TpuApi, resource: CloudResource, failure: CloudError, on_progress: ProgressFn) -> None:
    """Delete what a failed attempt left (said on the console). Raises CloudError naming what may still
    exist and its delete command when that delete fails (then `up` stops: nothing is left behind untold), and
    Interrupted naming the same on Ctrl-C (a create's leftovers, and a resumed TPU that ended, alike)."""
    on_progress(ProgressEvent("cloud", f"{resource.zone}: {failure.reason}; deleting {resource.kind} {resource.name}"))
    try:
        delete(api, resource, on_progress)
    except CloudError as exc:
        raise _may_exist(failure, resource, f"and it could not be deleted ({exc})") from None
    except KeyboardInterrupt:
        raise Interrupted(interrupted_message(resource)) from None


def may_exist_clause(resource: CloudResource) -> str:
    """The clause an error ends with when `resource` may exist: where, and the command that deletes it."""
    return f"{resource.kind} {resource.name} may exist in {resource.zone}: {delete_command(resource)}"


def _may_exist(failure: CloudError, resource: CloudResource, why: str = "") -> CloudError:
    """`failure`, saying that `resource` may exist (it stays recorded) and how to delete it."""
    said = f"{failure}; {why + '; ' if why else ''}{may_exist_clause(resource)}"
    return CloudError(said, reason=failure.reason, code=failure.code, status=failure.status)


# --- up


def new_resource(api: TpuApi, request: CloudUpRequest, name: str, zone: str, member: Member = None) -> CloudResource:
    """The record of what `up` is about to create in `zone` (priced from the catalog); `member`: (set name,
    index) of a `cloud up --replicas N` TPU."""
    accelerator_type, runtime = offers.tpu_type(request.chip)
    flex = request.provisioning == "flex-start"
    quote = offers.quote(request.chip, request.provisioning, zone, None)
    return CloudResource(
        name=name, kind="queued-resource" if flex else "node", node_id=f"{name}-node" if flex else name,
        project=api.project, zone=zone, chip=request.chip, accelerator_type=accelerator_type,
        runtime_version=runtime, provisioning=request.provisioning, created_at=now_iso(api),
        max_run_duration_s=request.max_run_duration_s if flex else None, max_hours=request.max_hours,
        usd_per_hour=quote.usd_per_hour, price_source=quote.price_source, ssh_user=request.ssh_user,
        replica_set=member[0] if member else None, replica_index=member[1] if member else None,
    )  # fmt: skip


def create(api: TpuApi, request: CloudUpRequest, resource: CloudResource, on_progress: ProgressFn) -> None:
    """Record `resource`, send its create, wait until its node is READY. Recorded before the request is
    sent, and forgotten only when the API says it does not exist (or it was deleted), so nothing of ours is
    ever untracked. A refusal raises CloudError: after deleting what the attempt left when the next zone is
    to be tried (FAILOVER), else naming what may exist; Ctrl-C raises Interrupted naming what may exist."""
    node = node_body(resource, ssh_keys_metadata(request.ssh_user, request.ssh_key))
    records.save(resource)
    try:
        _send_create(api, request, resource, node, on_progress)
        try:
            read_s = None  # when the queued resource was read ACTIVE: its node's first poll need not read it again
            if resource.kind == "queued-resource":
                read_s = wait_queued(api, resource, request.valid_until_s, on_progress, request.timeout_s)
            wait_node_ready(api, resource, request.timeout_s, on_progress, read_s)
        except CloudError as exc:
            if exc.reason == "deleted":
                records.forget(resource)
                raise
            if exc.reason in FAILOVER:
                _clean_up(api, resource, exc, on_progress)
                raise
            raise _may_exist(exc, resource) from None
    except KeyboardInterrupt:
        raise Interrupted(interrupted_message(resource)) from None


def _send_create(api: TpuApi, request: CloudUpRequest, resource: CloudResource, node: Json,
                 on_progress: ProgressFn) -> None:  # fmt: skip
    """POST the create (retried through an outage: TpuApi._create) and wait for its operation. A create the API
    refused made nothing: the record is dropped. One a retry found made (ALREADY_EXISTS, labelled) is waited on.
    One that never got an answer is looked up: there, it is waited on; not there, dropped; the API not
    answering, kept (it may exist). An operation's error (code 8: stockout) deletes what it left."""
    version = "v2alpha1" if resource.kind == "queued-resource" else "v2"
    try:
        if resource.kind == "queued-resource":
            node.pop("schedulingConfig", None)
            body = queued_resource_body(resource, node, request.valid_until_s)
            operation = api.create_queued_resource(resource.zone, resource.name, body)
        else:
            operation = api.create_node(resource.zone, resource.node_id, node)
    except CloudError as exc:
        if exc.reason not in ("transient", "bad-endpoint", "conflict"):
            records.forget(resource)  # refused (quota, unsupported, auth, rate-limit ...): nothing was made
            raise
        try:  # no answer, or the name is taken (claim_name did not see it: the API lists what it just made late)
            made = fetch(api, resource.kind, resource.zone, _ident(resource))
        except CloudError:
            raise _may_exist(exc, resource) from None
        if made is None:
            records.forget(resource)
            raise
        if exc.reason == "conflict":  # a name used before that claim_name's read did not show (the API lags)
            _resume_taken(api, request, resource, made, exc, on_progress)
        return
    if operation is None:  # a retry answered ALREADY_EXISTS: the first try made it (unless the name is foreign)
        made = fetch(api, resource.kind, resource.zone, _ident(resource))
        if made is not None:
            _refuse_foreign(resource, made)
        on_progress(ProgressEvent("cloud", f"{resource.name}: the create's first try made it; waiting on it"))
        return
    try:
        api.wait_operation(operation, version, request.timeout_s, lambda s: _tick(on_progress, resource, "CREATING", s,
                           None), f"create of {resource.kind} {resource.name} in {resource.zone}",
                           settled=lambda: _there(api, resource))  # fmt: skip
    except CloudError as exc:
        if exc.reason == "not-found":  # the operation, not the TPU (past wait_operation's grace): the TPU says the rest
            short = str(operation.get("name", "")).rsplit("/", 1)[-1]
            on_progress(ProgressEvent("cloud", f"{resource.name}: the API no longer has the create's operation "
                                      f"{short}; reading the {resource.kind} itself"))  # fmt: skip
            return
        if exc.reason in FAILOVER:
            _clean_up(api, resource, exc, on_progress)
            raise
        raise _may_exist(exc, resource) from None


def _resume_taken(api: TpuApi, request: CloudUpRequest, resource: CloudResource, made: Json, conflict: CloudError,
                  on_progress: ProgressFn) -> None:  # fmt: skip
    """Meet a create answered ALREADY_EXISTS (AIP-133: its id is taken) by `made`, the API's copy under that name, as
    claim_name meets one it reads: not onechip's, refused (ConfigError, its record dropped); onechip's, of the chip and
    pricing model asked and waiting or ready, waited on as this create's (said in one line); onechip's but another
    (`_not_asked`: ConfigError naming it and its delete command, recorded as the API has it) or ended (CloudError
    naming it and its delete command: `up` again deletes it first). Before, onechip's own live TPU stopped `up` with
    'run it again to resume it'."""
    _refuse_foreign(resource, made)
    kind, state = resource.kind, state_of(resource.kind, made)
    seen = _from_api(api, resource.zone, made, kind).model_copy(update={"recorded": True})
    if not _as_asked(request, kind, kind, seen, made):
        records.save(seen)  # its record as the API has it (this create's, saved over any it had, asked another)
        raise ConfigError(_not_asked(seen, seen, state, offers.tpu_type(request.chip)[0], request.provisioning, made))
    if phase(kind, state) not in ("waiting", "ready"):
        raise _may_exist(conflict, resource, f"it is onechip's, {state or 'no state'} (`onechip cloud up` again "
                         "deletes it and creates a new one)") from None  # fmt: skip
    resource.created_at = seen.created_at  # billed from the API's times, not from this run's (claim_name's _fetch)
    if kind == "node" and phase(kind, state) == "ready":
        resource.granted_at = granted_from(resource, made)
    records.save(resource)
    on_progress(ProgressEvent("cloud", f"{resource.name}: the API already has onechip's {kind} of that name "
                              f"({state or 'no state'}), of the chip and model asked; waiting on it"))  # fmt: skip


def _refuse_foreign(resource: CloudResource, made: Json) -> None:
    """Raise ConfigError (and drop the record) when `made`, the resource our create collided with, is not this
    onechip's: not labelled onechip's, or labelled by another onechip home (`another_onechips`)."""
    if not labelled(made):
        records.forget(resource)
        raise ConfigError(f"{resource.zone} already has a TPU {resource.kind} named {_ident(resource)} that "
                          "onechip did not create; give another --name") from None  # fmt: skip
    if another_onechips(made):
        records.forget(resource)
        raise ConfigError(another_onechips_line(resource.zone, resource.kind, _ident(resource), made)) from None


def interrupted_message(resource: CloudResource, when: str = "") -> str:
    """What exists after Ctrl-C (`when`: ' while the engines started', say), whether it bills, and the command that
    deletes it."""
    return (
        f"interrupted{when}: {resource.kind} {resource.name} exists in {resource.zone} ({bills_clause(resource)}); "
        f"delete it with: {delete_command(resource)}"
    )


def bills_clause(resource: CloudResource) -> str:
    """'last state S; whether it bills' of a TPU a Ctrl-C or a `demo --keep` leaves: a node bills until deleted; a
    queued request nothing until granted (its node READY, itself ACTIVE), then until deleted or its max run duration
    ends (flex-start stops itself there). A state not yet read (a create whose answer was lost) is said as CREATING."""
    state = resource.state or "CREATING"
    if resource.kind != "queued-resource":
        billing = "it bills until deleted"
    elif "ready" in (QR_PHASE.get(state), NODE_PHASE.get(state)):
        billing = "granted: it bills until deleted or its max run duration ends"
    else:
        billing = "a queued request bills nothing until granted, then until its max run duration"
    return f"last state {state}; {billing}"


def _recorded(api: TpuApi, kind: str, zone: str, name: str) -> CloudResource | None:
    for r in records.load_all():
        if (r.project, r.zone, r.kind, r.name) == (api.project, zone, kind, name):
            return r
    return None


def claim_name(api: TpuApi, request: CloudUpRequest, name: str, zones: list[str],
               on_progress: ProgressFn) -> CloudResource | None:  # fmt: skip
    """Make `name` free in every zone `up` may create it in: a resource of that name (or its flex-start node
    id) that onechip did not create, or another onechip home did (`another_onechips`), is refused (ConfigError, one
    line) and never touched; one of ours that ended or failed is
    deleted (said on the console); one being deleted is waited out. Returns one of ours still alive (waiting
    or ready, of the kind asked for): `up` resumes it instead of creating a second; Ctrl-C while one that ended is
    deleted raises Interrupted naming it (recorded first, so `cloud down` finds it). One of ours alive that is not
    what `request` asks for (another chip or pricing model, by the API's own copy; or a node, not the queued
    resource's, under a flex-start name's node id) is refused (ConfigError, `_not_asked`): it was reused as the TPU
    asked for, or deleted as 'ended', running."""
    kind = "queued-resource" if request.provisioning == "flex-start" else "node"
    wanted = offers.tpu_type(request.chip)[0]
    alive = None
    for zone in zones:
        ids = [(kind, name)] + ([("node", f"{name}-node")] if kind == "queued-resource" else [])
        for item_kind, ident in ids:
            item = fetch(api, item_kind, zone, ident)
            if item is None:
                continue
            if item_kind != kind and (again := fetch(api, kind, zone, name)) is not None:
                item_kind, ident, item = kind, name, again  # its queued resource after all (a 404 read too soon)
            if not labelled(item):
                raise ConfigError(f"{zone} already has a TPU {item_kind} named {ident} that onechip did not "
                                  "create; give another --name")  # fmt: skip
            if another_onechips(item):  # never resumed, nor deleted as one of ours that ended
                raise ConfigError(another_onechips_line(zone, item_kind, ident, item))
            state = state_of(item_kind, item)
            seen = _from_api(api, zone, item, item_kind)  # the API's word on its chip and pricing model
            found = _recorded(api, item_kind, zone, ident) or seen
            live = phase(item_kind, state) in ("waiting", "ready")
            if live and not _as_asked(request, kind, item_kind, seen, item):
                raise ConfigError(_not_asked(found, seen, state, wanted, request.provisioning, item))
            if live:
                alive = alive or found
            else:  # ours, ended (a flex-start node id's node too: one left without its queued resource)
                on_progress(ProgressEvent("cloud", f"deleting {item_kind} {ident} in {zone} ({state or 'no state'}): "
                                          "it ended, so its name can be used again"))  # fmt: skip
                found.state = state
                records.save(found)  # recorded while it is deleted: Ctrl-C in the wait must not leave it untracked
                try:
                    delete(api, found, on_progress)
                except KeyboardInterrupt:
                    raise Interrupted(interrupted_message(found)) from None
            break  # a queued resource found (alive or deleted with its node): its node id is settled too
    return alive


def _as_asked(request: CloudUpRequest, kind: str, item_kind: str, seen: CloudResource, item: Json) -> bool:
    """Whether `seen` (the API's copy `item` of onechip's TPU of `item_kind` under the name `up` uses) is what `request`
    asks for: the `kind` asked (a queued resource for flex-start, else a node), its chip and pricing model, and one
    node (a multislice queued resource, `multislice_line`, was resumed as the one chip asked for)."""
    wanted = offers.tpu_type(request.chip)[0]
    return (item_kind == kind and (seen.accelerator_type or wanted, seen.provisioning) == (wanted, request.provisioning)
            and not multislice_line(item))  # fmt: skip


def tpu_name(request: CloudUpRequest) -> str:
    """The name `up` gives the TPU of `request` (of a set, the set's name): --name, else onechip-CHIP with CHIP as
    onechip's key however it was named (offers.chip_key: 'v5litepod-1' -> onechip-v5e-1, as `up` sees it after
    api.cloud_target). The one rule: a demo looking for the TPU it got, a preview naming it, use it too. Raises
    ConfigError for a chip that is no Cloud TPU onechip knows."""
    return request.name or f"onechip-{offers.chip_key(request.chip)}"


def reusable(api: TpuApi, request: CloudUpRequest) -> CloudResource | None:
    """The live TPU of onechip's that `up(request)` will resume under its name (tpu_name) rather than create one
    (claim_name's rule, read only: nothing is deleted or refused here): the first of its zones (zones_for) holding
    one labelled, waiting or ready, of the kind, chip and pricing model asked for; its record when there is one.
    None: `up` creates one (or refuses what it finds, claim_name saying why). Raises CloudError when the API cannot
    be read, ConfigError when no zone is known."""
    kind, name = "queued-resource" if request.provisioning == "flex-start" else "node", tpu_name(request)
    for zone in zones_for(request):
        try:
            item = fetch(api, kind, zone, name)
        except CloudError as exc:
            if exc.reason == "inaccessible":  # a zone this project may not use holds nothing of it: `up` skips it
                continue
            raise
        if item is not None and (not labelled(item) or another_onechips(item)):
            return None  # not this onechip's: claim_name refuses it
        if item is None or phase(kind, state_of(kind, item)) not in ("waiting", "ready"):
            continue  # none, or one of ours that ended: `up` deletes it and goes on
        if not _as_asked(request, kind, kind, seen := _from_api(api, zone, item, kind), item):
            return None  # not what is asked for: claim_name refuses it
        return _recorded(api, kind, zone, name) or seen
    return None


def reuse_quote(existing: CloudResource) -> Quote:
    """The quote of onechip's TPU `existing` that `up` resumes: its own chip, pricing model, zone and limit (the API's
    runDuration, its record's --max-hours: what ends its run, and what `status` warns by), not those asked this time."""
    return offers.quote(existing.chip, existing.provisioning, existing.zone, limit_of(existing))


def _not_asked(found: CloudResource, seen: CloudResource, state: str, wanted: str, provisioning: str,
               item: Json) -> str:  # fmt: skip
    """The one line refusing `found`, onechip's live TPU under the name `up` would use, that is not the `wanted`
    accelerator type with `provisioning` (`seen`: the API's copy of it, `item` as the API sent it), a multislice queued
    resource, or a node under a flex-start node id."""
    what = f"{seen.accelerator_type or 'a TPU'} {seen.provisioning}, not the {wanted} {provisioning} asked for"
    if multislice := multislice_line(item):
        what = f"{multislice.split(':', 1)[0]}, not the one {wanted} asked for"
    elif found.kind == "node" and provisioning == "flex-start":
        what = f"a flex-start {found.name.removesuffix('-node')} would take that node id"
    return (f"{found.zone} already has onechip's {found.kind} {found.name} ({state or 'no state'}): {what}; give "
            f"another --name, or delete it first: {delete_command(found)}")  # fmt: skip


def zones_for(request: CloudUpRequest | CloudProbeRequest) -> list[str]:
    """The zones to try, in order: --zone, else those the catalog and probes saw offering chip + model."""
    zones = request.zones or offers.default_zones(records.observed(), request.chip, request.provisioning)
    if not zones:
        raise ConfigError(
            f"no zone is known to offer {request.chip} {request.provisioning}; give --zone Z1,Z2 "
            f"(see `onechip cloud zones --chip {request.chip}`)"
        )
    return zones


def checked_zones(api: TpuApi, request: CloudUpRequest | CloudProbeRequest,
                  on_progress: ProgressFn = no_progress) -> tuple[list[str], list[Attempt]]:  # fmt: skip
    """`zones_for(request)`, each checked to be a zone of the API (TpuApi.check_zone: a read) before anything is
    created: a typo in the last of --zone good,typo was found only at its create, after TPUs were created (billed)
    and deleted in the zones before it. Returns the zones to try and an Attempt 'inaccessible' for each this project
    may not use (a 403 'Location Z is not found or access is unauthorized.', cloud.refusals: the next is tried, as
    after a stockout; said through `on_progress`). Raises CloudError naming the zone the API has not (NOT_FOUND)."""
    zones, refused = [], []
    for zone in zones_for(request):
        started = time.monotonic()
        try:
            api.check_zone(zone)
        except CloudError as exc:
            if exc.reason != "inaccessible":
                raise
            refused.append(_attempt(zone, request, exc, time.monotonic() - started))
            on_progress(ProgressEvent("cloud", f"{zone}: {INACCESSIBLE} ({refused[-1].message}); trying the next"))
            continue
        zones.append(zone)
    return zones, refused


def up(api: TpuApi, request: CloudUpRequest, on_progress: ProgressFn, member: Member = None,
       claimed: bool = False) -> CloudUpResult:  # fmt: skip
    """Get `request.chip` with `request.provisioning`, trying each zone in order; a stockout, quota,
    unsupported-model, expired, failed or ended attempt moves on to the next zone (after deleting what it
    left). A labelled resource of the same name that is still alive is resumed instead of created again;
    one that ended is deleted first; a foreign one is refused. Returns the READY resource and every attempt.
    Raises CloudError (every zone refused: each reason listed; or a failure that is not the zone's, naming
    what may exist), Interrupted (Ctrl-C: what exists and the delete command), ConfigError. `member`: (set
    name, index) when this TPU is one of a `cloud up --replicas N` set (up_set). `claimed`: the caller holds the
    name's claim (records.claimed(api.project, tpu_name(request))) beyond this up (a `demo --cloud`, until its TPU is
    deleted); a flock of a second descriptor would find it taken."""
    name = tpu_name(request)
    if claimed:
        return _up_claimed(api, request, name, on_progress, member)
    with records.claimed(api.project, name):  # a second `up` of this home must not resume, or delete, the first's
        return _up_claimed(api, request, name, on_progress, member)


def _up_claimed(api: TpuApi, request: CloudUpRequest, name: str, on_progress: ProgressFn,
                member: Member) -> CloudUpResult:  # fmt: skip
    """`up`, its name claimed (records.claimed)."""
    zones, attempts = checked_zones(api, request, on_progress)
    if not zones:
        raise _no_zone(request, attempts)
    limit_s = request.max_run_duration_s if request.provisioning == "flex-start" else (
        request.max_hours * 3600 if request.max_hours else None)  # fmt: skip
    existing = claim_name(api, request, name, zones, on_progress)
    if existing is not None:
        on_progress(ProgressEvent("cloud", f"reusing {existing.kind} {name} in {existing.zone}"))
        if member:
            existing.replica_set, existing.replica_index = member
        records.save(existing)
        try:
            _fetch(api, existing)  # one READY before this run bills from its createTime, not from now
            read_s = None  # when the queued resource was read ACTIVE: its node's first poll need not read it again
            if existing.kind == "queued-resource":
                read_s = wait_queued(api, existing, request.valid_until_s, on_progress, request.timeout_s)
            wait_node_ready(api, existing, request.timeout_s, on_progress, read_s)
        except KeyboardInterrupt:
            raise Interrupted(interrupted_message(existing)) from None
        except CloudError as exc:
            if exc.reason == "deleted":
                records.forget(existing)
                raise
            if exc.reason not in FAILOVER:
                raise _may_exist(exc, existing) from None
            _clean_up(api, existing, exc, on_progress)  # it ended while resumed: create anew below
        else:
            return CloudUpResult(resource=existing, reused=True, quote=reuse_quote(existing),
                                 delete_command=delete_command(existing))  # fmt: skip
    for zone in zones:
        resource = new_resource(api, request, name, zone, member)
        started = time.monotonic()
        try:
            create(api, request, resource, on_progress)
        except CloudError as exc:
            attempts.append(_attempt(zone, request, exc, time.monotonic() - started))
            if exc.reason not in FAILOVER:
                raise
            said = f"{INACCESSIBLE} ({attempts[-1].message})" if exc.reason == "inaccessible" else exc.reason
            on_progress(ProgressEvent("cloud", f"{zone}: {said}; trying the next zone"))
            continue
        attempts.append(Attempt(zone=zone, provisioning=request.provisioning, outcome="available",
                                elapsed_s=round(time.monotonic() - started, 1), checked_at=now_iso()))  # fmt: skip
        quote = offers.quote(request.chip, request.provisioning, zone, limit_s)
        return CloudUpResult(resource=resource, attempts=attempts, quote=quote, delete_command=delete_command(resource))
    raise _no_zone(request, attempts)


def _no_zone(request: CloudUpRequest, attempts: list[Attempt]) -> CloudError:
    """The one line of an `up` that every zone refused: each zone with its refusal and the API's words."""
    tried = "; ".join(f"{a.zone}: {a.outcome} ({a.message})" for a in attempts)
    return CloudError(f"no zone gave {request.chip} {request.provisioning}: {tried}", reason=attempts[-1].outcome)


# --- up --replicas N: a set of one-chip TPUs


def set_names(name: str, n: int) -> list[str]:
    """The TPUs of a set named `name`: NAME-0 ... NAME-(n-1). Raises ConfigError when the last is longer than
    the 58 characters a name may have (schemas.cloud ResourceName)."""
    names = [f"{name}-{k}" for k in range(n)]
    if len(names[-1]) > 58:
        raise ConfigError(f"--name {name}: with --replicas {n} its TPUs are {names[0]} ... {names[-1]}, past 58 "
                          "characters; give a shorter --name")  # fmt: skip
    return names


def set_delete_command(project: str, name: str) -> str:
    """The command that deletes every TPU of the set `name` recorded here (no --zone: only recorded ones)."""
    return f"onechip cloud down --name {name} --project {project} --yes"


def set_members(project: str, name: str) -> list[CloudResource]:
    """The recorded TPUs of the set `name` in `project`, by index."""
    found = [r for r in records.load_all() if r.replica_set == name and r.project == project]
    return sorted(found, key=lambda r: (r.replica_index or 0, r.name))


def set_interrupted_message(project: str, name: str, when: str = "") -> str:
    """What exists of the set `name` after Ctrl-C (`when` as interrupted_message's), whether it bills, and the one
    command that deletes it all."""
    members = set_members(project, name)
    if not members:
        return f"interrupted{when}: no TPU of the set {name} was created; nothing bills"
    each = ", ".join(f"{r.kind} {r.name} in {r.zone} ({r.state or 'CREATING'})" for r in members)
    billing = (
        "a queued request bills nothing until granted, then until its max run duration"
        if members[0].kind == "queued-resource"
        else "they bill until deleted"
    )
    said = f"interrupted{when}: {len(members)} TPU(s) of the set {name} exist: {each}; {billing}"
    return f"{said}; delete them with: {set_delete_command(project, name)}"


def up_set(api: TpuApi, request: CloudUpRequest, on_progress: ProgressFn, claimed: bool = False) -> CloudUpResult:
    """`cloud up --replicas N` on one-chip TPUs: N TPUs named NAME-0 ... NAME-(N-1), one after another, each
    as `up` gets one (zones in order, failover, a live one of ours resumed: running it again after Ctrl-C
    creates only what is missing), each recorded with its set (and labelled with it) before its create.
    A TPU that cannot be had stops the set: the TPUs of the set already READY are deleted (a partial set
    bills for replicas nobody asked for) and the error says so in one line, keeping its type (CloudError,
    ConfigError). Ctrl-C raises Interrupted naming every TPU of the set recorded here and the one command
    that deletes them all (`cloud down --name NAME`). `claimed`: the caller holds the set's claim
    (records.claimed(api.project, tpu_name(request), of_set=True)) beyond this up (a `cloud up --model`, until its
    engines are started)."""
    name = tpu_name(request)
    names = set_names(name, request.replicas)
    if claimed:
        return _up_set_claimed(api, request, name, names, on_progress)
    with records.claimed(api.project, name, of_set=True):  # a second set must not resume, then delete, the first's
        return _up_set_claimed(api, request, name, names, on_progress)


def _up_set_claimed(api: TpuApi, request: CloudUpRequest, name: str, names: list[str],
                    on_progress: ProgressFn) -> CloudUpResult:  # fmt: skip
    """`up_set`, the set's name claimed (records.claimed)."""
    got: list[CloudUpResult] = []
    try:
        for k, member in enumerate(names):
            on_progress(ProgressEvent("cloud", f"TPU {k + 1} of {len(names)}: {member}"))
            one = request.model_copy(update={"name": member, "replicas": 1})
            got.append(up(api, one, on_progress, (name, k)))
    except (KeyboardInterrupt, Interrupted):
        raise Interrupted(set_interrupted_message(api.project, name)) from None
    except OnechipError as exc:
        exc.args = (_partial(api, name, names[len(got)], got, exc, on_progress),)
        raise
    first = got[0]
    quote = offers.quote(request.chip, request.provisioning, first.resource.zone, first.quote.limit_s, len(got))
    return CloudUpResult(
        resource=first.resource, resources=[g.resource for g in got], attempts=[a for g in got for a in g.attempts],
        reused=all(g.reused for g in got), quote=quote, delete_command=set_delete_command(api.project, name),
    )  # fmt: skip


def _partial(api: TpuApi, name: str, failed: str, got: list[CloudUpResult], exc: OnechipError,
             on_progress: ProgressFn) -> str:  # fmt: skip
    """The one line of a set that stopped at TPU `failed`, after deleting the TPUs of the set `got` (READY)."""
    said = f"cloud up --replicas: {failed} failed: {exc}"
    if not got:
        return f"{said}; no other TPU of the set {name} was granted"
    deleted: list[str] = []
    kept: list[str] = []
    try:
        for result in got:
            on_progress(ProgressEvent("cloud", f"deleting {result.resource.name}: the set is not complete"))
            try:
                delete(api, result.resource, on_progress)
                deleted.append(result.resource.name)
            except CloudError as error:
                kept.append(f"{result.resource.name} ({error})")
    except KeyboardInterrupt:
        raise Interrupted(f"{said}; {set_interrupted_message(api.project, name)}") from None
    said += f"; deleted the {len(deleted)} TPU(s) of the set already granted ({', '.join(deleted)})" if deleted else ""
    if kept:
        said += f"; could not delete {', '.join(kept)}: {set_delete_command(api.project, name)}"
    return said


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
    zones, out = checked_zones(api, request, on_progress)
    for attempt in out:
        _observe(request, attempt)
    for zone in zones:
        up_request = CloudUpRequest.model_validate(
            {"chip": request.chip, "project": api.project, "zones": [zone], "provisioning": request.provisioning,
             "valid_until_s": request.wait_s, "no_limit": request.provisioning != "flex-start", "timeout_s": 600.0}
        )  # fmt: skip
        resource = new_resource(api, up_request, f"onechip-probe-{secrets.token_hex(3)}", zone)
        started = time.monotonic()
        on_progress(ProgressEvent("probe", f"{zone}: creating {resource.accelerator_type} ({request.provisioning})"))
        try:
            create(api, up_request, resource, on_progress)
        except (KeyboardInterrupt, Interrupted):  # create says Ctrl-C as Interrupted; one landing here is raw
            raise _probe_interrupted(api, resource, on_progress) from None
        except CloudError as exc:
            if exc.reason not in FAILOVER:
                raise
            attempt = _attempt(zone, request, exc, time.monotonic() - started)
            if exc.reason == "expired" and request.provisioning == "flex-start":
                attempt.outcome, attempt.message = "queued", f"still queued after {request.wait_s:.0f} s; deleted"
        else:
            attempt = Attempt(zone=zone, provisioning=request.provisioning, outcome="available",
                              elapsed_s=round(time.monotonic() - started, 1), checked_at=now_iso())  # fmt: skip
            try:  # it was granted and bills: a delete that fails or is interrupted says what is left, and how
                delete(api, resource, on_progress)
            except CloudError as exc:
                raise _may_exist(exc, resource, "the probe's TPU was granted and could not be deleted") from None
            except KeyboardInterrupt:
                raise _probe_interrupted(api, resource, on_progress) from None
        out.append(attempt)
        _observe(request, attempt)
    return out


def _probe_interrupted(api: TpuApi, resource: CloudResource, on_progress: ProgressFn) -> Interrupted:
    """The Interrupted of a probe stopped by Ctrl-C (or a cancelled MCP call: one interrupt, whose result reaches no
    one) while its TPU was created, waited on or deleted: that TPU deleted first, as a probe's TPU always is (made
    only to be deleted at once), and the line saying so; one whose delete fails or meets a second Ctrl-C named with
    its state and the command that deletes it (it stays recorded). Before, the TPU was left, named only in the line."""
    on_progress(ProgressEvent("probe", f"interrupted: deleting the probe's {resource.kind} {resource.name} "
                                       f"in {resource.zone}"))  # fmt: skip
    try:
        delete(api, resource, on_progress)
    except KeyboardInterrupt:
        return Interrupted(interrupted_message(resource))
    except CloudError as exc:
        return Interrupted(f"{interrupted_message(resource)} (its delete failed: {exc})")
    return Interrupted(f"interrupted: the probe's {resource.kind} {resource.name} in {resource.zone} was deleted; "
                       "nothing of it bills")  # fmt: skip


def _observe(request: CloudProbeRequest, attempt: Attempt) -> None:
    """Record what a probe got in a zone, for `cloud zones`."""
    records.observe(ZoneOffer(chip=request.chip, zone=attempt.zone, provisioning=request.provisioning,
                              outcome=attempt.outcome, source="onechip cloud probe", date=attempt.checked_at,
                              note=attempt.message))  # fmt: skip


# --- status and down


def _fetch(api: TpuApi, resource: CloudResource, retry: bool = True) -> Json | None:
    """The API's view of a recorded resource, its state and IP refreshed (None when it is gone), and, for one
    running whose record has no granted_at (`up` stopped by Ctrl-C or its --timeout before READY, the TPU READY
    since), the time its billing began from the API (`granted_from`). A TPU gone, or a queued resource whose node the
    API does not have (not yet granted; SUSPENDED: its node deleted), has no IP: the address it had is released and
    may be another VM's now. `retry` False: each read one try."""
    item = fetch(api, resource.kind, resource.zone, _ident(resource), retry)
    if item is None:
        see_ip(resource, None)
        return None
    resource.state = state_of(resource.kind, item)
    node = item if resource.kind == "node" else None
    if resource.kind == "queued-resource" and resource.state == "ACTIVE" and not multislice_line(item):
        resource.node_id = qr_node_id(item, resource.node_id)  # a multislice one's nodes are not read (multislice_line)
        node = fetch(api, "node", resource.zone, resource.node_id, retry)
    resource.health = str(node.get("health") or "") if node is not None else ""
    resource.node_state = state_of("node", node) if node is not None and node is not item else ""
    # a node not READY (preempted, stopped) has no address of its own, whatever endpoint its record still shows
    see_ip(resource, external_ip(node) if node is not None and state_of("node", node) == "READY" else None)
    if node is not None:
        if resource.granted_at is None and phase(resource.kind, resource.state) == "ready":
            resource.granted_at = granted_from(resource, node)
    return item


def granted_from(resource: CloudResource, node: Json) -> str | None:
    """When a running TPU that onechip did not see become READY began to bill: its node's createTime (Node,
    TPU API v2: 'the time when the node was created'; a little before READY, so the cost is not understated),
    else, for a node, the record's created_at (stamped just before its create was sent); None for a queued
    resource whose node gives no time (its created_at is when it queued, hours before it may have been granted)."""
    made = node.get("createTime")
    if isinstance(made, str) and _when(made, datetime.min.replace(tzinfo=UTC)).year > 1:
        return made
    return resource.created_at if resource.kind == "node" else None


def limit_of(resource: CloudResource) -> float | None:
    """Seconds `resource` runs under: its flex-start max run duration, else its --max-hours; None when it has no limit.
    At most MAX_HOURS (a record from before that bound: no overflow)."""
    limit_s = resource.max_run_duration_s or (resource.max_hours * 3600 if resource.max_hours else None)
    return min(limit_s, MAX_HOURS * 3600) if limit_s else None


def status(api: TpuApi, resource: CloudResource, now: datetime | None = None) -> CloudStatus:
    """State, zone, external IP, model, elapsed time and $ so far (billed time from READY to now, or to when
    onechip first saw it ended or gone (resource.ended_at, stamped here: the API gives no time a node stopped or was
    deleted; one deleted from the console was billed to the clock while its record lived), capped at the flex-start
    max run duration, x the catalog price), and a warning when --max-hours has passed or it ended or is gone. A
    queued resource never granted has no deadline: nothing bills yet; nor has one that ended or is gone."""
    item = _fetch(api, resource)
    now = now or api.now()  # after the read: by the clock of its answer (createTime's)
    exists = item is not None
    if not exists:  # its last state (READY) and health were the API's word on a TPU it no longer has (`--json`)
        resource.state, resource.health = GONE, ""
    ended = exists and (phase(resource.kind, resource.state) == "ended" or node_ended(resource))  # bills as no run
    if exists and not ended:
        resource.ended_at = None  # a stopped on-demand node can be started again
    elif resource.ended_at is None:  # ended, or gone (deleted elsewhere): the API has nothing left to bill
        resource.ended_at = now.isoformat(timespec="seconds")
    elapsed = (now - _when(resource.created_at, now)).total_seconds()
    billed_from = _when(resource.granted_at, now) if resource.granted_at else None
    billed_to = min(now, _when(resource.ended_at, now)) if resource.ended_at else now
    billed_s = max(0.0, (billed_to - billed_from).total_seconds()) if billed_from else 0.0
    limit_s = limit_of(resource)
    flex = resource.provisioning == "flex-start"
    if flex and limit_s:
        billed_s = min(billed_s, limit_s)
    start = billed_from or (None if flex else _when(resource.created_at, now))
    # one that ended or is gone bills no more: its deadline was printed as 'billing ends <later>' beside a PREEMPTED or
    # SUSPENDED state, as if it billed on until then
    running = exists and not ended
    deadline = start + timedelta(seconds=limit_s) if limit_s and start and running else None
    warnings = []
    if exists and deadline and now > deadline and not flex and not ended:
        warnings.append(f"--max-hours {resource.max_hours:g} passed at {deadline.isoformat(timespec='seconds')} and "
                        f"it is still billing; delete it: {delete_command(resource)}")  # fmt: skip
    if exists and not flex and limit_s is None and not ended:
        warnings.append(f"no limit: it bills until deleted ({delete_command(resource)})")
    over = None  # why it will not run again: an ended state, or gone (CloudStatus.ended, what a bench's line reads)
    if ended:
        run_end = billed_from + timedelta(seconds=limit_s) if flex and billed_from and limit_s else None
        over = ended_line(resource, run_end, now)
        warnings.append(over)
    if exists and not ended and (line := unknown_health(resource.health)):
        warnings.append(line)
    if exists and (line := unknown_state(resource.kind, resource.state) or unknown_state("node", resource.node_state)):
        warnings.append(line)
    if exists and not ended and unhealthy(resource.health):
        warnings.append(f"{resource.health}: the API reports its node unhealthy (Node.health), so what runs on it may "
                        f"fail; wait for the API to repair it, or delete it: {delete_command(resource)}")  # fmt: skip
    if item is not None and (line := _owner_line(item)):
        warnings.append(line)
    if item is not None and resource.kind == "queued-resource" and (line := multislice_line(item)):
        warnings.append(line)
    if not resource.recorded:
        warnings.append(NOT_RECORDED)
    if resource.times_by != "api" and (line := unsaid_clock_line(resource, api.clock_offset_s)):
        warnings.append(line)
    if not exists:
        over = gone_line(resource)
        warnings.append(over)
    usd = round(billed_s / 3600 * resource.usd_per_hour, 4) if resource.usd_per_hour is not None else None
    return CloudStatus(
        resource=resource, exists=exists, elapsed_s=round(elapsed, 1), usd_so_far=usd,
        deadline=deadline.isoformat(timespec="seconds") if deadline else None, warnings=warnings, ended=over,
    )  # fmt: skip


def unsaid_clock_line(resource: CloudResource, offset_s: float) -> str:
    """The status warning for a record whose times were stamped before onechip said by whose clock
    (CloudResource.times_by 'unsaid': an onechip before 2026-12-07 stamped this machine's), when this machine's clock
    is off the API's now (`offset_s`: TpuApi.clock_offset_s, 0 within the Date's resolution), else '': its elapsed time
    and $ so far, read against the API's clock, may be off by as much. The times are not rewritten: the offset then
    is not known."""
    if not offset_s:
        return ""
    side = "behind" if offset_s > 0 else "ahead of"
    granted = " and granted_at" if resource.granted_at else ""
    return (
        f"its created_at{granted} may be by this machine's clock (an older onechip's record), which is "
        f"{abs(offset_s):.0f} s {side} the API's now: its elapsed time and $ so far may be off by as much"
    )


def _owner_line(item: Json) -> str:
    """The status warning for a TPU another onechip home labelled (`another_onechips`: this home's of that name is
    gone, or this home's owner-id file was replaced), or for one whose owner this home cannot tell (its owner-id file
    holds no id); '' for this home's, or one made before the owner label."""
    owner = labels_of(item).get(records.OWNER_LABEL, "")[:63]
    try:
        if not another_onechips(item):
            return ""
    except ConfigError as exc:
        return f"labelled {records.OWNER_LABEL}={owner}, and whose it is cannot be told: {exc}"
    return (
        f"labelled {records.OWNER_LABEL}={owner}, another onechip home's, not this one's (<home>/cloud/owner-id): "
        "its cost is not this home's, and `cloud down` keeps it"
    )


def gone_line(resource: CloudResource) -> str:
    """The warning for a recorded resource the API no longer has: it bills no more, and how to drop its record."""
    return (f"gone: the API no longer has it (deleted outside onechip, or by the cloud), so it bills no more; "
            f"`onechip cloud down --name {resource.name} --yes` drops its record")  # fmt: skip


# What a node state that does not run means, and that its chips no longer bill. A preempted TPU goes from READY to
# PREEMPTED (cloud.google.com/tpu/docs/preemptible, "Detecting if a TPU has been preempted") and a spot TPU is
# never restarted: "to restart a Spot VMs instance ... you must delete and then recreate it"
# (cloud.google.com/tpu/docs/spot-compute). Billing: "Stopped instances do not incur VM usage charges while they are
# stopped. However, resources that the VM is using, such as persistent disks and static IP addresses, will continue
# to be charged until they are deleted" (Compute Engine API, compute.instances.stop; a preempted Spot VM is stopped:
# cloud.google.com/compute/docs/instances/spot). Other ended states (HIDDEN, UNKNOWN, a queued resource's) say only
# that it will not run again.
NOT_RUNNING = {
    "PREEMPTED": "the cloud took its chips back (spot capacity)",
    "TERMINATED": "the cloud stopped it",
    "STOPPED": "it was stopped",
    "STOPPING": "it is being stopped",
}


# Node.health (TPU API v2, google.cloud.tpu.v2.Node.Health; v1 also DEPRECATED_UNHEALTHY): the values that say nothing
# is wrong (HEALTH_UNSPECIFIED, the field's default: 'Health status is unknown: not initialized or failed to retrieve';
# HEALTHY; none given), and those that say something is: 'unresponsive' (TIMEOUT), 'the in-guest ML stack is unhealthy'
# (UNHEALTHY_TENSORFLOW), under maintenance (UNHEALTHY_MAINTENANCE), 'unhealthy' (DEPRECATED_UNHEALTHY). Any other
# value is newer than this client (the API adds enum values): read as the default, unknown, and said so
HEALTHY = ("", "HEALTH_UNSPECIFIED", "HEALTHY")
UNHEALTHY = ("TIMEOUT", "UNHEALTHY_TENSORFLOW", "UNHEALTHY_MAINTENANCE", "DEPRECATED_UNHEALTHY")


def unhealthy(health: str) -> bool:
    """Does Node.health `health` say the node is unhealthy (UNHEALTHY)? An unknown value does not (`unknown_health`)."""
    return health in UNHEALTHY


def unknown_health(health: str) -> str:
    """The one line for a Node.health value this client does not know, '' for a known one."""
    if health in HEALTHY or health in UNHEALTHY:
        return ""
    return (f"Node.health {health!r} is not one onechip knows (a newer API): read as HEALTH_UNSPECIFIED (unknown), "
            "not as a failure")  # fmt: skip


# What a queued resource's ended state means (QueuedResourceState, TPU API v2alpha1): SUSPENDED 'the resources
# specified in the queued resource request have been deleted' (a flex-start run's end: its max run duration ran out),
# FAILED 'the QueuedResource request failed to be fulfilled' (nothing was granted)
QR_NOT_RUNNING = {
    "SUSPENDED": "its run ended and its TPU was deleted",
    "SUSPENDING": "its run is ending and its TPU being deleted",
    "FAILED": "the request was never fulfilled: nothing was granted",
}


def node_ended(resource: CloudResource) -> bool:
    """Is `resource` a queued resource the API still shows ACTIVE (or another state that is not ended) whose node
    ended (preempted, stopped)? Its TPU does not run: `status` said 'ACTIVE', with no warning and a billing deadline,
    for a spot queued resource whose node was PREEMPTED."""
    return (resource.kind == "queued-resource" and phase(resource.kind, resource.state) != "ended"
            and bool(resource.node_state) and phase("node", resource.node_state) == "ended")  # fmt: skip


def ended_line(resource: CloudResource, run_end: datetime | None = None, now: datetime | None = None) -> str:
    """The warning for a resource in an ended state: what the state means, whether it bills, what to do; for a
    flex-start run granted at a known time, whether its max run duration had run out (`run_end`, by `now`). A
    SUSPENDED queued resource said only 'it will not run again': not that its chips no longer bill, nor whether its
    max run duration had ended it."""
    of_node = resource.kind == "node" or node_ended(resource)  # an ACTIVE queued resource's node preempted: as a node
    table = NOT_RUNNING if of_node else QR_NOT_RUNNING
    meaning = table.get(resource.node_state if node_ended(resource) else resource.state)
    state = f"{resource.state}, its node {resource.node_state}" if node_ended(resource) else resource.state
    if meaning and run_end and resource.state.startswith("SUSPEND"):
        at = run_end.isoformat(timespec="seconds")
        ran_out = now is not None and now >= run_end
        meaning += (
            f" ({'its max run duration ran out at ' + at if ran_out else 'before its max run duration, due ' + at})"
        )
    what = f"{meaning}; it does not run and will not run again" if meaning else "it will not run again"
    bills = (", and its chips no longer bill (a disk or static address it holds does until it is deleted)"
             if of_node else ", and nothing of it bills")  # fmt: skip
    return (f"{state}: {what}{bills if meaning else ''}; delete it: {delete_command(resource)}, and run "
            f"`onechip cloud up` again for a new one")  # fmt: skip


def _when(iso: str | None, default: datetime) -> datetime:
    """An ISO time from a record or the API (a 'Z' suffix too), `default` when it does not parse."""
    try:
        moment = datetime.fromisoformat(str(iso).replace("Z", "+00:00"))
    except ValueError:
        return default
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _from_api(api: TpuApi, zone: str, item: Json, kind: str) -> CloudResource:
    """A CloudResource for a labelled item found in the API but not recorded here (created elsewhere, or
    by an onechip that lost its record): its pricing model from the API (`provisioning_of`), its chip as onechip's
    key and priced from the catalog as `up` prices one (a spot queued resource read as flex-start, a preemptible node
    as on-demand, and every one '$?': its chip was the API's 'v5litepod-1', which no price is keyed by)."""
    name = str(item.get("name", "")).rsplit("/", 1)[-1]
    spec = next(iter(node_specs(item)), {})
    node_id = qr_node_id(item, name) if kind == "queued-resource" else name
    node: Json = spec["node"] if isinstance(spec.get("node"), dict) and spec["node"] else item
    node_labels = node.get("labels")
    in_set = node_labels.get(records.SET_LABEL) if isinstance(node_labels, dict) else None
    accelerator_type = str(node.get("acceleratorType", ""))
    provisioning = provisioning_of(kind, item, node)
    try:
        chip = offers.chip_key(accelerator_type)
        quote = offers.quote(chip, provisioning, zone, None)
    except OnechipError:  # a chip onechip does not know: no price, never a guess
        chip, quote = accelerator_type, None
    return CloudResource(
        replica_set=str(in_set) if in_set else None,
        name=name, kind=kind, node_id=node_id, project=api.project, zone=zone,  # type: ignore[arg-type]
        chip=chip, accelerator_type=accelerator_type, runtime_version=str(node.get("runtimeVersion", "")),
        provisioning=provisioning, created_at=str(item.get("createTime") or now_iso(api)), state=state_of(kind, item),
        max_run_duration_s=run_duration_s(item) if provisioning == "flex-start" else None,
        usd_per_hour=quote.usd_per_hour if quote else None, price_source=quote.price_source if quote else "",
        recorded=False, labels=labels_of(item),
    )  # fmt: skip


def provisioning_of(kind: str, item: Json, node: Json) -> Provisioning:
    """The pricing model of a queued resource or node from the API: spot for a queued resource of the Spot tier
    (QueuedResource.spot, TPU API v2 and v2alpha1) or a node whose schedulingConfig says spot or preemptible (both
    preemptible capacity, priced by the spot SKU); flex-start for a queued resource whose provisioningModel says
    FLEX_START (v2alpha1: what onechip creates); on-demand for any other (the Guaranteed tier, or no tier given)."""
    scheduling = node.get("schedulingConfig") or {}
    if (kind == "queued-resource" and "spot" in item) or scheduling.get("spot") or scheduling.get("preemptible"):
        return "spot"
    if kind == "queued-resource" and item.get("provisioningModel") == "FLEX_START":
        return "flex-start"
    return "on-demand"


def run_duration_s(item: Json) -> float | None:
    """A queued resource's runDuration.maxRunDuration (v2alpha1; google.protobuf.Duration JSON, '14400s') in seconds,
    None when absent or unreadable: a flex-start one found in the API but not recorded here billed past its run."""
    try:
        value = parse_duration((item.get("runDuration") or {}).get("maxRunDuration"))
    except ValueError:
        return None
    return float(value) if isinstance(value, int | float) and value > 0 else None


def targets(api: TpuApi, request: CloudNameRequest, recorded: list[CloudResource],
            lost: list[tuple[str, str, str]] | None = None, unlisted: dict[str, CloudError] | None = None,
            end_s: float | None = None, on_progress: ProgressFn = no_progress) -> list[CloudResource]:  # fmt: skip
    """What status and down look at: recorded resources (by --name / --zone), plus, only for zones named
    with --zone, every labelled queued resource and node the API lists there (all pages): a label can be
    copied, or come from another user's onechip in the same project, so without --zone nothing unrecorded
    is touched. Never anything without onechip's label. A queued resource's own node is not listed apart
    from it (deleting the queued resource deletes it). `lost`: (zone, kind, name) of records that cannot be
    used (records.read_all().unreadable), each looked up in the API by what its path says and taken when labelled.
    Every zone is listed (--zone's, and each recorded resource's: whether the API reaches it). `unlisted`: filled
    with zone -> the CloudError of each zone whose list failed for that zone alone (ZONE_FAILURES), the others
    still taken and that zone's recorded resources too (each is read on its own after); None: that failure raises.
    `end_s` (time.monotonic seconds; a `down`'s one bound, DOWN_WAIT_S): a --zone zone whose list met an outage
    (tpu_api.OUTAGE) is listed again, every such zone together, every poll until it answers or `end_s` (said through
    `on_progress` as one outage), as the down's label reads and deletes are: with one call's retries (15 s), an
    outage left a labelled TPU only its list finds unseen, billing on; None (status: a look): one call's retries.
    Each taken that a list showed carries the labels it showed (CloudResource.labels: what `listed_keeps` reads)."""
    chosen = recorded_targets(api.project, request, recorded)
    zones = request.zones or []
    known = {(r.zone, r.kind, r.name) for r in chosen}
    for zone, kind, name in lost or []:
        item = fetch(api, kind, zone, name) if (zone, kind, name) not in known else None
        if item is not None and labelled(item):
            chosen.append(_from_api(api, zone, item, kind).model_copy(update={"recorded": True}))  # its file, damaged
            known.add((zone, chosen[-1].kind, name))

    def take(zone: str, retry: bool = True) -> None:  # list `zone`, take what it holds; raises as a list fails
        ours = {r.node_id for r in chosen if r.zone == zone and r.kind != "node"}
        listed = _labelled_in(api, zone, ours, retry)
        labels = {(r.kind, r.name): r.labels for r in listed}
        for r in chosen:  # what its list says of each taken (down_keeps: the preview says whether down keeps it)
            if r.zone == zone and (r.kind, r.name) in labels:
                r.labels = labels[r.kind, r.name]
        for resource in listed:
            key = (zone, resource.kind, resource.name)
            if zone not in zones:  # a recorded resource's own zone: only what is recorded there
                continue
            if key not in known and (records.named(resource, request.name) or resource.name == f"{request.name}-node"):
                chosen.append(resource)
                known.add(key)

    failed: dict[str, CloudError] = {}
    for zone in dict.fromkeys([*zones, *(r.zone for r in chosen)]):
        try:
            take(zone)
        except CloudError as exc:
            if unlisted is None or exc.reason not in ZONE_FAILURES:
                raise
            failed[zone] = exc  # one zone the API cannot list must not hide, or keep billing, the others' TPUs
    again = {z: exc for z, exc in failed.items() if z in zones and exc.reason in OUTAGE}
    if end_s is not None and again:
        listed = set(again)
        _list_through(take, again, api.poll_s, end_s, on_progress)
        failed = {z: again.get(z, exc) for z, exc in failed.items() if z not in listed or z in again}
    if unlisted is not None:
        unlisted.update(failed)
    return chosen


def _list_through(take: Callable[[str, bool], None], again: dict[str, CloudError], pause_s: float, end_s: float,
                  on_progress: ProgressFn) -> None:  # fmt: skip
    """`take(zone, False)` (each list one try: its call's retries would pass `end_s`) for every zone of `again` (zone
    -> the outage its list met), all of them every `pause_s` until each answers (dropped from `again`) or `end_s`
    comes (`_through`); past it, each left is reworded to say how long it was listed. Raises a failure that is no
    outage."""

    def list_again() -> None:
        for zone in list(again):
            try:
                take(zone, False)
            except CloudError as exc:
                if exc.reason not in ZONE_FAILURES:
                    raise
                again[zone] = exc
                continue
            del again[zone]
        if again:
            raise _all_left(again, f"the lists of {len(again)} zone(s) not read")

    def said(failure: CloudError, spent_s: float) -> str:
        return (f"{failure}; its list read every poll for {spent_s:.0f} s within the down's {DOWN_WAIT_S:g} s, "
                "never answered")  # fmt: skip

    _through(list_again, again, ZONE_FAILURES, pause_s, end_s, on_progress, said)


def _labelled_in(api: TpuApi, zone: str, qr_nodes: set[str], retry: bool = True) -> list[CloudResource]:
    """Every labelled queued resource and node the API lists in `zone` (all pages), a queued resource's own node
    (its node id, or one of `qr_nodes`) not apart from it. `retry` False: each page one try. Raises CloudError when
    a list fails."""
    listed = api.list_queued_resources(zone, retry)
    found = [_from_api(api, zone, qr, "queued-resource") for qr in listed if labelled(qr)]
    # a multislice one's nodes too (qr_node_ids): listed apart, each was deleted beside the queued resource whose
    # forced delete deletes them
    qr_nodes = qr_nodes | {r.node_id for r in found}

    def apart(node_id: str) -> bool:  # a node of no queued resource listed here
        return node_id not in qr_nodes and not any(qr_owns_node(qr, node_id) for qr in listed)

    return found + [_from_api(api, zone, n, "node") for n in api.list_nodes(zone, retry)
                    if labelled(n) and apart(str(n.get("name", "")).rsplit("/", 1)[-1])]  # fmt: skip


def recorded_targets(project: str, request: CloudNameRequest, recorded: list[CloudResource]) -> list[CloudResource]:
    """The recorded resources of `project` that `request` selects (--name, --zone), without asking the API."""
    return [r for r in recorded if records.named(r, request.name)
            and (not request.zones or r.zone in request.zones) and r.project == project]  # fmt: skip


def down(chosen: Sequence[tuple[TpuApi, CloudResource]], on_progress: ProgressFn,
         end_s: float | None = None) -> CloudDownResult:  # fmt: skip
    """Delete each of `chosen` (from `targets`, each with the client of its project) after checking onechip's label
    on the API's copy: every label is read and every delete sent first (after one read or send met an outage, the rest
    with one try each, sent again in the wait: a call's retries each, one TPU after another, spent the bound before it
    began; a label read an outage refused is read again, all of them together, every poll until the bound, and its
    delete sent once it answers: one call's retries each, 15 s, ended a whole outage in a minute, nothing deleted),
    then each is waited for (`delete`) until `end_s` (time.monotonic seconds; None: DOWN_WAIT_S, 10 min, from now),
    all of them together: a queued resource in PROVISIONING, which cannot be deleted (seed), is waited out and
    deleted, a refusal by an outage of the API sent again, and a delete that has not finished waited for, within that
    one bound (one after another, N TPUs held it N x 10 min); past it, each left is read once (gone: deleted), a
    refused send is not sent again, and a label never read names its TPU as one that may still exist. A read refused
    otherwise is met at once (not found: gone; credentials, permission: failed). A record whose resource is gone, or
    is not onechip's, is dropped. One that cannot be deleted does not stop the others: CloudDownError afterwards names
    what was deleted and each that may still exist with the command that deletes it (and stays recorded), its `result`
    saying the same (`failed`); Ctrl-C raises Interrupted saying the same of every one not yet seen deleted. Raises
    ConfigError, nothing deleted, when this home's owner-id file holds no id (whose each TPU is cannot be told)."""
    end_s = time.monotonic() + DOWN_WAIT_S if end_s is None else end_s
    records.held_owner_id()  # read before any delete is sent: `_ours` compares each TPU's owner label with it
    result = CloudDownResult()
    failed: dict[int, CloudError] = {}  # by index in `chosen`: said in its order
    unread: dict[int, CloudError] = {}  # by index: each whose label read met an outage, read again under the bound
    sent: list[tuple[int, Json | CloudError]] = []  # what each send got, for `delete` to wait on or deal with
    left = [resource for _, resource in chosen]  # what may still exist, named on Ctrl-C
    outage = False  # a read or a send met an outage of the API (tpu_api.OUTAGE) past its call's retries

    def read_and_send(k: int) -> None:
        """Check k's label and send its delete. Raises CloudError as its read fails (the others are still deleted:
        one refusal must not leave them billing)."""
        nonlocal outage
        api, resource = chosen[k]
        # within a pause of the bound's end (its --zone lists spent it reading through an outage) each is read and
        # sent once: a call's retries would pass the bound, as through_outages stops where its next pause would
        outage = outage or time.monotonic() + api.poll_s >= end_s
        try:  # once one call spent its retries on an outage, the others are tried once: read again and sent again
            # under the shared bound (each spent a call's 15 s of pauses before it began)
            ours = _ours(api, resource, result, on_progress, retry=not outage)
        except CloudError as exc:
            if exc.reason not in OUTAGE:
                raise
            outage, unread[k] = True, exc
            return
        unread.pop(k, None)
        if not ours:
            left.remove(resource)
            return
        on_progress(ProgressEvent("cloud", f"deleting {_what(resource)}"))
        try:
            sent.append((k, send_delete(api, resource, retry=not outage)))
        except CloudError as exc:  # met by `delete` (waited out, sent again, or failed) once all are sent
            outage = outage or exc.reason in OUTAGE
            sent.append((k, exc))

    def read_unread() -> None:  # every label read an outage refused, tried again; raises while one is left
        for k in list(unread):
            try:
                read_and_send(k)
            except CloudError as exc:
                unread.pop(k)
                failed[k] = exc
        if unread:
            raise _all_left(unread, f"the labels of {len(unread)} TPU(s) not read")

    try:
        for k in range(len(chosen)):
            try:
                read_and_send(k)
            except CloudError as exc:
                failed[k] = exc
        if unread:  # an outage of the reads too: read through, all together, within the bound, as the deletes are
            _read_through(read_unread, unread, chosen[next(iter(unread))][0].poll_s, end_s, on_progress)
        for k, first in sent:
            api, resource = chosen[k]
            try:
                delete(api, resource, on_progress, DOWN_WAIT_S, end_s, first)
            except CloudError as exc:
                failed[k] = exc
                continue
            result.deleted.append(_what(resource))
            left.remove(resource)
    except KeyboardInterrupt:
        raise Interrupted("interrupted: " + _left_line(left, result)) from None
    failed.update(unread)  # past the bound, each label still unread (`_read_through` said how long it was read)
    if failed:
        gone = [(chosen[k][1], failed[k]) for k in sorted(failed)]
        result.failed = [f"{_what(r)}: {exc}; delete it: {delete_command(r)}" for r, exc in gone]
        raise CloudDownError(_left_line([r for r, _ in gone], result, gone[0][1]), result, gone[0][1])
    return result


def _all_left(left: dict[str, CloudError] | dict[int, CloudError], words: str) -> CloudError:
    """One CloudError for the refusals `left` holds (a round of through_outages that left some): the last one's,
    reworded '`words`: <it>', asking the longest wait any of them asked (retry_after_s)."""
    last = list(left.values())[-1]
    said = last.reworded(f"{words}: {last}")
    said.retry_after_s = max(exc.retry_after_s or 0.0 for exc in left.values())
    return said


_Key = TypeVar("_Key", str, int)  # a refusal's key in `_through`: a zone, or a TPU's index in a `down`


def _read_through(read: Callable[[], None], unread: dict[int, CloudError], pause_s: float, end_s: float,
                  on_progress: ProgressFn) -> None:  # fmt: skip
    """`read()` every `pause_s` seconds while `unread` holds a label read an outage refused and `end_s` is not reached
    (`_through`); past it, each refusal left in `unread` is reworded to say how long it was read."""
    if time.monotonic() + pause_s >= end_s:  # the down's zone lists spent the bound reading through the outage
        for k, exc in unread.items():
            unread[k] = exc.reworded(f"{exc}; its label (created-by=onechip) not read again: the down's "
                                     f"{DOWN_WAIT_S:g} s were spent, so its delete was not sent")  # fmt: skip
        return

    def said(exc: CloudError, spent_s: float) -> str:
        return (f"{exc}; its label (created-by=onechip) read again over {spent_s:.0f} s within the down's "
                f"{DOWN_WAIT_S:g} s, all its TPUs together, never answered, so its delete was not sent")  # fmt: skip

    _through(read, unread, OUTAGE, pause_s, end_s, on_progress, said)


def _through(again: Callable[[], None], left: dict[_Key, CloudError], reasons: Sequence[str], pause_s: float,
             end_s: float, on_progress: ProgressFn, said: Callable[[CloudError, float], str]) -> None:  # fmt: skip
    """`again()` (each refusal of `left` tried again, one try each, those that answer dropped; raises `_all_left` while
    some are left) every `pause_s` seconds (or what the API asked to wait, when longer), told once as one outage
    (tpu_api.through_outages), until `left` is empty or `end_s` (time.monotonic seconds, the down's bound) comes; past
    it, each refusal left is reworded `said(it, seconds spent)`. What the zone lists and the label reads of a `down`
    each did with their own copy. Raises a failure whose reason is not one of `reasons`."""
    started = time.monotonic()
    try:
        through_outages(again, end_s, pause_s, lambda line: on_progress(ProgressEvent("cloud", line)))
    except CloudError as exc:
        if exc.reason not in reasons:
            raise
        spent_s = time.monotonic() - started
        for key, failure in left.items():
            left[key] = failure.reworded(said(failure, spent_s))


def _what(resource: CloudResource) -> str:
    return f"{resource.kind} {resource.name} ({resource.zone})"


def _ours(api: TpuApi, resource: CloudResource, result: CloudDownResult, on_progress: ProgressFn,
          retry: bool = True) -> bool:  # fmt: skip
    """Whether `down` deletes `resource`: the API has it, labelled onechip's and not another onechip home's
    (`down_keeps`: its name taken again by another home, or listed by --zone). Otherwise its record is dropped and
    `result.kept` says why. `retry` False: each read one try. Raises CloudError when it cannot be read."""
    item = _fetch(api, resource, retry)
    if item is None:  # read twice before a record is dropped: one answer may be a just-created lag
        again = f"{_what(resource)}: not found; reading it again in {api.poll_s:g} s before its record is dropped"
        on_progress(ProgressEvent("cloud", again))
        time.sleep(api.poll_s)
        item = _fetch(api, resource, retry)
    why = "already gone" if item is None else down_keeps(labels_of(item))
    if why:
        _keep(resource, why, result)
    return not why


def kept_as_listed(resource: CloudResource, result: CloudDownResult) -> bool:
    """Whether `down` keeps `resource` by the labels its zone's list showed (listed_keeps: the decision its preview
    said and the user confirmed): then, as `_ours` does once it has read them, its record is dropped (a record of a TPU
    this home does not own would list another home's TPU as this one's in every status, and be kept again by every
    down) and `result.kept` says why; it is neither read again nor deleted, nor are the engines on its address stopped.
    Raises ConfigError as down_keeps does."""
    why = listed_keeps(resource)
    if why:
        _keep(resource, why, result)
    return bool(why)


def _keep(resource: CloudResource, why: str, result: CloudDownResult) -> None:
    records.forget(resource)
    result.kept.append(f"{_what(resource)}: {why}")


def _left_line(left: list[CloudResource], done: CloudDownResult, failure: CloudError | None = None) -> str:
    """One line: what was deleted, what may still exist (each with the command that deletes it), and why."""
    said = f"deleted {', '.join(done.deleted)}; " if done.deleted else ""
    why = f" ({failure})" if failure is not None else ""
    each = "; ".join(f"{r.kind} {r.name} in {r.zone}: {delete_command(r)}" for r in left)
    return f"{said}{len(left)} may still exist{why}: {each}"
