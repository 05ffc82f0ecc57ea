"""`demo` on a real accelerator: a host you have, or a Cloud TPU it provisions."""

from __future__ import annotations

import os
import typing
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from pathlib import Path

from onechip import cost as cost_layer
from onechip import planner
from onechip import report as report_layer
from onechip.api._bench import measure
from onechip.api._checks import check
from onechip.api._cloud import _tpu, cloud_up
from onechip.api._engines import down, up
from onechip.api._run import DEMO_CHECKS, DEMO_GRIDS, new_manifest, timed_stage
from onechip.cloud import offers, provision
from onechip.cloud import records as cloud_records
from onechip.engines import remote
from onechip.engines.local import free_port
from onechip.errors import CloudError, ConfigError, Interrupted, OnechipError
from onechip.paths import new_run_dir, onechip_home, write_text_atomic
from onechip.progress import ProgressEvent, ProgressFn
from onechip.schemas import RUN_FILES, BenchConfig, BootRecord, Plan, RunManifest
from onechip.schemas.cloud import CloudResource, CloudUpRequest
from onechip.schemas.requests import CheckRequest, DemoRequest, PlanRequest, UpRequest
from onechip.vllm import flags
from onechip.vllm.wire import WireClient


def demo_cloud_request(request: DemoRequest) -> CloudUpRequest:
    """The `cloud up` request a `demo --cloud gcp` makes (what the MCP tool's preview prices)."""
    assert request.chip is not None
    return CloudUpRequest(
        chip=request.chip, project=request.project, zones=request.zones, provisioning=request.provisioning,
        name=request.name, max_run_duration_s=request.max_run_duration_s, valid_until_s=request.valid_until_s,
        max_hours=request.max_hours, no_limit=request.no_limit, ssh_key=request.ssh_key, ssh_user=request.ssh_user,
    )  # fmt: skip


def _demo_host(request: DemoRequest, on_progress: ProgressFn) -> tuple[str | None, list[str], CloudResource | None]:
    """(user@addr, or None for this machine; ssh -o options; the TPU resource or None): --host as given, or a
    TPU from `cloud up` (or the recorded one with --again). The ssh key goes in as IdentityFile."""
    options = list(request.ssh_options)
    if request.ssh_key is not None:
        options.append(f"IdentityFile={request.ssh_key.expanduser()}")
    if not request.cloud:
        return request.host, options, None
    up_request = demo_cloud_request(request)
    if request.again:
        name = provision.tpu_name(up_request)
        if not any(r.name == name for r in cloud_records.load_all()):
            raise ConfigError(f"--again: no running TPU {name} recorded; run the demo without --again first")
    if not request.ssh_key and not request.ssh_options:
        options.append(f"IdentityFile={Path.home() / '.ssh' / 'google_compute_engine'}")
    resource = cloud_up(up_request, on_progress, claimed=True).resource  # the demo holds its claim (_demo_claim)
    if not resource.external_ip:
        raise CloudError(f"{resource.name} is READY but has no external IP", reason="other")
    return f"{request.ssh_user}@{resource.external_ip}", options, resource


def _demo_token_file(request: DemoRequest, project: str | None, on_progress: ProgressFn) -> Path | None:
    """The HF token as a 0600 file under onechip's home (from Secret Manager with --hf-token-secret, each retry
    of the read told through `on_progress`), or the --hf-token-file given. `up` then sends it over ssh's stdin
    into a 0600 file on the host: never argv, metadata or a log. The caller deletes a file made here."""
    if request.hf_token_secret is None:
        return request.hf_token_file
    with ExitStack() as stack:
        value = _tpu(project, on_progress, stack).access_secret(request.hf_token_secret)
    path = onechip_home() / "cloud" / ".hf_token"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")
    return path


def _demo_pull(host: str | None, options: list[str], image: str, on_progress: ProgressFn) -> None:
    """`docker pull IMAGE` on the host (None: this machine, where `up` runs docker too; it was `ssh localhost`), by
    tag (pulling by the config-blob id `docker images` shows fails with 'unexpected media type', seed); on an SSH
    host through sudo unless the user is root, as `up` runs docker (vllm.flags._resolved_target)."""
    if image.startswith("sha256:"):
        raise ConfigError(f"--image {image} is a config-blob id; pull by tag or IMAGE@sha256:<manifest digest>")
    docker = "sudo docker" if host is not None and not host.startswith("root@") else "docker"
    on_progress(ProgressEvent("demo", f"{docker} pull {image} on {host or 'this machine'}"))
    remote.Shell(target=host, options=options).run(f"{docker} pull {flags.shell_join([image])}", timeout_s=3600)


