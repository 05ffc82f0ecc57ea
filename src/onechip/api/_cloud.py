"""`cloud_*`: getting a TPU (onechip.cloud)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar

from onechip.api._engines import down as engines_down
from onechip.api._engines import up
from onechip.cloud import offers, provision
from onechip.cloud import records as cloud_records
from onechip.cloud.tpu_api import TpuApi
from onechip.engines import replicas
from onechip.engines import state as engine_state
from onechip.engines.local import free_port
from onechip.errors import (
    BusyError,
    CloudDownError,
    CloudError,
    ConfigError,
    HeldError,
    Interrupted,
    OnechipError,
)
from onechip.planner.rules import accelerator
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas.cloud import (
    Attempt,
    CloudDownResult,
    CloudNameRequest,
    CloudProbeRequest,
    CloudResource,
    CloudStatus,
    CloudStatuses,
    CloudTarget,
    CloudTargets,
    CloudUpRequest,
    CloudUpResult,
    CloudZonesRequest,
    Quote,
    ZoneOffer,
    valid_names,
)
from onechip.schemas.plan import Plan
from onechip.schemas.requests import UpRequest
from onechip.vllm import flag_table
from onechip.vllm.wire import same_server

CloudTargetT = TypeVar("CloudTargetT", bound=CloudTarget)
UNLISTED_AGAIN = (
    "run it again once the API reaches it"  # what a status or down that could not list a --zone zone ends with
)


def _tpu(project: str | None, on_progress: ProgressFn, stack: ExitStack) -> TpuApi:
    """The TPU API client for `project`, telling each retry of a call as a progress line, closed as `stack` closes
    (the job's end, an interrupted one's too: its sockets are not left to the garbage collector)."""
    return stack.enter_context(TpuApi(project, on_retry=lambda line: on_progress(ProgressEvent("cloud", line))))


def cloud_target(request: CloudTargetT) -> CloudTargetT:
    """`request` with its chip as onechip's key however it was named (offers.chip_key: 'v5litepod-4' -> v5e-4).
    Raises ConfigError for a chip that is no Cloud TPU onechip knows: a shell calls it before it asks to create
    anything, so an unknown chip is refused before the question, not after the user said yes."""
    return request.model_copy(update={"chip": offers.chip_key(request.chip)})


def _tpus(request: CloudUpRequest) -> int:
    """How many TPUs `request` asks for: one per replica on one-chip TPUs, else one (a slice holds every
    replica: one engine per chip share). Raises ConfigError when the replicas do not split the slice."""
    if request.replicas == 1:
        return 1
    if accelerator(request.chip).chips == 1:
        provision.set_names(provision.tpu_name(request), request.replicas)
        return request.replicas
    replicas.replica_share(request.chip, "vllm-docker", request.replicas, 1)
    return 1


def cloud_quote(request: CloudUpRequest) -> Quote:
    """The hourly burn of what `cloud_up(request)` would create (first zone's region, catalog price x every
    chip of every TPU) and what stops its billing; what a shell prints before anything is created. Raises
    ConfigError (also: replicas that do not split a slice, set names past 58 characters)."""
    request = cloud_target(request)
    tpus = _tpus(request)
    zone = provision.zones_for(request)[0]
    limit = request.max_run_duration_s if request.provisioning == "flex-start" else (
        request.max_hours * 3600 if request.max_hours else None)  # fmt: skip
    return offers.quote(request.chip, request.provisioning, zone, limit, tpus)


def cloud_up_quote(request: CloudUpRequest, on_progress: ProgressFn = no_progress) -> Quote:
    """What `cloud_up(request)` will do, priced, for the question a shell asks before it: cloud_quote (a create), or,
    when it will resume onechip's live TPU of the name asked for (provision.reusable; one TPU, not a set), that
    TPU's own quote (provision.reuse_quote, as the result quotes it) with `reused` naming it. Reads the API (each
    retry told through `on_progress`). Raises ConfigError as cloud_quote, CloudError when the API cannot be read,
    MissingDependencyError (google-auth)."""
    quote = cloud_quote(request)
    if quote.tpus > 1:
        return quote
    request = cloud_target(request)
    with ExitStack() as stack:
        existing = provision.reusable(_tpu(request.project, on_progress, stack), request)
    if existing is None:
        return quote
    return provision.reuse_quote(existing).model_copy(update={"reused": existing.name})


def cloud_up(request: CloudUpRequest, on_progress: ProgressFn = no_progress, claimed: bool = False) -> CloudUpResult:
    """Get a TPU: flex-start queued resource (default), spot or on-demand node, zones tried in order; see
    onechip.cloud.provision.up. With --replicas N on a one-chip TPU, N of them (provision.up_set: a set that
    cannot be completed is deleted, said in one line); on a slice, one. With --model, the engines then start
    on them as `up --engine vllm-docker --host ...` starts them (`up --replicas N`: one engine per TPU or chip
    share, vllm-router here in front), after that launch was built and checked before anything was created.
    Raises CloudError (every zone refused), Interrupted (Ctrl-C: names what exists and the command that
    deletes it), ConfigError, MissingDependencyError (google-auth), and what `up` raises (the TPUs then stay,
    recorded, and the message names the command that deletes them). `claimed`: the caller holds the TPU name's
    claim (one TPU: provision.up's `claimed`). With --model the claim (the set's, of several TPUs) is held until the
    engines are started, on every exit: let go once the TPUs were READY, a `cloud down` of this home deleted them
    under the engines booting on them."""
    request = cloud_target(request)
    tpus = _tpus(request)
    if request.model is not None:  # the launch built and its plan checked before anything bills
        check = up(_engine_request(request, [f"{request.ssh_user}@tpu-{k}" for k in range(tpus)], dry_run=True))
        if check.plan is not None and not check.plan.fits:
            raise ConfigError(f"the plan says {request.model} does not fit one replica on {request.chip} "
                              f"({check.plan.verdict}); {_fit_hint(check.plan)}; nothing was created")  # fmt: skip
    with ExitStack() as held:  # with --model, the claim lasts until the engines are started (or failed to)
        with ExitStack() as stack:
            tpu = _tpu(request.project, on_progress, stack)
            if request.model is not None and not claimed:
                held.enter_context(cloud_records.claimed(tpu.project, provision.tpu_name(request), of_set=tpus > 1))
                claimed = True
            result = (
                provision.up_set(tpu, request, on_progress, claimed=claimed)
                if tpus > 1
                else provision.up(tpu, request, on_progress, claimed=claimed)
            )
        if request.model is None:
            return result
        return _serve(request, result, on_progress)


def _fit_hint(the_plan: Plan) -> str:
    """What a cloud up refused for a plan that does not fit says to change (Plan.fit_hint): the longest length that
    fits as `up` takes it, and where to give it, since cloud up takes no --set; else what limits it."""
    hint = the_plan.fit_hint(flag_table.SET_LENGTH)
    if the_plan.longest_fit_max_model_len is None:
        return hint
    return f"{hint}, to `onechip up --engine vllm-docker --host USER@IP` on TPUs got by cloud up without --model"


def _engine_request(request: CloudUpRequest, hosts: list[str], dry_run: bool = False) -> UpRequest:
    """The `up` that serves --model on the TPUs at `hosts` (user@ip): vllm-docker over ssh with the key whose
    public half went into their ssh-keys, one engine per TPU or per chip share of a slice; the tunnels end
    at free ports here (from a free one up, as the demo picks its tunnel), never at the engine's own port."""
    key = request.ssh_key or Path.home() / ".ssh" / "google_compute_engine"
    return UpRequest(
        engine="vllm-docker", model=request.model, chip=request.chip, replicas=request.replicas,
        host=",".join(hosts), port=request.port, tunnel_port=free_port(), router_policy=request.router_policy,
        hf_token_file=request.hf_token_file, ssh_options=[f"IdentityFile={key.expanduser()}", *request.ssh_options],
        timeout_s=request.boot_timeout_s, dry_run=dry_run,
    )  # fmt: skip


