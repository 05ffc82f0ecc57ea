"""vllm-router (PyPI `vllm-router` 0.1.17, a Rust binary in a wheel) in front of N replicas: its command as
data, and the router as a managed local process.

    router_program()                       the `vllm-router` script of this environment (or PATH)
    router_command(urls, policy, port, metrics_port, bind_host) -> RouterCommand
    RouterEngine(command, log_path)        the router as a LocalVllmEngine (own process group, /health)

Flags and defaults are vllm-router 0.1.17's (`vllm-router --help`; vllm_router/router_args.py in the wheel).
Its `--api-key` is the key the router sends to the workers, not one it checks: measured here, a client with
a wrong `Authorization: Bearer` got HTTP 200 through a router started with `--api-key`. So the router has no
client authentication and onechip binds it to the loopback only (router_command refuses anything else).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from onechip.engines import port_claims
from onechip.engines.local import LocalVllmEngine
from onechip.errors import ConfigError, MissingDependencyError
from onechip.procs import start_ticks
from onechip.schemas.replicas import RouterCommand, RouterFlag, RouterPolicy
from onechip.vllm.flags import shell_join

PROGRAM = "vllm-router"
DEFAULT_POLICY: RouterPolicy = "cache_aware"  # agent sessions share a growing prefix (DESIGN.md, Scaling)
DEFAULT_PORT = 30000  # vllm-router's own default --port
DEFAULT_METRICS_PORT = 29000  # vllm-router's own default --prometheus-port
METRICS_HOST = "127.0.0.1"  # where onechip has the router's metrics listen (--prometheus-host), and claims their port
HEALTH_CHECK_INTERVAL_S = 5  # vllm-router's default is 60 s: a dead replica would stay "healthy" for a minute
# Failed health checks in a row before the router marks a worker unhealthy and stops sending to it (vllm-router 0.1.17
# router_args.py, health_failure_threshold; measured: a SIGKILLed replica stayed in rotation ~15 s, its requests each
# retried on another, then vllm_router_worker_health{worker=URL} went 0 and its processed count stopped)
HEALTH_FAILURE_THRESHOLD = 3
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# how to another metrics port: `up --replicas N` moves it off one another `up` claims (replicas.claim_metrics_port)
METRICS_AGAIN = "`onechip up --replicas N` again (it moves the router's metrics off a claimed port)"


def router_program() -> str:
    """The `vllm-router` script beside this interpreter (the venv onechip runs in), else on PATH, else the
    bare name (start() then says it is missing). Resolved the same way by `plan` and `up`."""
    beside = Path(sys.executable).parent / PROGRAM
    if beside.is_file():
        return str(beside)
    return shutil.which(PROGRAM) or PROGRAM


def router_command(
    worker_urls: list[str],
    policy: RouterPolicy = DEFAULT_POLICY,
    port: int = DEFAULT_PORT,
    metrics_port: int = DEFAULT_METRICS_PORT,
    bind_host: str = "127.0.0.1",
) -> RouterCommand:
    """The vllm-router command routing to `worker_urls` by `policy`. Raises ConfigError for no workers or a
    bind address beyond the loopback (the router checks no client key: see the module docstring)."""
    if not worker_urls:
        raise ConfigError("the router needs at least one replica URL")
    if bind_host not in LOOPBACK:
        raise ConfigError(
            f"--router-host {bind_host}: vllm-router 0.1.17 checks no client key (its `--api-key` is sent to the "
            "workers), so onechip binds it to 127.0.0.1 only; put an authenticating proxy in front to expose it"
        )
    flags = [
        RouterFlag(flag="--host", values=[bind_host], reason="loopback only: the router authenticates no client"),
        RouterFlag(flag="--port", values=[str(port)], reason="the URL every other onechip command uses"),
        RouterFlag(flag="--worker-urls", values=list(worker_urls), reason="the replicas `up` started"),
        RouterFlag(flag="--policy", values=[policy], reason="--router-policy (default cache_aware: agent prefixes)"),
        RouterFlag(flag="--prometheus-host", values=[METRICS_HOST], reason="its /metrics, read by status and bench"),
        RouterFlag(flag="--prometheus-port", values=[str(metrics_port)], reason="requests routed to each replica"),
        RouterFlag(
            flag="--health-check-interval-secs", values=[str(HEALTH_CHECK_INTERVAL_S)],
            reason="the default 60 s keeps a dead replica in rotation for a minute",
        ),
    ]  # fmt: skip
    argv = [router_program()]
    for item in flags:
        argv += [item.flag, *item.values]
    return RouterCommand(
        policy=policy, bind_host=bind_host, port=port, metrics_port=metrics_port, worker_urls=list(worker_urls),
        flags=flags, argv=argv, shell=shell_join(argv),
    )  # fmt: skip


class RouterEngine(LocalVllmEngine):
    """The router as a managed local process: its own process group (down stops it), healthy when its
    /health answers 200 (it serves only once every worker is healthy: start it after the replicas)."""

    kind = "vllm-router"
    rpc_sockets = False  # a Rust binary: no zmq IPC sockets (local.rpc_dir)

    def __init__(self, command: RouterCommand, log_path: Path, served_name: str):
        super().__init__(
            model_path=Path(PROGRAM), served_name=served_name, log_path=log_path, argv=command.argv,
            port=command.port, tie_to_parent=False,
        )  # fmt: skip
        self.router = command

    def start(self) -> None:
        """Launch the router; its port's claim and its metrics port's are handed to its pid, as an engine's port claim
        is (port_claims.claim replaces this process's): left the `up`'s, the metrics claim outlived `down` in a
        long-lived MCP server. The metrics port is claimed for this process before the launch (it is already where
        replicas.claim_metrics_port chose it), so no other `up` can claim it between the launch and the hand-over.
        Raises MissingDependencyError when vllm-router is not installed, PortInUseError for a taken port or a metrics
        port another live `up` claims (its router will bind it: this one is not launched)."""
        require(self.router)
        me, port = os.getpid(), self.router.metrics_port
        port_claims.claim(METRICS_HOST, port, me, start_ticks(me), flag=METRICS_AGAIN, what="the router's metrics port")
        try:
            super().start()
        except BaseException:
            port_claims.release(METRICS_HOST, port, me)
            raise
        assert self.pid is not None
        port_claims.claim(METRICS_HOST, port, self.pid, self._pid_started)  # replaces this process's: never refused

    def stop(self) -> None:
        """Stop the router (LocalVllmEngine.stop) and release its metrics port's claim. Idempotent."""
        super().stop()
        if self.pid is not None:
            port_claims.release(METRICS_HOST, self.router.metrics_port, self.pid)


def require(command: RouterCommand) -> None:
    """Raises MissingDependencyError when `command`'s vllm-router is not installed: `up --replicas N` asks
    before it boots any replica (a boot takes minutes; without a router they serve nothing)."""
    program = command.argv[0]
    if not (Path(program).is_file() or shutil.which(program)):
        raise MissingDependencyError("the router needs vllm-router: pip install 'vllm-router==0.1.17'")
