"""Boot logs found for issue 27 (logsc63). Each log is a real one of tests/fixtures/bootlogs (corpus.json names its
source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onechip.vllm.bootlog import read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
AOT = "rtx4090d-qwen25-vl-3b-bnb-len16384-util0786-aot-failed-v092"


def _read(name: str) -> Any:
    return read_boot_log((BOOTLOGS / f"{name}.log").read_text(encoding="utf-8"), "vllm", "m")


def test_a_version_a_sentence_ends_is_read_without_its_full_stop() -> None:
    # Unsloth's banner 'Transformers: 4.55.4. vLLM: 0.9.2.' comes first: the full stop ends the sentence, not the
    # version (PEP 440: a version ends in an alphanumeric), and the engine's own line says 'Initializing a V1 LLM
    # engine (v0.9.2)'
    assert _read(AOT).engine_version == "0.9.2"


def test_full_cuda_graph_on_flash_attention_2_is_named() -> None:
    # 'ValueError: AoT scheduling is required for full cuda graph.' (the pool sized, 392,576 tokens, then the attention
    # builder refused): vllm/v1/attention/backends/flash_attn.py of the 0.9.2 sdist raises it when
    # compilation_config.full_cuda_graph is set and get_flash_attn_version() is not 3 (vllm/attention/utils/fa_utils.py:
    # FA3 on compute capability 9.x only); Unsloth set full_cuda_graph on this RTX 4090 D (8.9). The cause was the raw
    # exception, which says nothing of the card or the flag
    cause = _read(AOT).failure_cause
    assert cause is not None
    assert cause.startswith("full CUDA graphs (compilation_config full_cuda_graph) need FlashAttention 3")
    assert "not a memory shortfall" in cause


def test_the_model_the_server_banner_names_is_read() -> None:
    # a user's ROCm run notes (gfx1100, vLLM 0.16.1.dev0) quote the banner and no 'non-default args' line:
    # 'INFO [utils.py:287]   █▄█▀ █     █     █     █  model   Qwen/Qwen3-14B'. log_version_and_model
    # (vllm/entrypoints/common/startup.py of the 0.34.0 sdist, serve/utils/api_utils.py of 0.28.0) prints args.model
    # there, or 'vLLM server version %s, serving model %s' without the logo (VLLM_DISABLE_LOG_LOGO)
    assert _read("gfx1100-qwen3-14b-len40960-v0161dev0-rocm").logged.get("model") == "Qwen/Qwen3-14B"
    plain = "INFO 01-01 00:00:00 [launcher.py:368] vLLM server version 0.34.0, serving model Qwen/Qwen3-8B\n"
    assert read_boot_log(plain, "vllm", "m").logged.get("model") == "Qwen/Qwen3-8B"