def _serve(request: CloudUpRequest, result: CloudUpResult, on_progress: ProgressFn) -> CloudUpResult:
    """Start the engines (and the router) of --model on the READY TPUs of `result`."""
    tpus = result.resources or [result.resource]
    delete = result.delete_command
    if missing := [r.name for r in tpus if not r.external_ip]:
        raise CloudError(f"{', '.join(missing)} READY without an external IP; delete: {delete}", reason="other")
    hosts = [f"{r.ssh_user or request.ssh_user}@{r.external_ip}" for r in tpus]
    try:
        served = up(_engine_request(request, hosts), on_progress)
    except OnechipError as exc:
        exc.args = (f"{exc}; the {len(tpus)} TPU(s) stay up and bill: {delete}",)
        raise
    except KeyboardInterrupt:  # each TPU by kind, name, zone and state, whether it bills, the command that deletes it
        when, of_set = " while the engines started", tpus[0].replica_set if result.resources else None
        said = (provision.set_interrupted_message(result.resource.project, of_set, when) if of_set
                else provision.interrupted_message(tpus[0], when))  # fmt: skip
        raise Interrupted(said) from None
    if served.replica_set is not None:
        result.router_url = served.replica_set.router.url
        result.replica_urls = [f"http://127.0.0.1:{spec.base_port}" for spec in served.replica_set.replicas]
        result.engine_commands = served.replica_set.commands
    elif served.launch is not None:
        result.router_url = served.boot.base_url if served.boot else None
        result.engine_commands = served.launch.commands
    return result


