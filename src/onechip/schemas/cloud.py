"""Requests and results of `onechip cloud` (probe, zones, up, status, down): getting a TPU chip, or N of them
for N engines behind vllm-router (`cloud up --replicas N`: N one-chip TPU VMs, or one slice with an engine
per chip share).

Three provisioning models, named as the seeds and Google name them: 'flex-start' (a queued resource with a
max run duration: the only one that stops billing on its own), 'spot' (preemptible, bills until deleted) and
'on-demand' (bills until deleted). Durations are typed as '4h', '30m', '90s', '1h30m' and stored in seconds.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from onechip.schemas.common import (
    CommandWord,
    ModelName,
    Name,
    ResultModel,
    Said,
    StoredResult,
    image_reference,
    shell_line,
)
from onechip.schemas.inputs import Cli, RequestModel, comma_list
from onechip.schemas.replicas import MAX_REPLICAS, RouterPolicy

Provisioning = Literal["flex-start", "spot", "on-demand"]
# an attempt that moved on to the next zone is named by its reason (provision.FAILOVER): a queued resource
# FAILED otherwise is "failed", one suspended or a node preempted or stopped before it was ready "ended"
Outcome = Literal[
    "available", "stockout", "quota", "unsupported", "expired", "failed", "ended", "queued", "inaccessible", "error"
]
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$")
_UNITS = (86400.0, 3600.0, 60.0, 1.0)
# Flex-start runs from 10 minutes to 7 days (seed survey: 'flex-start 跑 10 分钟到 7 天').
FLEX_MIN_RUN_S = 600.0
FLEX_MAX_RUN_S = 7 * 86400.0
# onechip's own ceilings, checked before any create (a bigger value is a typo, and 1e308 h overflowed
# datetime after the TPU existed): a year of --max-hours or of any duration, a week of --timeout.
MAX_HOURS = 8760.0
MAX_WAIT_S = 7 * 86400.0
# An engine's boot timeout, seconds: what `up`'s timeout_s takes (schemas.requests.UpRequest); `cloud up --model` and
# the demo hand theirs to an `up`, so theirs take the same (0.5 or 100,000 failed there as an internal error).
MIN_BOOT_S, MAX_BOOT_S = 1.0, 86_400.0

# Names that become URL path segments of the TPU API (and onechip's record paths), in the shapes Google
# documents; anything else is refused before a request is sent ('../../q/locations/x' is not a zone):
#   zone        region-letter, e.g. us-west4-a, asia-northeast1-b
#               (https://cloud.google.com/compute/docs/regions-zones)
#   project id  6 to 30 lowercase letters, digits and hyphens, starting with a letter, not ending with a
#               hyphen (https://cloud.google.com/resource-manager/docs/creating-managing-projects), with the
#               legacy 'example.com:' domain prefix allowed
#   name        an RFC 1035 label, lowercase letter first, letters, digits, hyphens, no hyphen last, as
#               Compute Engine names its VMs (https://cloud.google.com/compute/docs/naming-resources); at
#               most 58 characters so that a flex-start node id NAME-node stays within 63. (The v2alpha1
#               discovery document's NodeSpec.nodeId regex, ^[A-Za-z0-9_.~+%-]+$, would let '..' through.)
_ZONE = re.compile(r"[a-z]+(?:-[a-z]+)*[0-9]+-[a-z]")
_PROJECT = re.compile(r"(?:[a-z0-9][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]")
_NAME = re.compile(r"[a-z](?:[a-z0-9-]{0,56}[a-z0-9])?")


def _shaped(pattern: re.Pattern[str], what: str, example: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"not a {what} (like {example})")  # schemas.inputs.describe adds the value: (got ...)
        return value

    return AfterValidator(check)


def valid_project(project: str) -> bool:
    """Is `project` a project id in the API's shape, or a project number (digits: an error's 'projects/123')?"""
    return bool(_PROJECT.fullmatch(project)) or (project.isascii() and project.isdigit())


def valid_names(project: str, zone: str, name: str | None = None) -> bool:
    """Are `project`, `zone` (and `name`) in the API's shapes (safe as URL segments and record paths)?"""
    shapes = [(_PROJECT, project), (_ZONE, zone)] + ([(_NAME, name)] if name is not None else [])
    return all(isinstance(v, str) and p.fullmatch(v) for p, v in shapes)