def _demo_boot(request: DemoRequest, the_plan: Plan, host: str | None, options: list[str], token_file: Path | None,
               run_dir: Path, on_progress: ProgressFn) -> tuple[Plan, BootRecord]:  # fmt: skip
    """Plan, pull (docker), `up` on the host with the compile cache mounted, and copy the boot record, plan,
    cross-check and engine log into `run_dir`; the served version (GET /version) goes into the boot record."""
    engine = "vllm-docker" if request.cloud else request.engine
    image = request.image or flags.default_image(the_plan)
    if engine == "vllm-docker" and image:
        _demo_pull(host, options, image, on_progress)
    up_request = UpRequest(
        engine=engine, host=host, plan=the_plan, image=image if engine ==
        "vllm-docker" else None, port=request.port, tunnel_port=free_port(), hf_token_file=token_file,
        ssh_options=options, timeout_s=request.boot_timeout_s, launcher=request.launcher,
    )  # fmt: skip
    result = up(up_request, on_progress)
    assert result.boot is not None
    boot = result.boot
    if not boot.engine_version:  # the client closed after its one read: no socket left to the GC
        with WireClient(boot.base_url or "") as wire:
            boot.engine_version = wire.version()
    engine_dir = onechip_home() / "engine"
    write_text_atomic(run_dir / RUN_FILES["boot"], boot.model_dump_json(indent=2))
    write_text_atomic(run_dir / RUN_FILES["plan"], the_plan.model_dump_json(indent=2))
    for key, name in (("crosscheck", "crosscheck.json"), ("engine_log", "engine.log")):
        if (engine_dir / name).exists():
            write_text_atomic(run_dir / RUN_FILES[key], (engine_dir / name).read_text(errors="replace"))
    return the_plan, boot


def _demo_plan(request: DemoRequest) -> Plan:
    """The plan the demo serves: --model on --chip at the model's own length (demo takes no serve flags). Raises
    ConfigError when it does not fit, naming the longest length that fits where the plan knows it and the `up` that
    serves it (the demo has no flag for a length)."""
    assert request.model is not None and request.chip is not None
    the_plan = planner.plan_model(PlanRequest(model=request.model, chip=request.chip))
    if the_plan.fits:
        return the_plan
    said = f"the plan says {request.model} does not fit {request.chip} ({the_plan.verdict})"
    longest = the_plan.longest_fit_max_model_len
    if longest is None:
        raise ConfigError(f"{said}; {the_plan.fit_hint('')}")
    engine = "vllm-docker" if request.cloud else request.engine
    raise ConfigError(
        f"{said}; the longest length that fits is {longest:,} tokens, which the demo cannot set: serve it with "
        f"`onechip up --engine {engine} --model {request.model} --chip {request.chip} --set max-model-len={longest}`"
        ", then run `onechip check` and `onechip bench` against it"
    )