def cloud_probe(request: CloudProbeRequest, on_progress: ProgressFn = no_progress) -> list[Attempt]:
    """Can CHIP be had with PROVISIONING in each zone now? A real create, deleted at once (billed for the
    seconds it lives); recorded for `cloud_zones`. See onechip.cloud.provision.probe."""
    request = cloud_target(request)
    with ExitStack() as stack:
        return provision.probe(_tpu(request.project, on_progress, stack), request, on_progress)


def cloud_zones(request: CloudZonesRequest) -> list[ZoneOffer]:
    """Zone observations for a chip / provisioning model: probes first (newest), then the catalog's, each with
    its source and date. No API call."""
    chip = offers.chip_key(request.chip) if request.chip else None
    return offers.offers(cloud_records.observed(), chip, request.provisioning)


def _recorded(request: CloudNameRequest, saved: list[CloudResource]) -> list[CloudResource]:
    """Those of `saved` (records.read_all().resources) that `request` selects (--name / --zone / --project)."""
    chosen = [r for r in saved if cloud_records.named(r, request.name)]
    return [r for r in chosen if (not request.zones or r.zone in request.zones)
            and (not request.project or r.project == request.project)]  # fmt: skip


def _targets(
    request: CloudNameRequest,
    on_progress: ProgressFn,
    stack: ExitStack,
    saved: cloud_records.Saved | None = None,
    end_s: float | None = None,
) -> tuple[list[tuple[TpuApi, CloudResource]], list[str], list[str]]:
    """Each resource status/down look at (provision.targets), with the client of its project (each retry of its calls
    told through `on_progress`, as `cloud up` tells them; closed as `stack` closes): recorded ones, and every labelled
    one the API lists in --zone, across pages (one not recorded here is CloudResource.recorded False: the label says an
    onechip made it, not this one; without --zone none is taken). The record files are read once (`saved`: the caller's
    read of them; None: read here). Also one line per zone whose list failed (said through `on_progress` too): its
    recorded resources are taken all the same, and the other zones are; a zone of --zone's is unreachable (its list
    is what finds a labelled TPU not recorded here), any other a note (provision.targets takes nothing unrecorded
    from its list: the list hid nothing). `end_s`: a down's one bound (time.monotonic seconds), within which a --zone
    list an outage refused is listed again (provision.targets); None: one call's retries. Returns (targets,
    unreachable, notes)."""
    saved = cloud_records.read_all() if saved is None else saved
    recorded = _recorded(request, saved.resources)
    lost = _unreadable(request, saved.unreadable, on_progress)
    used = cloud_records.zones_used(saved.resources)
    projects = {r.project for r in recorded} | {p for p, _ in used} | {k[0] for k, _ in lost}
    if request.project is not None:
        projects = {request.project}
    out: list[tuple[TpuApi, CloudResource]] = []
    unreachable: list[str] = []
    notes: list[str] = []
    for project in sorted(projects, key=str):
        tpu = _tpu(project, on_progress, stack)
        mine = [r for r in recorded if r.project == tpu.project]
        found = [(zone, kind, name) for (p, zone, kind), name in lost if p == tpu.project]
        unlisted: dict[str, CloudError] = {}
        try:
            out += [(tpu, r) for r in provision.targets(tpu, request, mine, found, unlisted, end_s, on_progress)]
        except CloudError as exc:
            if len(projects) == 1:
                raise
            # one project the API refuses (permission, quota) must not hide, or keep billing, the others' TPUs
            on_progress(ProgressEvent("cloud", f"project {project}: {exc}; only its recorded resources are taken"))
            out += [(tpu, r) for r in provision.recorded_targets(tpu.project, request, mine)]
        for zone, why in unlisted.items():
            line = f"zone {zone} (project {tpu.project}) could not be listed ({why})"
            on_progress(ProgressEvent("cloud", f"{line}; only its recorded resources are taken"))
            if zone in (request.zones or []):
                unreachable.append(line)
            else:
                notes.append(f"{line}; without --zone only its recorded resources are taken, each on its own")
    return out, unreachable, notes