ZoneName = Annotated[str, _shaped(_ZONE, "zone", "us-west4-a")]
ProjectId = Annotated[str, _shaped(_PROJECT, "Google Cloud project id", "my-project-123")]
ResourceName = Annotated[
    str, _shaped(_NAME, "TPU resource name", "onechip-v5e-1: lowercase letters, digits, hyphens, at most 58")
]


def parse_duration(value: Any) -> Any:
    """'4h' -> 14400.0, '1h30m' -> 5400.0, '90s' / '90' -> 90.0 (seconds); a number passes. Raises ValueError for
    anything else: a list or an object passed on reached Duration's float | int, whose refusal pydantic gives once
    per branch, each named in its path ('max_run_duration_s.float', '...int')."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or text like 4h, not true/false")
    if isinstance(value, int | float):
        return value
    if not isinstance(value, str):
        raise ValueError("a duration is a number of seconds or text like 4h, 30m, 90s or 1h30m")
    text = value.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    match = _DURATION.fullmatch(text)
    if not text or match is None:
        # the value is not repeated here: the refusal's '(got ...)' shows it, cut
        raise ValueError("a duration looks like 4h, 30m, 90s or 1h30m")
    return sum(float(part) * unit for part, unit in zip(match.groups(), _UNITS, strict=True) if part)


# float | int (not float) so the command line hands the text ('4h') to parse_duration, not to click's float. Its JSON
# Schema (an MCP tool's input) says what parse_duration takes: generated, it listed number or integer only beside the
# default '4h' (which no validator then accepts) and carried the bounds as pydantic's own 'gt' and 'le', which no JSON
# Schema validator reads
DURATION_SCHEMA = {
    "anyOf": [
        {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_HOURS * 3600},
        {"type": "string", "description": "A duration: 4h, 30m, 90s, 1h30m, 2d; bare digits are seconds."},
    ]
}
Duration = Annotated[
    float | int,
    BeforeValidator(parse_duration),
    Field(gt=0, le=MAX_HOURS * 3600),
    WithJsonSchema(DURATION_SCHEMA),
]


def api_duration(seconds: float) -> str:
    """Seconds as the API's google.protobuf.Duration JSON: 14400.0 -> '14400s'."""
    return f"{int(round(seconds))}s"


class CloudTarget(RequestModel):
    """Which chip, where, and how: the fields every `onechip cloud` job shares."""

    chip: Name = Field(
        default="v5e-1", description="TPU chip: onechip's key (v5e-1, v6e-4) or Google's name (v5litepod-1, TPU v6e-4)."
    )
    project: ProjectId | None = Field(default=None, description="Google Cloud project (default: ADC's project).")
    zones: Annotated[list[ZoneName], comma_list(str), Cli("--zone")] = Field(
        default_factory=list, description="Zones, tried in order (default: the catalog's)."
    )
    provisioning: Provisioning = Field(default="flex-start", description="flex-start, spot or on-demand.")


class CloudProbeRequest(CloudTarget):
    """`onechip cloud probe`: can I get CHIP with PROVISIONING in each ZONE now? A real create, deleted at once."""

    wait_s: Annotated[float, Cli(hidden=True)] = Field(
        default=60.0,
        gt=0,
        le=MAX_WAIT_S,
        strict=True,
        description="How long a probe watches a queued request before it deletes it.",
    )


class CloudZonesRequest(RequestModel):
    """`onechip cloud zones`: which zones were seen to offer a chip, by provisioning model, with sources."""

    chip: Name | None = Field(default=None, description="Only this chip, named as --chip (default: all).")
    provisioning: Provisioning | None = Field(default=None, description="Only this provisioning model.")


