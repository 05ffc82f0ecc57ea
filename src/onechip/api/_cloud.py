"""`cloud_*`: getting a TPU (onechip.cloud)."""

from __future__ import annotations

from onechip.cloud import offers, provision
from onechip.cloud import records as cloud_records
from onechip.cloud.tpu_api import TpuApi
from onechip.progress import ProgressFn, no_progress
from onechip.schemas.cloud import (
    Attempt,
    CloudDownResult,
    CloudNameRequest,
    CloudProbeRequest,
    CloudResource,
    CloudStatus,
    CloudUpRequest,
    CloudUpResult,
    CloudZonesRequest,
    Quote,
    ZoneOffer,
)


def _tpu(project: str | None) -> TpuApi:
    return TpuApi(project)


def cloud_quote(request: CloudUpRequest) -> Quote:
    """The hourly burn of what `cloud_up(request)` would create (first zone's region, catalog price) and what
    stops its billing; what a shell prints before anything is created. Raises ConfigError."""
    offers.tpu_type(request.chip)
    zone = provision.zones_for(request)[0]
    limit = request.max_run_duration_s if request.provisioning == "flex-start" else (
        request.max_hours * 3600 if request.max_hours else None)  # fmt: skip
    return offers.quote(request.chip, request.provisioning, zone, limit)


def cloud_up(request: CloudUpRequest, on_progress: ProgressFn = no_progress) -> CloudUpResult:
    """Get a TPU: flex-start queued resource (default), spot or on-demand node, zones tried in order; see
    onechip.cloud.provision.up. Raises CloudError (every zone refused), Interrupted (Ctrl-C: names what exists
    and the command that deletes it), ConfigError, MissingDependencyError (google-auth)."""
    return provision.up(_tpu(request.project), request, on_progress)


def cloud_probe(request: CloudProbeRequest, on_progress: ProgressFn = no_progress) -> list[Attempt]:
    """Can CHIP be had with PROVISIONING in each zone now? A real create, deleted at once (billed for the
    seconds it lives); recorded for `cloud_zones`. See onechip.cloud.provision.probe."""
    return provision.probe(_tpu(request.project), request, on_progress)


def cloud_zones(request: CloudZonesRequest) -> list[ZoneOffer]:
    """Zone observations for a chip / provisioning model: probes first (newest), then the catalog's, each with
    its source and date. No API call."""
    if request.chip:
        offers.tpu_type(request.chip)
    return offers.offers(cloud_records.observed(), request.chip, request.provisioning)


def _recorded(request: CloudNameRequest) -> list[CloudResource]:
    chosen = [r for r in cloud_records.load_all() if not request.name or r.name == request.name]
    return [r for r in chosen if (not request.zones or r.zone in request.zones)
            and (not request.project or r.project == request.project)]  # fmt: skip


def _targets(request: CloudNameRequest) -> list[tuple[TpuApi, CloudResource]]:
    """Each resource status/down look at (provision.targets), with the client of its project: recorded
    ones, and every labelled one the API lists in --zone or in every zone onechip used, across pages."""
    recorded = _recorded(request)
    projects = {r.project for r in recorded} | {p for p, _ in cloud_records.zones_used()}
    if request.project is not None:
        projects = {request.project}
    out: list[tuple[TpuApi, CloudResource]] = []
    for project in sorted(projects, key=str):
        tpu = _tpu(project)
        out += [(tpu, r) for r in provision.targets(tpu, request, [r for r in recorded if r.project == tpu.project])]
    return out


def cloud_status(request: CloudNameRequest) -> list[CloudStatus]:
    """State, zone, external IP, provisioning model, elapsed time and $ so far of what onechip created
    (recorded, and labelled ones found in the zones it used), warning when --max-hours has passed or a
    resource ended. Raises CloudError (API unreachable, or not the TPU API)."""
    return [provision.status(tpu, r) for tpu, r in _targets(request)]


def cloud_recorded(request: CloudNameRequest) -> list[CloudResource]:
    """The resources onechip recorded that `request` selects (--name / --zone / --project); no API call.
    What a shell names when a --zone filter found nothing but onechip has resources elsewhere."""
    return _recorded(request)


def cloud_down_targets(request: CloudNameRequest) -> list[CloudResource]:
    """What `cloud_down(request)` would delete: recorded resources plus labelled ones in --zone (or every
    zone onechip used); only ever what carries onechip's label. Nothing is deleted."""
    return [r for _, r in _targets(request)]


def cloud_down(request: CloudNameRequest, on_progress: ProgressFn = no_progress) -> CloudDownResult:
    """Delete what onechip created (labelled; a queued resource with its node), as listed by
    cloud_down_targets. A queued resource in PROVISIONING is waited out, then deleted. Raises CloudError."""
    result = CloudDownResult()
    for tpu, resource in _targets(request):
        done = provision.down(tpu, [resource], on_progress)
        result.deleted += done.deleted
        result.kept += done.kept
    return result