def _unreadable(request: CloudNameRequest, unreadable: list[cloud_records.Unreadable],
                on_progress: ProgressFn) -> list[tuple[tuple[str, str, str], str]]:  # fmt: skip
    """Record files that cannot be used (records.read_all().unreadable), each said in one line through
    `on_progress` (the file, never its contents), and of those `request` selects whose path names the resource:
    ((project, zone, kind), name), for provision.targets to look up in the API (a damaged record must not hide a
    TPU that bills)."""
    out = []
    for bad in unreadable:
        on_progress(ProgressEvent("cloud", bad.line()))
        if bad.key is None or (request.name and request.name != bad.name):
            continue
        if (request.zones and bad.key[1] not in request.zones) or (request.project and bad.key[0] != request.project):
            continue
        out.append((bad.key, bad.name))
    return out


def cloud_status(request: CloudNameRequest, on_progress: ProgressFn = no_progress) -> list[CloudStatus]:
    """State, zone, external IP, provisioning model, elapsed time and $ so far of what onechip created
    (recorded, and labelled ones found in --zone, each of those warned as not recorded here), warning when
    --max-hours has passed or a resource ended; each API retry told through `on_progress`. Raises CloudError (API
    unreachable, or not the TPU API)."""
    return cloud_statuses(request, on_progress).resources


def cloud_statuses(request: CloudNameRequest, on_progress: ProgressFn = no_progress) -> CloudStatuses:
    """cloud_status's resources and, when a --name or --zone filter matched none, the recorded resources outside
    it (in --project, if given): both from one read of the record files. Raises as cloud_status."""
    saved = cloud_records.read_all()
    stamped = {_key(r): r.ended_at for r in saved.resources}
    failed: dict[tuple[str, str], CloudError] = {}  # (project, zone) -> the outage one of its reads met
    with ExitStack() as stack:
        targets, unreachable, notes = _targets(request, on_progress, stack, saved)
        several = len({tpu.project for tpu, _ in targets}) > 1
        found = [_status(tpu, r, failed, several) for tpu, r in targets]
    for (project, zone), exc in failed.items():
        left = ", ".join(st.resource.name for st in found if (st.resource.project, st.resource.zone) == (project, zone)
                         and not st.state_read)  # fmt: skip
        unreachable.append(f"zone {zone} (project {project}) could not be read ({exc}): {left} may still bill")
    for st in found:  # the first time a recorded resource is seen ended is kept: its $ so far stops there
        if _key(st.resource) in stamped and stamped[_key(st.resource)] != st.resource.ended_at:
            cloud_records.save(st.resource)
    if any(st.resource.external_ip or st.resource.last_external_ip for st in found):
        on_host = _engines_on_hosts()  # those started on one preempted since too: its address is its last one
        for st in found:
            st.engines = on_host.get(st.resource.external_ip or st.resource.last_external_ip or "", [])
    filtered = bool(request.zones or request.name) and not found
    elsewhere = _recorded(CloudNameRequest(project=request.project), saved.resources) if filtered else []
    return CloudStatuses(resources=found, elsewhere=elsewhere, unreachable=unreachable, notes=notes)


UNREAD = "its state could not be read"


def _status(tpu: TpuApi, resource: CloudResource, failed: dict[tuple[str, str], CloudError],
            several: bool) -> CloudStatus:  # fmt: skip
    """provision.status, or, where the API does not tell (a zone it cannot reach: provision.ZONE_FAILURES; any failure
    in one of `several` projects), the record as it stands with the failure as a warning: it may still exist and bill.
    `failed`: (project, zone) -> the failure of a read there, filled here; a zone already in it is not read again
    (each read of a zone the API cannot reach spends its whole deadline). Raises any other CloudError."""
    where = (tpu.project, resource.zone)
    try:
        if where in failed:
            raise failed[where]
        return provision.status(tpu, resource)
    except CloudError as exc:
        if not several and exc.reason not in provision.ZONE_FAILURES:
            raise
        failed.setdefault(where, exc)
        said = f"{UNREAD} ({exc}); it may still exist and bill: {provision.delete_command(resource)}"
        return CloudStatus(resource=resource, exists=True, elapsed_s=0.0, warnings=[said], state_read=False)