class CloudUpRequest(CloudTarget):
    """`onechip cloud up`: a flex-start queued resource (default), or a spot or on-demand node."""

    name: ResourceName | None = Field(default=None, description="Resource name (default: onechip-CHIP).")
    max_run_duration_s: Annotated[Duration, Cli("--max-run-duration")] = Field(
        default="4h", validate_default=True, description="Flex-start: the node is deleted after this long (e.g. 4h)."
    )
    valid_until_s: Annotated[Duration, Cli("--valid-until")] = Field(
        default="1h", validate_default=True, description="Flex-start: how long to wait in the queue per zone (e.g. 1h)."
    )
    max_hours: float | None = Field(
        default=None, gt=0, le=MAX_HOURS, strict=True,
        description="Spot/on-demand: hours you mean to keep it, at most a year (status warns after).",
    )  # fmt: skip
    no_limit: bool = Field(
        default=False, strict=True, description="Spot/on-demand: run with no --max-hours (bills until deleted)."
    )
    ssh_key: Path | None = Field(
        default=None, description="Private key whose .pub goes into the node's ssh-keys (default: gcloud's)."
    )
    ssh_user: CommandWord = Field(default="onechip", description="User the ssh key is for on the node.")
    timeout_s: Annotated[float, Cli(hidden=True)] = Field(
        default=1800.0,
        gt=0,
        le=MAX_WAIT_S,
        strict=True,
        description="Give up on a node that is not READY this long after it was granted.",
    )
    replicas: int = Field(
        default=1, ge=1, le=MAX_REPLICAS, strict=True,
        description="Engines behind vllm-router: N one-chip TPU VMs (NAME-0 ... NAME-N-1), or one slice "
        "(--chip v5e-4) with an engine per chip share.",
    )  # fmt: skip
    model: ModelName | None = Field(
        default=None, description="Serve this model on the TPUs once READY (vllm-docker over ssh; router here)."
    )
    router_policy: RouterPolicy = Field(default="cache_aware", description="vllm-router --policy (with --model).")
    port: int | None = Field(
        default=None, ge=1, le=65535, strict=True,
        description="With --model: the engine's port on each TPU (8000; a slice's replica K: PORT + K).",
    )  # fmt: skip
    hf_token_file: Path | None = Field(default=None, description="With --model: file holding the HF token.")
    ssh_options: Annotated[list[CommandWord], Cli("--ssh-opt", repeat=True)] = Field(
        default_factory=list, description="With --model: ssh -o option, e.g. Port=2222."
    )
    boot_timeout_s: Annotated[float, Cli(hidden=True)] = Field(
        default=3600.0, ge=MIN_BOOT_S, le=MAX_BOOT_S, strict=True,
        description="With --model: give up on an engine not ready this long after its start.",
    )  # fmt: skip

    @model_validator(mode="after")
    def _cost_guard(self) -> CloudUpRequest:
        given = [
            flag for flag, value in (("--hf-token-file", self.hf_token_file), ("--ssh-opt", self.ssh_options)) if value
        ]
        if self.model is None and given:  # named as given: over MCP, ssh_options is no argument (mcp.tools)
            raise ValueError(
                f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for the engines --model starts"
            )
        if self.provisioning == "flex-start":
            if self.max_hours is not None or self.no_limit:
                raise ValueError(
                    "--max-hours/--no-limit are for spot and on-demand; flex-start stops at --max-run-duration"
                )
            if not FLEX_MIN_RUN_S <= self.max_run_duration_s <= FLEX_MAX_RUN_S:
                raise ValueError("--max-run-duration must be between 10m and 7d (flex-start's range)")
        elif self.max_hours is None and not self.no_limit:
            raise ValueError(
                f"{self.provisioning} bills until deleted: give --max-hours H (status warns when it passes) "
                "or --no-limit"
            )
        elif self.max_hours is not None and self.no_limit:
            raise ValueError("give --max-hours or --no-limit, not both")
        return self


class CloudNameRequest(RequestModel):
    """`onechip cloud status` / `down`: resources onechip created (labelled), by name or all."""

    name: ResourceName | None = Field(default=None, description="Resource name (default: every one onechip created).")
    project: ProjectId | None = Field(default=None, description="Google Cloud project (default: the recorded one).")
    zones: Annotated[list[ZoneName], comma_list(str), Cli("--zone")] = Field(
        default_factory=list,
        description="Zones to look in; there, TPUs labelled created-by=onechip that are not in this "
        "onechip's records are taken too (default: the recorded ones alone, in their zones).",
    )


# --- results


