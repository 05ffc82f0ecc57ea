"""Planning: `plan` and the store of measured boots that later plans of the same deployment read."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from onechip import planner
from onechip.engines import embedded, model_store, replicas, startup
from onechip.errors import ConfigError, DoesNotFit, os_error_line
from onechip.paths import home_store, write_text_atomic
from onechip.planner import calibration
from onechip.planner.chips import other_card
from onechip.planner.core import SLICE_CHIPS
from onechip.schemas import CrossCheck, Plan
from onechip.schemas.common import GIB, stored_by_newer, written_by_newer
from onechip.schemas.requests import PlanRequest
from onechip.vllm import bootlog, flag_table, flags, log_summary

# a length as `plan` takes it (Plan.fit_hint); an MCP error names the argument instead (schemas.inputs.as_parameters)
PLAN_LENGTH = "--max-model-len {}"


def does_not_fit(the_plan: Plan, said: str = "the plan does not fit") -> DoesNotFit:
    """The error a plan that does not fit (fits False) ends `plan` with (exit 10): `said`, then what to change
    (Plan.fit_hint: the longest length that fits, where the plan knows it), carrying the plan as its `result`."""
    return DoesNotFit(f"{said}; {the_plan.fit_hint(PLAN_LENGTH)}", the_plan)


def plan(request: PlanRequest) -> Plan:
    """Plan `request.model` on `request.chip` under `request.engine` rules (default: the chip's kind, as
    `up` does); see onechip.planner.plan_model (raises ConfigError).

    The plan's `serve_command` is the command `up --engine LAUNCH` runs with the same serve options (host,
    port, image, --set, launcher, token file), built by the same code (engines.startup). LAUNCH
    (`request.launch`) defaults to 'vllm-docker' where the rules have a default image (vllm-tpu, vllm-gpu:
    the seed's way) and to 'vllm' otherwise (vllm-cpu, vllm-ascend, an AMD card without --image); 'embedded'
    plans the bundled model as the embedded engine serves it (MODEL must name it, CHIP must be cpu).
    request.against: a vLLM boot log; the plan's `crosscheck` then holds planned vs reported allocation (ConfigError
    where the log is of a platform no engine rule plans: bootlog.unplanned_platform).
    """
    request = flag_table.with_sets(request)  # `--set max-num-seqs=64` is planned with, not only launched
    rules = request.engine or planner.default_engine_rules(request.chip)
    kind = request.launch or ("vllm-docker" if rules in flags.IMAGE_REPOSITORIES else "vllm")
    if request.launch is None and kind == "vllm-docker" and not request.image and _amd(request.chip, rules):
        kind = "vllm"  # no default image: AMD tags its ROCm images per release and card family (flags.default_image)
    if request.replicas > 1:
        result = _replica_plan(request, kind)
    elif kind == "embedded":
        result = _embedded_plan(request)
    else:
        result = planner.plan_model(request, calibration_dir=measured_boots_dir())
        prepared = startup.prepare(
            result, kind, host=request.host, port=request.port, image=request.image, sets=request.sets or None,
            hf_token_file=request.hf_token_file, launcher=request.launcher,
        )  # fmt: skip
        result.serve_command = prepared.spec.command
    if request.against is not None:
        try:  # bounded, and a binary file refused, as summarize_logs reads a log
            text = log_summary.read_log_text(request.against, "--against")
        except OSError as exc:
            raise ConfigError(f"--against {request.against}: cannot read: {exc.strerror}") from None
        boot = bootlog.read_boot_log(text, result.engine, result.serve_model or result.model)
        if (unplanned := bootlog.unplanned_platform(boot)) is not None:  # a Metal log is no CPU backend's
            raise ConfigError(f"--against {request.against}: {unplanned}")
        result.crosscheck = bootlog.crosscheck(result, boot, other_card)
        result.crosscheck.not_stored = remember_boot(result, result.crosscheck)
    return result


def _amd(chip: str, rules: str) -> bool:
    """An AMD card under vllm-gpu rules (the planner's Plan.gpu_maker, which flags.default_image reads)."""
    acc = planner.rules.accelerator(chip)
    return rules == "vllm-gpu" and acc.kind == "gpu" and acc.manufacturer == "AMD"


def plan_replica(request: PlanRequest, share: int, replicas_n: int, tp_flag: str = "--tensor-parallel-size") -> Plan:
    """The plan of one of `replicas_n` replicas on its `share` of `request.chip` (engines.replicas.
    replica_plan_request: tensor parallel over the share unless the user chose a size). Raises ConfigError as
    planner.plan_model does; one about a tensor-parallel size taken from the share says so and names `tp_flag`,
    the flag that would choose it (the user typed none); one for a parallel size other than the replica's chips
    (more: vLLM cannot start on them; fewer: chips the replica holds sit idle)."""
    one = replicas.replica_plan_request(request, share)
    try:
        result = planner.plan_model(one, calibration_dir=measured_boots_dir())
    except ConfigError as exc:
        if one is request or "tensor_parallel_size" not in str(exc):
            raise
        chips = planner.rules.accelerator(request.chip or "").chips
        raise ConfigError(
            f"{exc}; tensor_parallel_size {share} is each replica's share of {request.chip}'s {chips} chips over "
            f"--replicas {replicas_n}: give a --replicas that leaves each a share the model divides, or {tp_flag}"
        ) from None
    devices = replicas.replica_devices(request.chip, share)
    if result.devices != devices:  # the replica sees `share` chips (its pins, a pod's request); vLLM would use these
        raise ConfigError(
            f"tensor-parallel-size x pipeline-parallel-size is {result.devices}, but each replica gets {devices} "
            f"chip(s) ({request.chip} over --replicas {replicas_n}): leave out {tp_flag}, or make the product "
            f"{devices}"
        )
    result.warnings = [w for w in result.warnings if w.code != SLICE_CHIPS]  # the rest of the slice: other replicas
    return result


def _replica_plan(request: PlanRequest, kind: str) -> Plan:
    """One replica's plan, sized for its chip share, with every command `up --replicas N` runs
    (engines.replicas.replica_launch: the source `up --dry-run` prints too)."""
    extra: dict[str, object] = {}
    if kind == "embedded":
        result = _embedded_plan(request)
        extra["kv_cache_space_gib"] = (request.kv_cache_memory_bytes or 0) // GIB or 2
    else:
        share = replicas.replica_share(request.chip, kind, request.replicas, len(replicas.split_hosts(request.host)))
        result = plan_replica(request, share, request.replicas)
    launch, _ = replicas.replica_launch(result, kind, request, request, **extra)
    result.serve_command = launch.replicas[0].command
    result.replicas, result.replica_commands = request.replicas, launch.commands
    return result


def _embedded_plan(request: PlanRequest) -> Plan:
    """The embedded engine's own plan and command (startup.embedded_launch). Raises ConfigError unless
    `request.model` names the bundled model on chip 'cpu' under vllm-cpu rules with a whole-GiB KV pool."""
    bundled = {embedded.CATALOG_MODEL.lower(), model_store.MODEL_SLUG, model_store.SERVED_NAME.lower()}
    if request.model.lower() not in bundled and Path(request.model).name != model_store.MODEL_SLUG:
        raise ConfigError(f"--launch embedded serves the bundled {embedded.CATALOG_MODEL}, not {request.model!r}")
    kv_bytes = request.kv_cache_memory_bytes
    if request.chip != "cpu" or request.engine not in (None, "vllm-cpu") or (kv_bytes or 0) % GIB:
        raise ConfigError("--launch embedded runs on --chip cpu under vllm-cpu rules, with a whole-GiB KV pool")
    kv_gib = kv_bytes // GIB if kv_bytes else embedded.DEFAULT_KV_CACHE_SPACE_GIB
    max_len = request.max_model_len or embedded.DEFAULT_MAX_MODEL_LEN
    the_plan, _ = startup.embedded_launch(request.port, kv_gib, max_len)
    return the_plan


def measured_boots_dir() -> Path:
    """Where measured boots are kept (planner.calibration): $ONECHIP_HOME/measured-boots, formerly
    $ONECHIP_HOME/calibration (one letter from the simulator's store; moved over on first use)."""
    return home_store("measured-boots", formerly="calibration")


def remember_boot(plan: Plan, cross: CrossCheck) -> str | None:
    """Store what a real boot of `plan` measured (its logged KV token line), so that later plans of the same
    deployment use it (planner.calibration). Only vLLM GPU plans with a token line learn. Nothing is stored from a
    boot that failed (crosscheck flag 'boot-failed': its token line may precede the failure), from the log of another
    deployment (flag 'other-deployment': another model, size or card, by its total memory per GPU), from a token line
    whose pool is more than the memory the plan requests (calibration.measure), nor for a plan whose pool
    --kv-cache-memory fixed: vLLM skips memory profiling then ('reserved ... memory for KV Cache as specified by
    kv_cache_memory_bytes config and skipped memory profiling', vllm/v1/worker/gpu_worker.py), and the deployment key,
    which has no pool in it, would hand the requested memory less the weights and that pool to every later plan as
    its overhead. The date is today's (UTC).

    Returns None when the boot was stored or the plan does not learn, else one line saying why it was not stored
    (a home it cannot write included)."""
    if plan.deployment_key is None or plan.memory_budget is None or cross.reported_kv_tokens is None:
        return None
    why = _not_learned(plan, cross)
    if why is not None:
        return f"not stored as this deployment's measured boot: {why}"
    today = datetime.now(UTC).date().isoformat()
    version = cross.engine_version or plan.engine_version
    measured = calibration.measure(plan, cross.reported_kv_tokens, plan.deployment_key, today, version)
    if measured is None:
        return (
            "not stored as this deployment's measured boot: its KV token line holds more than the memory the plan "
            "requests per GPU (no boot of this deployment logs it)"
        )
    directory = measured_boots_dir()
    path = directory / calibration.file_name(plan.deployment_key)
    if (newer := stored_by_newer(path)) is not None:  # another onechip's to read: written over, its data was lost
        return f"not stored as this deployment's measured boot: {path} {written_by_newer(newer)}, kept as it is"
    try:  # a home it cannot write (a read-only mount, a full disk) costs the memory of this boot, not the plan
        directory.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, measured.model_dump_json(indent=2))
    except OSError as exc:
        return f"not stored as this deployment's measured boot: cannot write {os_error_line(exc)}"
    return None


def _not_learned(plan: Plan, cross: CrossCheck) -> str | None:
    """Why a boot with a token line teaches `plan`'s deployment nothing (remember_boot), or None."""
    if "boot-failed" in cross.flags:
        return "the engine did not start"
    if (cross.reported_kv_tokens or 0) < 1:
        # vLLM starts with no less than one request's blocks: 'No available memory for the cache blocks' (an empty
        # pool) or 'To serve at least one request with the models's max seq len' (vllm/v1/core/kv_cache_utils.py
        # check_enough_kv_cache_memory); a 0 stored made every later plan of the deployment 'does not fit'
        return "its KV token line holds no token, which no boot that started logs"
    if "other-deployment" in cross.flags:
        return "the log is of another deployment (see the cross-check)"
    if plan.serve.kv_cache_memory_bytes is not None:
        return "--kv-cache-memory fixed the pool, so the boot measured no profiling overhead"
    return None