def _key(resource: CloudResource) -> tuple[str, str, str, str]:
    return resource.project, resource.zone, resource.kind, resource.name


def _engines_on_hosts() -> dict[str, list[str]]:
    """Host address -> one line per engine `up` runs there over ssh (replica K of a set, or the one engine):
    URL here, alive, healthy, when it was started. {} when none runs, or the saved state is unreadable (status still
    answers)."""
    out: dict[str, list[str]] = {}
    try:
        saved = replicas.load()
        if saved is not None:
            for st, replica in zip(replicas.replica_statuses(saved)[1], saved.replicas, strict=False):
                health = "healthy" if st.healthy else ("alive, not healthy" if st.alive else f"gone ({st.note})")
                line = f"replica {st.index} at {st.url}: {health}, started {replica.started_at}"
                out.setdefault(_address(st.host), []).append(line)
            return out
        engine = engine_state.status()
    except OnechipError:
        return out
    if engine.state is not None and engine.state.host:
        health = "healthy" if engine.healthy else ("alive, not healthy" if engine.running else "gone")
        out[_address(engine.state.host)] = [
            f"engine at {engine.state.base_url}: {health}, started {engine.state.started_at}"
        ]
    return out


def _engine_hosts() -> set[str]:
    """The host address of each engine `up` runs over ssh (every replica of a set, or the one engine), read from the
    state it keeps: no ssh. Empty when none runs there, or the state is unreadable (as _engines_on_hosts)."""
    try:
        saved = replicas.load()
        engines = saved.replicas if saved is not None else [e for e in [engine_state.load()] if e is not None]
    except OnechipError:
        return set()
    return {_address(e.host) for e in engines if e.host}


def tpu_ended_under(base_url: str) -> str:
    """Why the engine at `base_url` (the one `up` runs on a host, or each replica behind that router) went away, when
    the TPU under it is onechip's and ended (a spot node PREEMPTED, a flex-start run SUSPENDED once its max run
    duration ran out, a node stopped) or is gone: one clause per such TPU (CloudStatus.ended, set by its state, never
    read from a warning's words: the line that names its delete command), '' when none is known to have ended. One
    read of each TPU recorded at that address (its current or last external IP); any failure to tell says nothing (the
    caller's own line stands)."""
    try:
        tpus = _tpus_under(base_url)
        said = []
        with ExitStack() as stack:
            for tpu in tpus:
                st = provision.status(_tpu(tpu.project, no_progress, stack), tpu)
                if st.ended is not None:  # by its state (ended, or gone), never by a warning's words
                    said.append(f"{tpu.kind} {tpu.name} in {tpu.zone} {st.ended}")
    except OnechipError:
        return ""
    return "; ".join(said)


def _tpus_under(base_url: str) -> list[CloudResource]:
    """onechip's TPUs the engine at `base_url` runs on: the one `up` runs on a host, or each replica behind that
    router (its URL read as the server it names, vllm.wire.same_server: http://localhost:P is the http://127.0.0.1:P
    `up` records), matched to the records by its current or last external IP; read from the files `up` and `cloud up`
    keep (no API call, no ssh). Raises OnechipError for a state or record it cannot read."""
    engine = engine_state.load()
    saved = replicas.load()
    engines = [engine] if engine is not None and same_server(engine.base_url, base_url) else []
    if saved is not None and saved.router is not None and same_server(saved.router.base_url, base_url):
        engines += saved.replicas
    hosts = {_address(e.host) for e in engines if e.host}
    return [r for r in cloud_records.load_all() if (r.external_ip or r.last_external_ip) in hosts]


@contextmanager
def measuring_on(base_url: str) -> Iterator[None]:
    """Hold this home's claim (records.claimed) on each of onechip's TPUs under the engine at `base_url` (_tpus_under)
    while a `bench` measures it: a second bench of that engine, whose requests would share its batches and halve both
    results, and a `cloud down` (or `cloud up` resuming it) that would delete the TPU mid-grid, stop at once naming
    the pid and command holding it. Raises BusyError (exit 8, nothing measured) when another process of this home holds
    one; an engine on no TPU of onechip's, or a state it cannot read, takes none."""
    try:
        tpus = _tpus_under(base_url)
    except OnechipError:  # the bench's own reads say what is unreadable; no TPU known, none claimed
        tpus = []
    with ExitStack() as stack:
        for tpu in tpus:
            stack.enter_context(cloud_records.claimed(tpu.project, tpu.name, then=cloud_records.BENCH_BUSY))
        yield