class Quote(ResultModel):
    """What a resource will cost before it is created: the hourly burn and what stops it."""

    chip: str = Field(description="Chip key.")
    provisioning: Provisioning = Field(description="Provisioning model.")
    region: str | None = Field(default=None, description="Region of the catalog price used.")
    usd_per_hour: float | None = Field(
        default=None, description="Catalog USD per hour of everything asked for: chips x usd_per_chip_hour."
    )
    usd_per_chip_hour: float | None = Field(default=None, description="Catalog USD per chip-hour.")
    chips: int = Field(default=1, description="Chips priced: every chip of every TPU asked for.")
    tpus: int = Field(default=1, description="TPU VMs (or slices) asked for.")
    price_source: str = Field(default="", description="Catalog source and date of the price, or why there is none.")
    stops_itself: bool = Field(description="Billing ends on its own (flex-start's max run duration).")
    limit_s: float | None = Field(default=None, description="Run limit: max run duration or --max-hours, seconds.")
    note: str = Field(default="", description="What stops the billing, in words.")
    reused: str | None = Field(
        default=None,
        description="The name of onechip's live TPU that `cloud up` will resume rather than create one (this quote "
        "is then that TPU's own: its zone, pricing model and limit); None: one is created.",
    )


class Attempt(ResultModel):
    """One zone tried: what the API said."""

    model_config = ConfigDict(validate_assignment=True)  # a message set after the fact is redacted too (Said)

    zone: str = Field(description="Zone.")
    provisioning: Provisioning = Field(description="Provisioning model asked for.")
    outcome: Outcome = Field(description="available, or the refusal told apart by code and message.")
    code: int | None = Field(default=None, description="gRPC code of the refusal (8 = RESOURCE_EXHAUSTED).")
    message: Said = Field(default="", description="The API's message, one line (redacted).")
    elapsed_s: float = Field(default=0.0, description="Seconds the attempt took.")
    checked_at: str = Field(default="", description="ISO time of the answer.")


# What is said of a TPU found by its label in the API (status / down --zone) that this onechip did not record: the
# label says an onechip created it, not that this one did (two checkouts, two users of one project), so it is said
NOT_RECORDED = (
    "not in this onechip's records: found by its created-by=onechip label, so perhaps another checkout's or another "
    "user's"
)


class CloudResource(StoredResult):
    """What onechip created (recorded locally, labelled in the cloud): enough for status and down."""

    name: str = Field(description="Queued resource id (flex-start) or node id (spot, on-demand).")
    kind: Literal["queued-resource", "node"] = Field(description="What was created.")
    node_id: str = Field(description="The TPU VM's node id.")
    project: str = Field(description="Project.")
    zone: str = Field(description="Zone.")
    chip: str = Field(description="Chip key.")
    accelerator_type: str = Field(description="The API's accelerator type, e.g. v5litepod-1.")
    runtime_version: str = Field(description="TPU VM runtime version.")
    provisioning: Provisioning = Field(description="Provisioning model actually used.")
    created_at: str = Field(description="ISO time the create request was accepted.")
    granted_at: str | None = Field(default=None, description="ISO time it was seen READY: billing runs from here.")
    times_by: Literal["api", "unsaid"] = Field(
        default="unsaid",
        description="Whose clock created_at and granted_at were stamped by: 'api', the TPU API's (its answers' Date: "
        "TpuApi.now), for a record made since onechip said so; 'unsaid' for one read without this field, whose times "
        "an onechip before 2026-12-07 stamped by this machine's clock (status says so when that clock is off the "
        "API's; the times are never rewritten, as the skew then is not known).",
    )
    ended_at: str | None = Field(
        default=None,
        description="ISO time onechip first saw it in an ended state (PREEMPTED, STOPPED, ...) or gone from the API "
        "(`cloud status`): its chips bill no later than this.",
    )
    max_run_duration_s: float | None = Field(default=None, description="Flex-start max run duration, s.")
    max_hours: float | None = Field(default=None, description="Spot/on-demand: the --max-hours given.")
    usd_per_hour: float | None = Field(default=None, description="Catalog price used for $ so far.")
    price_source: str = Field(default="", description="Where that price comes from.")
    state: str = Field(
        default="",
        description="Last state seen (WAITING_FOR_RESOURCES, ..., READY); 'gone' once the API has it no more.",
    )
    health: str = Field(
        default="",
        description="Its node's health as last seen (Node.health: HEALTHY, TIMEOUT, UNHEALTHY_MAINTENANCE, "
        "UNHEALTHY_TENSORFLOW); '' when the API gave none.",
    )
    node_state: str = Field(
        default="",
        description="A queued resource's node's state as last seen while the queued resource was ACTIVE (READY, "
        "PREEMPTED, ...); '' otherwise. An ACTIVE queued resource whose node was preempted or stopped does not run.",
    )
    external_ip: str | None = Field(
        default=None,
        description="The node's external IP while it is READY; None once it is not (preempted, stopped, gone): the "
        "address is released then and may be another VM's.",
    )
    last_external_ip: str | None = Field(
        default=None,
        description="The last external IP its node had while READY, kept after it stopped, was preempted or is gone: "
        "where onechip started engines, which `cloud down` stops; not a current address.",
    )
    ssh_user: str | None = Field(default=None, description="User whose key was put in the node's ssh-keys.")
    replica_set: str | None = Field(default=None, description="`cloud up --replicas N`: the set's name (--name).")
    replica_index: int | None = Field(default=None, description="`cloud up --replicas N`: its index in the set.")
    recorded: bool = Field(
        default=True,
        description="In this onechip's records (its home); False for one found by its created-by=onechip label alone "
        "(status / down --zone): another checkout's, another user's in the project, or one whose record was lost.",
    )
    labels: dict[str, str] | None = Field(
        default=None,
        exclude=True,  # the API's word at one list, never saved into the record as if it still held
        description="Its labels as its zone's list (status, down) last gave them this run; None when not listed.",
    )

    def __init__(self, /, **data: Any) -> None:
        data.setdefault("times_by", "api")  # made here: stamped by TpuApi.now; a file without the field: 'unsaid'
        super().__init__(**data)

    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]  # as StoredResult's: a file's read skips it