def _demo_measure(request: DemoRequest, the_plan: Plan, boot: BootRecord, run_dir: Path,
                  stage: Callable[[str], AbstractContextManager[None]], done: Callable[[str, Path], None],
                  on_progress: ProgressFn, zone: str | None) -> None:  # fmt: skip
    """Checks (needle up to the plan's max model length), the bench grid, and the cost with the provisioning
    model actually used (every model when on a host of your own)."""
    served = {"base_url": boot.base_url, "model": boot.model}
    with stage("check"):
        options = dict(DEMO_CHECKS[request.quick])
        if "needle_lengths" in options:
            options["needle_lengths"] = [n for n in (1000, 8000, 30000) if n < the_plan.max_model_len] or [500]
        check(CheckRequest.model_validate({**served, "out_dir": run_dir, "kv_tokens": boot.kv_cache_tokens,
                                           **options}), on_progress)  # fmt: skip
    done("check", run_dir)
    with stage("bench"):
        grid = dict(DEMO_GRIDS[request.quick])
        if not request.quick:
            grid.update(contexts=[128, 1024, 8192], clients=[1, 4, 16, 64])
        grid["contexts"] = [c for c in typing.cast(list[int], grid["contexts"]) if c < the_plan.max_model_len]
        bench_run = measure(BenchConfig.model_validate({**served, **grid}), run_dir, plan=the_plan,
                            on_progress=on_progress)  # fmt: skip
    done("bench", run_dir)
    with stage("cost"):
        assert request.chip is not None
        pricing: list[str] | None = [request.provisioning] if request.cloud else None
        try:
            priced = cost_layer.estimate(
                request.chip, bench=bench_run, pricing=pricing, region=offers.region_of(zone) if zone else None
            )
        except ConfigError:  # no catalog price in that region: every region's, as `onechip cost` does
            priced = cost_layer.estimate(request.chip, bench=bench_run, pricing=pricing)
        write_text_atomic(run_dir / RUN_FILES["cost"], priced.model_dump_json(indent=2))


def demo_on_host(
    request: DemoRequest, on_progress: ProgressFn, on_stage_done: Callable[[str, Path], None] | None
) -> RunManifest:
    """The demo on a real accelerator: provision (--cloud gcp), pull, up, checks, grid, cost, report, then
    the engine down and the TPU deleted unless --keep. Ctrl-C or a failure still stops the engine and
    deletes the TPU (or, with --keep, says what is left billing and the command that deletes it)."""
    planned = _demo_plan(request)  # a plan that does not fit is refused before a TPU is created or an image pulled
    with _demo_claim(request, on_progress):
        return _demo_claimed(request, planned, on_progress, on_stage_done)


def _demo_claim(request: DemoRequest, on_progress: ProgressFn) -> AbstractContextManager[None]:
    """The claim (records.claimed) on the TPU name of a `demo --cloud`, held from before its `cloud up` until its TPU
    is deleted or kept: held by the `cloud up` alone, a `cloud down` of this home deleted the TPU under a demo that
    measured on it, and a second demo resumed it, then deleted it as its own. None to hold on a host of your own.
    Raises BusyError (exit 8, nothing sent) when another process, or another call of this one, holds it; CloudError
    when no project is known (as cloud up)."""
    if not request.cloud:
        return nullcontext()
    with ExitStack() as stack:  # the project as cloud up's client resolves it: --project, else the credentials'
        project = _tpu(request.project, on_progress, stack).project
    return cloud_records.claimed(project, provision.tpu_name(demo_cloud_request(request)))


def _demo_claimed(request: DemoRequest, planned: Plan, on_progress: ProgressFn,
                  on_stage_done: Callable[[str, Path], None] | None) -> RunManifest:  # fmt: skip
    """demo_on_host, its TPU name claimed (_demo_claim) and its plan made."""
    run_dir = request.out_dir or new_run_dir(request.runs_root)
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = new_manifest(run_dir, request.quick)
    manifest.chip = str(request.chip)
    manifest.command = f"demo {'--cloud gcp' if request.cloud else '--engine ' + request.engine}"
    done = on_stage_done or (lambda stage, path: None)

    def stage(name: str) -> AbstractContextManager[None]:
        return timed_stage(manifest, name, run_dir, on_progress)

    resource: CloudResource | None = None
    token_file: Path | None = None
    engine_up = False
    failure: OnechipError | None = None  # on its way out: its message is completed once the cleanup is known
    before = _recorded(request)  # what cloud up records from now on is this demo's (_provisioned)
    try:
        with stage("provision"):
            host, options, resource = _demo_host(request, on_progress)
        with stage("boot"):
            token_file = _demo_token_file(request, resource.project if resource else request.project, on_progress)
            engine_up = True
            the_plan, boot = _demo_boot(request, planned, host, options, token_file, run_dir, on_progress)
        done("boot", run_dir)
        done("plan", run_dir)
        _demo_measure(request, the_plan, boot, run_dir, stage, done, on_progress, resource.zone if resource else None)
        manifest.status = "ok"
        with stage("report"):
            report_layer.write_report(run_dir, ("md", "html", "serving-report"))
    except (KeyboardInterrupt, Interrupted) as exc:
        manifest.status, manifest.error = "interrupted", str(exc) if isinstance(exc, Interrupted) else "interrupted"
        resource = resource or _provisioned(request, before)
        failure = Interrupted(f"demo interrupted; what was measured is in {run_dir}")
        raise failure from None
    except OnechipError as exc:
        manifest.status, manifest.error = "failed", str(exc)
        resource = resource or _provisioned(request, before)
        failure = exc
        raise
    finally:
        if token_file is not None and token_file != request.hf_token_file:
            token_file.unlink(missing_ok=True)
        with stage("down"):
            gone, left = _demo_down(request, resource, engine_up, on_progress, failing=failure is not None)
        if failure is not None and (resource is not None or isinstance(failure, Interrupted)):
            # what the cleanup confirmed, not what the failure feared before it ran
            said = str(failure).replace(f"; {provision.may_exist_clause(resource)}", "") if gone and resource else None
            failure.args = (f"{said or failure}; {left}",)
            manifest.error = str(failure) if manifest.status == "failed" else manifest.error
        write_text_atomic(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))
    return manifest