def _address(host: str | None) -> str:
    return (host or "").rsplit("@", 1)[-1]


def cloud_down_targets(request: CloudNameRequest, on_progress: ProgressFn = no_progress) -> list[CloudResource]:
    """What `cloud_down(request)` would delete (cloud_down_found's resources; no engine on them asked whether it
    lives). Raises as cloud_down_found."""
    return cloud_down_found(request, on_progress, engines=False).resources


def down_deadline() -> float:
    """The end (time.monotonic seconds) of a `cloud down` begun now: provision.DOWN_WAIT_S (10 min) from now, the one
    bound its --zone lists, label reads and deletes share (give it to cloud_down_found and cloud_down alike)."""
    return time.monotonic() + provision.DOWN_WAIT_S


def cloud_down_found(request: CloudNameRequest, on_progress: ProgressFn = no_progress,
                     end_s: float | None = None, engines: bool = True) -> CloudTargets:  # fmt: skip
    """What `cloud_down(request)` would delete: recorded resources plus labelled ones in --zone (those
    `recorded` False: perhaps another checkout's or user's, which the CLI and MCP listings say); only ever what
    carries onechip's label; each API retry told through `on_progress`; and the zones the API could not list (their
    recorded resources are taken; cloud_down deletes the rest, then raises naming them). Nothing is deleted. Raises
    CloudDownError when a zone could not be listed and nothing was found anywhere (the one line names it; its result
    the `unreachable` lines, nothing deleted, as cloud_down's own partial result), ConfigError
    when --name matches nothing while onechip has other resources recorded (a typo, or the wrong --zone /
    --project): 'nothing to delete' and exit 0 read as done while the TPU meant billed on; a name whose record
    cannot be read is not refused (it is looked for with --zone). `end_s` (time.monotonic seconds: `down_deadline()`,
    the down's that follows): a --zone list an outage refuses is listed again until it answers or then; None (a
    preview, or an MCP gate, that deletes nothing): one call's retries. Raises HeldError (a BusyError) when, with
    --name, another process of this home holds the claim on one found (`_claim_all`), before anyone is asked to
    confirm a down that would be refused. `engines`: the `serving` lines, read (an ssh liveness check per host an
    engine `up` started runs on) for a caller that says them; False: none asked (an MCP gate, a confirmed call)."""
    saved = cloud_records.read_all()
    with ExitStack() as stack:
        targets, unreachable, notes = _targets(request, on_progress, stack, saved, end_s)
    with ExitStack() as claims:  # one an `up` or another `down` holds is refused (with --name) or left (without),
        found, held = _claim_all([r for _, r in targets], claims, not request.name)  # before anyone is asked
    if unreachable and not found:  # a result naming the zones, as a down that reached another zone raises one
        said = "; ".join([*unreachable, *held]) + f"; nothing was deleted: {UNLISTED_AGAIN}"
        result = CloudDownResult(unreachable=unreachable, held=held, notes=notes)
        raise CloudDownError(said, result, CloudError(said, reason="transient"))
    if held and not found:  # every one found is another's to end: nothing to ask about
        said = "; ".join(held) + "; nothing was deleted"
        raise CloudDownError(said, CloudDownResult(held=held, notes=notes), CloudError(said, reason="conflict"))
    if not found and request.name and request.name not in {bad.name for bad in saved.unreadable}:
        others = _recorded(CloudNameRequest(project=request.project), saved.resources)
        if others:
            names = ", ".join(f"{r.name} ({r.zone}, project {r.project})" for r in others[:5])
            more = f" and {len(others) - 5} more" if len(others) > 5 else ""
            where = f" in {','.join(request.zones)}" if request.zones else ""
            raise ConfigError(f"--name {request.name}: nothing of onechip's is named so{where}; nothing deleted; it "
                              f"has {len(others)}: {names}{more} (`onechip cloud status`)")  # fmt: skip
    serving = _serving(found) if engines else []
    return CloudTargets(resources=found, held=held, serving=serving, unreachable=unreachable, notes=notes)