class CloudUpResult(ResultModel):
    """`cloud up`: the resource granted (READY) and every zone tried on the way."""

    resource: CloudResource = Field(description="The resource, READY (with --replicas: the first of the set).")
    attempts: list[Attempt] = Field(default_factory=list, description="Zones tried, in order.")
    reused: bool = Field(default=False, description="An existing labelled resource of that name was reused.")
    quote: Quote = Field(description="The price and limit it runs under.")
    delete_command: str = Field(description="The command that deletes it.")
    resources: list[CloudResource] = Field(
        default_factory=list, description="--replicas N on one-chip TPUs: every TPU of the set, in replica order."
    )
    router_url: str | None = Field(default=None, description="--model: the URL every other command uses.")
    replica_urls: list[str] = Field(default_factory=list, description="--model: each engine, through its tunnel.")
    engine_commands: list[str] = Field(
        default_factory=list, description="--model: what ran (`plan --replicas N` prints the same, one source)."
    )


class CloudStatus(ResultModel):
    """`cloud status` of one resource."""

    resource: CloudResource = Field(description="The resource as recorded, state and IP refreshed.")
    exists: bool = Field(description="The API still has it.")
    elapsed_s: float = Field(description="Seconds since it was created.")
    usd_so_far: float | None = Field(default=None, description="Elapsed hours x the catalog price.")
    deadline: str | None = Field(default=None, description="ISO time billing stops (flex-start) or --max-hours ends.")
    warnings: list[Said] = Field(default_factory=list, description="E.g. --max-hours has passed: still billing.")
    engines: list[Said] = Field(
        default_factory=list, description="The engines `up` runs on it: replica K, its URL, alive and healthy."
    )
    ended: str | None = Field(
        default=None,
        description="Set when it does not run and will not run again: in an ended state (a spot node PREEMPTED, a "
        "flex-start run SUSPENDED, a node stopped; resource.ended_at stamped) or gone (`exists` false): the one line "
        "saying so, what still bills and the command that deletes it (one of `warnings` too). None while it waits or "
        "runs, when its state could not be read, and in a status saved before this field.",
    )
    state_read: bool = Field(
        default=True,
        description="False when the API could not be asked for its state (a zone it could not reach): the record as "
        "it stands, which may still exist and bill (`warnings` says why and the command that deletes it).",
    )


class CloudStatuses(ResultModel):
    """`cloud status`: the resources onechip created that the request selects, and what its filter left out."""

    resources: list[CloudStatus] = Field(default_factory=list, description="One per recorded resource.")
    elsewhere: list[CloudResource] = Field(
        default_factory=list,
        description="When a name or zones filter matched nothing: the resources onechip recorded outside it (in the "
        "project given, if any), from the same read of the records; else [] (a filter that matches nothing must "
        "not read as 'nothing is running').",
    )
    unreachable: list[str] = Field(
        default_factory=list,
        description="One line per zone the API could not be read in (its list failed: a labelled TPU there may be "
        "missing above; or a recorded resource's state could not be read: it may still exist and bill); the zones "
        "that answered are reported all the same.",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="One line per zone whose list failed where the list could hide nothing (no --zone: only "
        "recorded resources are taken, each read or deleted on its own): said, not a failure.",
    )