def _recorded(request: DemoRequest) -> set[tuple[str, str, str, str]]:
    """This home's records as (project, zone, name, created_at): what existed before the demo (`_provisioned`)."""
    return {(r.project, r.zone, r.name, r.created_at) for r in cloud_records.load_all()} if request.cloud else set()


def _provisioned(request: DemoRequest, before: set[tuple[str, str, str, str]]) -> CloudResource | None:
    """What the demo's `cloud up` created (a record not in `before`, `_recorded` as the demo began) before it failed
    or was interrupted: a queued request still waiting, a node not yet READY. The demo deletes it as it deletes a
    TPU it got (or, with --keep, names it); a TPU of that name created before the demo, or in a zone it was
    not given, is never touched. Told apart by the records, not by a time: created_at is the API's clock
    (TpuApi.now), the demo's start this machine's, and with this machine ahead the demo's own request seemed older.
    None when the demo provisions nothing or created nothing."""
    if not request.cloud:
        return None
    name = provision.tpu_name(demo_cloud_request(request))
    found = [r for r in cloud_records.load_all() if r.name == name and (r.project, r.zone, r.name, r.created_at)
             not in before and (not request.zones or r.zone in request.zones)]  # fmt: skip
    return max(found, key=lambda r: r.created_at) if found else None


def _demo_down(
    request: DemoRequest, resource: CloudResource | None, engine_up: bool, on_progress: ProgressFn, failing: bool
) -> tuple[bool, str]:
    """Stop the engine; delete the TPU unless --keep (then say what bills and how to delete it). Returns
    (confirmed gone, what became of the TPU in words): deleted or already gone as the API confirmed, kept, or
    nothing provisioned. A delete that fails raises its CloudError (what may still exist, how to delete it),
    unless a failure is already on its way (`failing`): then it is said in the words, beside that failure."""
    if engine_up:
        try:
            down(on_progress)
        except OnechipError as exc:
            on_progress(ProgressEvent("demo", f"could not stop the engine: {exc}"))
    if resource is None:
        return False, "nothing was provisioned"
    if request.keep:
        kept = (f"kept {resource.kind} {resource.name} ({resource.zone}), {provision.bills_clause(resource)}; delete "
                f"it: {provision.delete_command(resource)}")  # fmt: skip
        on_progress(ProgressEvent("demo", kept))
        return False, kept
    on_progress(ProgressEvent("demo", f"deleting {resource.kind} {resource.name} ({resource.zone})"))
    try:
        with ExitStack() as stack:
            result = provision.down([(_tpu(resource.project, on_progress, stack), resource)], on_progress)
    except KeyboardInterrupt:  # a second Ctrl-C while deleting: say what may still bill
        raise Interrupted(provision.interrupted_message(resource)) from None
    except CloudError as exc:
        if not failing:
            raise
        return False, f"the demo's delete failed: {exc}"
    gone = bool(result.deleted) or any(k.endswith(": already gone") for k in result.kept)
    return gone, "; ".join([f"the demo deleted {d}" for d in result.deleted] + result.kept)