def _serving(resources: list[CloudResource]) -> list[str]:
    """One line per of `resources` an engine `up` started serves on (its current or last external IP is that engine's
    host in the state `up` keeps: `cloud up --model`'s engines, once it ended and let go of its claim): said before a
    down is confirmed, as the down stops it (_stop_engines_on) and deletes the TPU under it."""
    engines = _engines_on_hosts() if resources else {}
    return [f"{r.kind} {r.name} ({r.zone}): {'; '.join(lines)}; cloud down stops it (onechip down) before the delete"
            for r in resources if (lines := engines.get(r.external_ip or r.last_external_ip or ""))]  # fmt: skip


def cloud_down(request: CloudNameRequest, on_progress: ProgressFn = no_progress,
               targets: list[CloudResource] | None = None, unreachable: Sequence[str] = (),
               notes: Sequence[str] = (), end_s: float | None = None,
               held: Sequence[str] = ()) -> CloudDownResult:  # fmt: skip
    """Delete what onechip created (labelled; a queued resource with its node), as listed by
    cloud_down_targets, after stopping the engines `up` runs on them (`cloud up --model`: every replica, the
    router and the tunnels here). `targets`: the list cloud_down_targets gave and the user confirmed, deleted as
    it is (nothing found since is added; each label is checked again); None: looked up now. A queued resource in
    PROVISIONING is waited out, then deleted; every delete is sent first, then all are waited for (a
    PROVISIONING wait, a delete not finished, an outage its label reads and sends are read and sent through) for
    provision.DOWN_WAIT_S (10 min) in all, every TPU of every project together. Every one is tried; raises
    CloudDownError afterwards when some could not be deleted, naming each with its delete command, or when a zone
    could not be listed (`unreachable`: the lines cloud_down_found gave with `targets`; with no targets, found now),
    naming it and what was deleted; its `result` holds the same (deleted, failed, unreachable). `notes`: the zones
    whose failed list hid nothing (CloudTargets.notes), kept in the result. `end_s`: the one bound (time.monotonic
    seconds, `down_deadline()`: the --zone lists' of cloud_down_found too, when no one was asked in between); None:
    DOWN_WAIT_S from now, its lists (targets None) within it too. Without --name, a TPU whose claim another process
    of this home holds (a `cloud up`, `demo --cloud`, another down) is left and named (_claim_all; `held`: the lines
    cloud_down_found gave with `targets`), the rest deleted, then CloudDownError (exit 8 when nothing else failed);
    with --name, HeldError (a BusyError carrying that result) before anything is deleted."""
    with ExitStack() as stack:
        return _down(request, on_progress, stack, targets, unreachable, notes, end_s, held)


def _down(request: CloudNameRequest, on_progress: ProgressFn, stack: ExitStack, targets: list[CloudResource] | None,
          unreachable: Sequence[str], notes: Sequence[str], end_s: float | None,
          held_before: Sequence[str]) -> CloudDownResult:  # fmt: skip
    """cloud_down, its TPU API clients closed as `stack` closes."""
    end_s = down_deadline() if end_s is None else end_s
    if targets is None:
        chosen, unreachable, notes = _targets(request, on_progress, stack, end_s=end_s)
    else:
        projects = dict.fromkeys(r.project for r in targets)
        clients = {project: _tpu(project, on_progress, stack) for project in projects}
        chosen = [(clients[r.project], r) for r in targets]
    free, held_now = _claim_all([r for _, r in chosen], stack, not request.name)  # before anything is stopped/deleted
    held = [*held_before, *held_now]
    chosen = [(tpu, r) for tpu, r in chosen if any(r is f for f in free)]
    result = CloudDownResult(notes=list(notes), held=held)
    # one its list showed as another home's (or unlabelled) is kept as confirmed, its record dropped, whoever called
    chosen = [(tpu, r) for tpu, r in chosen if not provision.kept_as_listed(r, result)]
    # the last address each had: a preempted TPU shows none, and the engines started on it still run their tunnels
    _stop_engines_on({ip for _, r in chosen if (ip := r.external_ip or r.last_external_ip)}, on_progress)
    failure: CloudDownError | None = None
    try:  # every TPU of every project: all deletes sent first, then waited on under the command's one bound
        done = provision.down(chosen, on_progress, end_s)
    except CloudDownError as exc:
        failure, done = exc, exc.result
    result.deleted, result.kept, result.failed = done.deleted, result.kept + done.kept, done.failed
    result.unreachable = list(unreachable)
    if failure is not None:  # its line names what was deleted and what may still exist
        raise CloudDownError("; ".join([str(failure), *unreachable, *held]), result, failure)
    went = f"deleted {', '.join(result.deleted)}; " if result.deleted else "nothing deleted; "
    if unreachable:  # what it reached is deleted; a labelled TPU in that zone may bill on unseen
        said = f"{went}{'; '.join([*held, *unreachable])}: {UNLISTED_AGAIN}"
        raise CloudDownError(said, result, CloudError(said, reason="transient"))
    if held:  # the others are deleted; each held one is its holder's to end (exit 8)
        said = f"{went}{'; '.join(held)}"
        raise CloudDownError(said, result, CloudError(said, reason="conflict"))
    return result