class CloudTargets(ResultModel):
    """What `cloud down` would delete (cloud_down_found), and the zones it could not list."""

    resources: list[CloudResource] = Field(default_factory=list, description="Recorded and labelled resources found.")
    held: list[str] = Field(
        default_factory=list,
        description="A down without --name: one line per resource found that it will leave, its claim held by "
        "another process of this onechip home (a `cloud up`, `demo --cloud`, `cloud down` or `bench` using it), "
        "naming that process's pid and command; not in `resources`.",
    )
    serving: list[str] = Field(
        default_factory=list,
        description="One line per resource of `resources` that an engine `onechip up` started (`cloud up --model`) "
        "runs on, from the engine state `up` keeps (its host is the TPU's current or last external IP): the engine's "
        "URL, health (healthy, alive not healthy, gone) and start time; `cloud down` stops it (`onechip down`) before "
        "it deletes the TPU.",
    )
    unreachable: list[str] = Field(
        default_factory=list,
        description="One line per zone whose list failed: a labelled TPU there may be missing from `resources` "
        "(the zone's recorded ones are in it); `cloud down` deletes the rest and exits non-zero naming it.",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="One line per zone whose list failed where the list could hide nothing (no --zone: only "
        "recorded resources are taken, each read or deleted on its own): said, not a failure.",
    )


class ZoneOffer(ResultModel):
    """`cloud zones`: one observation of a chip + provisioning model in a zone, newest first."""

    chip: str = Field(description="Chip key.")
    zone: str = Field(description="Zone.")
    provisioning: Provisioning = Field(description="Provisioning model.")
    outcome: Outcome = Field(description="What a request got there.")
    source: str = Field(description="Catalog source, or 'onechip cloud probe'.")
    date: str = Field(description="ISO date (or time) of the observation.")
    note: str = Field(default="", description="Caveats.")


class CloudDownResult(ResultModel):
    """`cloud down`: what was deleted and what was not (with why). Its lines quote the API's errors: redacted (Said),
    set after the fact too, so `cloud down --json` and MCP cloud_down never show a token or signed URL one holds."""

    model_config = ConfigDict(validate_assignment=True)

    deleted: list[str] = Field(default_factory=list, description="'kind name (zone)' deleted.")
    kept: list[Said] = Field(
        default_factory=list, description="Found but not deleted, and nothing left to delete: gone, or not onechip's."
    )
    failed: list[Said] = Field(
        default_factory=list,
        description="'kind name (zone): why; delete it: COMMAND' per TPU whose delete failed: it may still exist and "
        "bill (it stays recorded); the command exits 7.",
    )
    unreachable: list[Said] = Field(
        default_factory=list,
        description="One line per --zone zone whose list failed: a labelled TPU there may be missing above and bill "
        "on; the command exits 7.",
    )
    held: list[Said] = Field(
        default_factory=list,
        description="'left kind name (zone): its claim held by pid N (COMMAND); ...' per resource left to the "
        "process of this onechip home using it (a `cloud up`, `demo --cloud`, `cloud down` or `bench`): a down without "
        "--name deletes the others, one with --name (or MCP targets) nothing; the command exits 8 (7 when a delete "
        "failed or a zone could not be listed too).",
    )
    notes: list[Said] = Field(
        default_factory=list,
        description="One line per zone whose list failed where the list could hide nothing (no --zone: only "
        "recorded resources are taken, each deleted on its own): said, not a failure.",
    )


