"""`onechip cloud probe|zones|up|status|down`: getting a TPU chip (onechip.api.cloud_*), rendered.

Anything that creates or deletes a billable resource says what and for how much first, and asks unless
--yes; without a terminal, --yes is required (one clear line, never a hanging prompt).
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from typing import Any, get_args

import typer
from pydantic import BaseModel

from onechip import api
from onechip.cli.options import options_from
from onechip.cli.render import console, print_json, print_whole, said, titled_table
from onechip.errors import CloudDownError, CloudError, ConfigError, OnechipError, error_line, one_line
from onechip.progress import ProgressEvent, ProgressFn
from onechip.schemas.cloud import (
    NOT_RECORDED,
    CloudDownResult,
    CloudNameRequest,
    CloudProbeRequest,
    CloudResource,
    CloudUpRequest,
    CloudUpResult,
    CloudZonesRequest,
    Outcome,
    Quote,
)
from onechip.schemas.inputs import build_request

# What every `onechip cloud ...` exits with (errors.OnechipError.exit_code of each error class it raises; the README
# points here)
EXIT_CODES = (
    "Exit codes: 0 done (status also when a TPU is gone or ended: its warning says so); 1 the prompt was declined; "
    "2 bad input (a flag, a zone not shaped like one, spot or on-demand without --max-hours, no --yes off a terminal, "
    "a down --name that matches nothing while onechip has other resources: it names them); "
    "3 google-auth is not installed; 5 an engine of --model did not start (the TPUs stay up: the line gives the "
    "command that deletes them); 7 the cloud API refused or failed (a zone it has not, stockout or quota in every "
    "zone, credentials, an outage past its deadline, a delete that failed: the line names what may still exist and "
    "how to delete it); "
    "8 another onechip holds the engine state, or the TPU name (a `cloud up`, `demo --cloud`, `cloud down` or a "
    "`bench` of its engine using it: a down without --name deletes the others and names each TPU it left, its "
    "holder's pid and command); "
    "130 interrupted (Ctrl-C), 143 stopped by SIGTERM (both name what may "
    "still exist). With --json, stdout holds the JSON alone (progress and errors go to stderr); on an error it holds "
    '{"error": the line, "exit_code": N}; status and down, when a zone could not be listed, a delete failed or a '
    "TPU was held by another process, print their whole result with those two keys added (down's: what was "
    "deleted, what was not and why, and in `held` who holds each TPU left)."
)
cloud_app = typer.Typer(
    name="cloud", help="Get a Cloud TPU: probe, zones, up (flex-start, spot, on-demand), status, down.",
    epilog=EXIT_CODES, no_args_is_help=True,
)  # fmt: skip
JSON = typer.Option(False, "--json", help="Print the result as JSON.")
OUTCOME_WIDTH = max(len(o) for o in get_args(Outcome))  # `zones`' outcome column: the longest, 'inaccessible'

YES = typer.Option(False, "--yes", "-y", help="Do not ask before creating or deleting.")


def state_lines() -> ProgressFn:
    """A ProgressFn printing each new message once (state changes, zones tried), on stderr."""
    last: list[str] = [""]

    def show(event: ProgressEvent) -> None:
        if event.message != last[0]:
            last[0] = event.message
            elapsed = f" ({event.done:.0f} s)" if event.done else ""
            typer.echo(f"  {one_line(event.message)}{elapsed}", err=True)

    return show


def confirm(what: str, yes: bool) -> None:
    """Ask before `what` unless --yes; refuse (ConfigError) without a terminal to ask on (a stdin that is none, or
    closed: sys.stdin None)."""
    if yes:
        return
    if sys.stdin is None or not sys.stdin.isatty():
        raise ConfigError(f"{what}: add --yes to go ahead without a terminal")
    if not typer.confirm(what + "?", default=False):
        raise typer.Exit(1)


def quote_line(quote: Quote) -> str:
    price = f"${quote.usd_per_hour:.4f}/h" if quote.usd_per_hour is not None else "price unknown"
    if quote.usd_per_chip_hour is not None and quote.chips > 1:
        price += f" ({quote.chips} chips x ${quote.usd_per_chip_hour:.4f}/chip-hour)"
    where = f" ({quote.region} catalog price: {quote.price_source})" if quote.region else f" ({quote.price_source})"
    limit = f"; limit {quote.limit_s / 3600:g} h" if quote.limit_s else "; no limit"
    what = f"{quote.tpus} x {quote.chip}" if quote.tpus > 1 else quote.chip
    return f"{what} {quote.provisioning}: {price}{where}{limit}; {quote.note}"


def ask_up(request: CloudUpRequest, yes: bool, to_stderr: bool, purpose: str = "") -> None:
    """Say what `cloud up` of `request` will do, priced (api.cloud_up_quote: it reads the API), and ask first
    (`purpose`, e.g. ' for the demo', ends the question): 'will reuse NAME' when it resumes onechip's live TPU of
    that name (nothing is created; that TPU's own quote), else 'will create'. Exits as `confirm` on a no."""
    quote = api.cloud_up_quote(request, state_lines())
    if quote.reused:  # nothing is created: the question names the TPU resumed, quoted as it runs
        said = f"will reuse {quote.reused} (onechip's live TPU of that name; nothing is created): "
        typer.echo(said + quote_line(quote), err=to_stderr)
        confirm(f"reuse {quote.reused} ({quote.chip} {quote.provisioning}){purpose}", yes)
    else:
        typer.echo("will create " + quote_line(quote), err=to_stderr)
        confirm(f"create {quote.tpus} x {request.chip} ({request.provisioning}){purpose}" if quote.tpus > 1 else
                f"create {request.chip} ({request.provisioning}){purpose}", yes)  # fmt: skip


def print_up(result: CloudUpResult) -> None:
    for attempt in result.attempts:
        mark = "[green]granted[/]" if attempt.outcome == "available" else f"[yellow]{attempt.outcome}[/]"
        console.print(f"  {attempt.zone}: {mark} {said(attempt.message)}", highlight=False, soft_wrap=True)
    verb = "reused" if result.reused else "ready"
    for r in result.resources or [result.resource]:
        console.print(f"[bold green]{verb}[/] {r.kind} {r.name} in {r.zone}: {r.accelerator_type} ({r.provisioning}), "
                      f"state {r.state}, external IP {r.external_ip}", highlight=False, soft_wrap=True)  # fmt: skip
    for k, url in enumerate(result.replica_urls):
        console.print(f"[bold green]replica {k}[/] {url}", highlight=False, soft_wrap=True)
    if result.router_url:
        what = "router" if result.replica_urls else "engine"
        console.print(f"[bold green]{what}[/] {result.router_url} (every other onechip command talks to it; "
                      "see `onechip status`; `onechip down` stops them)", highlight=False, soft_wrap=True)  # fmt: skip
    r = result.resource
    console.print(quote_line(result.quote), highlight=False, soft_wrap=True)
    if result.quote.limit_s and r.granted_at:
        end = datetime.fromisoformat(r.granted_at) + timedelta(seconds=result.quote.limit_s)
        what = (
            "billing stops on its own at" if result.quote.stops_itself else "--max-hours ends at (status warns after)"
        )
        console.print(f"{what} {end.isoformat(timespec='seconds')}", highlight=False, soft_wrap=True)
    console.print(f"delete {'them' if result.resources else 'it'}: {result.delete_command}", highlight=False,
                  soft_wrap=True)  # fmt: skip


def register(app: typer.Typer) -> None:
    app.add_typer(cloud_app, name="cloud")


@cloud_app.command()
@options_from(CloudUpRequest)
def up(as_json: bool = JSON, yes: bool = YES, **fields: Any) -> None:
    """Get a TPU: flex-start queued resource (default; stops billing itself), spot or on-demand node; with
    --replicas N, N of them (or one slice) and, with --model, an engine on each behind vllm-router here."""
    request = build_request(CloudUpRequest, fields)
    ask_up(request, yes, as_json)  # stdout stays JSON
    result = api.cloud_up(request, state_lines())
    if as_json:
        print_json(result)
    else:
        print_up(result)


@cloud_app.command()
@options_from(CloudProbeRequest)
def probe(as_json: bool = JSON, yes: bool = YES, **fields: Any) -> None:
    """Can I get CHIP with PROVISIONING in each ZONE now? A real create, deleted at once (no dry-run exists)."""
    request = api.cloud_target(build_request(CloudProbeRequest, fields))  # an unknown chip before the question
    confirm(f"create and at once delete {request.chip} ({request.provisioning}) in each zone: billed seconds", yes)
    attempts = api.cloud_probe(request, state_lines())
    if as_json:
        print_json(attempts, indent=None)
        return
    table = titled_table(f"probe {request.chip} {request.provisioning}")
    for col in ("zone", "outcome", "code", "s", "message"):
        table.add_column(col)
    for a in attempts:
        table.add_row(a.zone, a.outcome, str(a.code or ""), f"{a.elapsed_s:.0f}", said(a.message))
    print_whole(table)


@cloud_app.command()
@options_from(CloudZonesRequest)
def zones(as_json: bool = JSON, **fields: Any) -> None:
    """Which zones were seen to offer a chip with each provisioning model (sources and dates; probes first)."""
    found = api.cloud_zones(build_request(CloudZonesRequest, fields))
    if as_json:
        print_json(found, indent=None)
        return
    console.print("[bold]zones[/] (each an observation with its source, not a promise: quota is not capacity)")
    for z in found:
        mark = "green" if z.outcome == "available" else "yellow"
        note = f"; {z.note}" if z.note else ""
        line = (
            f"  {z.chip:<6} {z.zone:<16} {z.provisioning:<10} [{mark}]{z.outcome:<{OUTCOME_WIDTH}}[/] {z.date[:10]}  "
        )
        console.print(f"{line}[dim]{z.source}{note}[/]", highlight=False, soft_wrap=True)


@cloud_app.command()
@options_from(CloudNameRequest)
def status(as_json: bool = JSON, **fields: Any) -> None:
    """State, zone, external IP, provisioning model, elapsed time and $ so far of what onechip created (--json: the
    resources, the zones that could not be read, the notes)."""
    request = build_request(CloudNameRequest, fields)
    statuses = api.cloud_statuses(request, state_lines())
    found = statuses.resources
    # the zones that answered are reported; not knowing one is no clean exit
    failure = CloudError(f"{'; '.join(statuses.unreachable)}: {api.UNLISTED_AGAIN}") if statuses.unreachable else None
    if as_json:
        print_failed_json(statuses, failure)
    elif not found and not statuses.unreachable:
        console.print(nothing_line(request, statuses.elsewhere), highlight=False, soft_wrap=True)
    for st in [] if as_json else found:
        r = st.resource
        usd = f"${st.usd_so_far:.2f}" if st.usd_so_far is not None else "$?"
        state = (r.state or "no state") if st.exists else "gone"
        state += f" (node {r.node_state})" if st.exists and r.node_state not in ("", "READY") else ""
        ends = ""
        if st.deadline:
            ends = (
                f", billing ends {st.deadline}"
                if r.provisioning == "flex-start"
                else f", --max-hours ends {st.deadline}"
            )
        ip = f"IP {r.external_ip}" if r.external_ip else "no IP yet" if st.exists and not r.ended_at else "no IP"
        member = f", replica {r.replica_index} of set {r.replica_set}" if r.replica_set else ""
        line = f"{r.name} ({r.kind}{member}) in {r.zone}: {state}, {r.provisioning}, {ip}, "
        console.print(f"{line}{st.elapsed_s / 3600:.2f} h since created, {usd} so far{ends}", highlight=False,
                      soft_wrap=True)  # fmt: skip
        for engine in st.engines:
            console.print(f"  {said(engine)}", highlight=False, soft_wrap=True)
        for warning in st.warnings:
            console.print(f"[yellow]warning[/] {said(warning)}", highlight=False, soft_wrap=True)
    for note in statuses.notes:  # a zone's list failed, hiding nothing: each of its TPUs was read above
        typer.echo(f"note: {one_line(note)}", err=True)
    if failure is not None:
        raise failure


def print_failed_json(result: BaseModel, failure: OnechipError | None = None) -> None:
    """`result` as JSON on stdout (render.print_json); with `failure` (the command then exits with it), the error
    object's "error" (the line stderr says) and "exit_code" added: one document that says what was done and that it
    did not all go."""
    added = None if failure is None else {"error": error_line(str(failure)), "exit_code": failure.exit_code}
    print_json(result, added)


def nothing_line(request: CloudNameRequest, elsewhere: list[CloudResource]) -> str:
    """What `status` says when nothing matched: with a --name/--zone filter, whether onechip has
    resources `elsewhere` (CloudStatuses.elsewhere: a filter that matches nothing must not read as 'nothing is
    running')."""
    if not (request.zones or request.name):
        return "nothing recorded: onechip has no cloud resource running"
    where = f"in {','.join(request.zones)}" if request.zones else f"named {request.name}"
    if not elsewhere:
        return f"nothing of onechip's {where}, and nothing recorded anywhere else"
    names = ", ".join(f"{r.name} ({r.zone})" for r in elsewhere[:5])
    return f"nothing of onechip's {where}; it has {len(elsewhere)} elsewhere: {names} (`onechip cloud status`)"


@cloud_app.command()
@options_from(CloudNameRequest)
def down(as_json: bool = JSON, yes: bool = YES, **fields: Any) -> None:
    """Delete what onechip created (labelled created-by=onechip; a queued resource with its node). Every delete is
    sent first, then all are waited for up to 10 min in all (PROVISIONING, a delete not finished, an outage of the
    API: no answer, 5xx, rate limit); then the ones left are named."""
    request = build_request(CloudNameRequest, fields)
    progress = state_lines()
    # the lists ride an outage within a down's bound; with --yes nobody is asked between, so the label reads and
    # deletes share that one bound (after a confirmation, theirs begins then)
    end_s = api.down_deadline()
    try:
        listing = api.cloud_down_found(request, progress, end_s)
    except CloudDownError as exc:  # its only zone(s) could not be listed, or all it found is held: the result says
        _print_down(exc.result, as_json, exc)  # so, as below
        raise
    targets = listing.resources
    for line in listing.held:  # left to the process using it: said before the question about the others
        typer.echo(f"  {one_line(line)}", err=as_json)
    for line in listing.serving:  # an engine `cloud up --model` started: said before the question that stops it
        typer.echo(f"  {one_line(line)}", err=as_json)
    if not targets:  # under --json, stdout holds the JSON alone: an empty result, the line on stderr
        typer.echo("nothing to delete: no resource onechip created matches", err=as_json)
        if as_json:
            print_json(CloudDownResult())
        return
    _confirm_targets(targets, as_json, yes)
    # what was listed and confirmed, not looked up again; a zone it could not list is named after the deletes
    try:
        result = api.cloud_down(request, progress, targets, listing.unreachable, listing.notes, end_s if yes else None,
                                listing.held)  # fmt: skip
    except CloudDownError as exc:  # stdout says what was deleted and what was not; the line (stderr) says it too, cut
        _print_down(exc.result, as_json, exc)  # at errors.MAX_LINE_CHARS: stdout says each TPU left and its command
        raise
    for note in result.notes:  # a zone's list failed, hiding nothing: each of its TPUs was deleted on its own
        typer.echo(f"note: {one_line(note)}", err=True)
    _print_down(result, as_json)


def _confirm_targets(targets: list[CloudResource], as_json: bool, yes: bool) -> None:
    """Each of `targets` on a line (stderr under --json), with why `cloud down` keeps it where it will
    (api.listed_keeps: the delete's own decision, in its words), then the question (none with --yes, nor when it
    keeps each: nothing is deleted, as MCP cloud_down's gate asks nothing then)."""
    kept = {id(t): why for t in targets if (why := api.listed_keeps(t))}
    gone = len(targets) - len(kept)
    for t in targets:
        found = "" if t.recorded else f"; {NOT_RECORDED}"
        keep = f"; will be kept: {kept[id(t)]}" if id(t) in kept else ""
        typer.echo(f"  {t.kind} {t.name} in {t.zone} ({t.provisioning}, project {t.project}{found}){keep}", err=as_json)
    confirm(f"delete these {gone}" + (f", keep {len(kept)}" if kept else ""), yes or not gone)


def _print_down(result: CloudDownResult, as_json: bool, failure: OnechipError | None = None) -> None:
    """What a `cloud down` did: under --json the result (print_failed_json, with `failure`'s line); else a line a TPU:
    deleted, kept (and why), not deleted (why, and its delete command)."""
    if as_json:
        print_failed_json(result, failure)
        return
    for line in result.deleted:
        console.print(f"[green]deleted[/] {said(line)}", highlight=False, soft_wrap=True)
    for line in result.kept:
        console.print(f"[yellow]kept[/] {said(line)}", highlight=False, soft_wrap=True)
    for line in result.failed:
        console.print(f"[red]not deleted[/] {said(line)}", highlight=False, soft_wrap=True)
    for line in result.held:
        console.print(f"[yellow]{said(line)}[/]", highlight=False, soft_wrap=True)  # its command may hold [