def _claim_all(resources: list[CloudResource], stack: ExitStack,
               leave_held: bool = False) -> tuple[list[CloudResource], list[str]]:  # fmt: skip
    """Hold, until `stack` closes, this home's claim (records.claimed) on the name of each of `resources` and on its
    replica set's: a `cloud down` took none, so it deleted a TPU a `cloud up` of this home still waited on (which then
    failed 'deleted outside this run', or saved again the record of a TPU gone), and two downs sent the same deletes.
    Returns (those claimed, one line for each left: 'left kind name (zone): its claim held by pid N (COMMAND)' with the
    command that deletes it once its holder ends). Raises HeldError (a BusyError, exit 8), nothing stopped or deleted,
    when another process holds one, its line the first holder's (records.claimed: the pid), its result every held
    line: a down does not wait for it, as an up holds its claim for its whole wait (a flex-start request queues up to
    --valid-until, hours), so a wait bounded by the down's DOWN_WAIT_S would mostly run out and say the same 10 min
    later. `leave_held` (a down without --name, of all it finds): a held one is left instead, the others returned: one
    TPU a `cloud up` or `demo --cloud` uses no longer keeps every other billing."""
    free: list[CloudResource] = []
    held: list[str] = []
    busy: BusyError | None = None
    taken: set[tuple[str, str, bool]] = set()
    for resource in resources:
        keys = [(resource.project, resource.name, False)]
        keys += [(resource.project, resource.replica_set, True)] if resource.replica_set else []
        # a set label from the API may be no TPU name: no claim of it
        keys = [k for k in keys if k not in taken and valid_names(k[0], "us-west4-a", k[1])]
        with ExitStack() as mine:
            for key in keys:
                try:
                    _claim(key, mine)
                except BusyError as exc:
                    busy = busy or exc
                    held.append(f"left {resource.kind} {resource.name} ({resource.zone}): its claim held by "
                                f"{cloud_records.holders(*key)}; delete it once that ends: "
                                f"{provision.delete_command(resource)}")  # fmt: skip
                    break
            else:
                taken.update(keys)
                free.append(resource)
                stack.enter_context(mine.pop_all())
    if busy is not None and not leave_held:  # one refused is all refused: the document says who holds each
        raise HeldError(str(busy), CloudDownResult(held=held), CloudError(str(busy), reason="conflict"))
    return free, held


def _claim(key: tuple[str, str, bool], stack: ExitStack) -> None:
    """Hold records.claimed of `key` (project, name, of_set) for a down until `stack` closes; a claim found taken whose
    holder ended as it was found (no pid holds it now: paths.holder_pids) is taken again, once: the TPU was left 'held
    by another process (its pid not readable)' and billed on until a second down. Raises BusyError as records.claimed
    does."""
    try:
        stack.enter_context(cloud_records.claimed(*key, cloud_records.DOWN_BUSY))
    except BusyError:
        if cloud_records.holder_pids(cloud_records.claim_path(*key)):
            raise
        stack.enter_context(cloud_records.claimed(*key, cloud_records.DOWN_BUSY))


def _stop_engines_on(addresses: set[str], on_progress: ProgressFn) -> None:
    """`down` the engines `up` runs on any of `addresses` (their tunnels and router end here), before those
    TPUs are deleted; a failure is said and the delete goes on (a TPU must not bill because ssh failed). Which hosts
    is read from the state `up` keeps, no engine asked whether it lives: `onechip down` stops one alive or gone, and
    the listing before (cloud_down_found's `serving`) asked already."""
    if not addresses & _engine_hosts():
        return
    on_progress(ProgressEvent("cloud", "stopping the engines on them first (onechip down)"))
    try:
        engines_down(on_progress)
    except OnechipError as exc:
        on_progress(ProgressEvent("cloud", f"could not stop the engines ({exc}); run `onechip down` after"))