class HostDemoOptions(RequestModel):
    """The fields `onechip demo` takes to run the whole pipeline on a real accelerator: on a host the user
    has (`--engine vllm|vllm-docker --host user@addr --model M --chip C`), or on a TPU it provisions first
    (`--cloud gcp`). Without them the demo runs on the embedded engine."""

    cloud: Literal["gcp"] | None = Field(
        default=None, description="gcp: provision a Cloud TPU first (onechip cloud up)."
    )
    engine: Literal["embedded", "vllm", "vllm-docker"] = Field(
        default="embedded", description="embedded (default), or vllm / vllm-docker on --host (or on the TPU)."
    )
    host: CommandWord | None = Field(default=None, description="user@addr of a host you have (not with --cloud).")
    model: ModelName | None = Field(default=None, description="Model to serve on the host, e.g. google/gemma-4-E2B-it.")
    chip: Name | None = Field(default=None, description="Chip key, e.g. v5e-1 (with --cloud or --engine).")
    image: str | None = Field(default=None, description="vllm-docker image, pulled by tag (default vllm/vllm-tpu).")
    _image = field_validator("image")(image_reference)
    launcher: CommandWord | None = Field(
        default=None, description="--engine vllm: the serve program, e.g. '/opt/venv/bin/vllm serve' (vllm serve)."
    )
    _launcher = field_validator("launcher")(shell_line)
    provisioning: Provisioning = Field(default="flex-start", description="--cloud: flex-start, spot or on-demand.")
    project: ProjectId | None = Field(default=None, description="--cloud: Google Cloud project.")
    zones: Annotated[list[ZoneName], comma_list(str), Cli("--zone")] = Field(
        default_factory=list, description="--cloud: zones, tried in order."
    )
    name: ResourceName | None = Field(default=None, description="--cloud: resource name (default onechip-CHIP).")
    max_run_duration_s: Annotated[Duration, Cli("--max-run-duration")] = Field(
        default="4h", validate_default=True, description="--cloud flex-start: the node is deleted after this long."
    )
    valid_until_s: Annotated[Duration, Cli("--valid-until")] = Field(
        default="1h", validate_default=True, description="--cloud flex-start: how long to wait in each zone's queue."
    )
    max_hours: float | None = Field(
        default=None, gt=0, le=MAX_HOURS, description="--cloud spot/on-demand: hours you mean to keep it."
    )
    no_limit: bool = Field(default=False, description="--cloud spot/on-demand: no --max-hours (bills until deleted).")
    keep: bool = Field(default=False, description="--cloud: keep the TPU after the demo (default: delete it).")
    again: bool = Field(default=False, description="--cloud: reuse the running TPU of an earlier demo.")
    ssh_key: Path | None = Field(default=None, description="SSH private key (default for --cloud: gcloud's).")
    ssh_user: CommandWord = Field(default="onechip", description="--cloud: the user to SSH in as.")
    ssh_options: Annotated[list[CommandWord], Cli("--ssh-opt", repeat=True)] = Field(
        default_factory=list, description="ssh -o option, e.g. Port=2222."
    )
    hf_token_secret: str | None = Field(default=None, description="Secret Manager secret holding the HF token.")
    hf_token_file: Path | None = Field(default=None, description="File holding the HF token.")

    def on_host(self) -> bool:
        """Does this demo run on a real accelerator (a host or a provisioned TPU), not the embedded engine?"""
        return self.cloud is not None or self.engine != "embedded"

    @model_validator(mode="after")
    def _host_demo(self) -> HostDemoOptions:
        if not self.on_host():
            given = [
                f"--{f.replace('_', '-')}"
                for f in (
                    "host",
                    "model",
                    "chip",
                    "image",
                    "launcher",
                    "hf_token_secret",
                    "hf_token_file",
                    "keep",
                    "again",
                )
                if getattr(self, f)
            ]  # each option named as given, so an MCP caller is told its own arguments (schemas.inputs.as_parameters)
            if given:
                raise ValueError(f"{'/'.join(given)} {'needs' if len(given) == 1 else 'need'} --cloud gcp or --engine")
            return self
        if not self.model or not self.chip:
            raise ValueError("a demo on a real accelerator needs --model and --chip")
        if self.cloud and self.host:
            raise ValueError("--cloud gcp provisions its own host; drop --host")
        if self.launcher and (self.cloud or self.engine != "vllm"):
            raise ValueError("--launcher is for --engine vllm (a docker engine runs its image's vllm)")
        if not self.cloud and not self.host and self.engine == "vllm" and (self.keep or self.again):
            raise ValueError("--keep/--again are for --cloud gcp")
        if self.cloud and self.provisioning != "flex-start" and self.max_hours is None and not self.no_limit:
            raise ValueError(f"{self.provisioning} bills until deleted: give --max-hours H or --no-limit")
        if self.hf_token_secret and self.hf_token_file:
            raise ValueError("give `--hf-token-secret` or `--hf-token-file`, not both")
        return self
