"""The served dtype on a GPU without bfloat16, and an engine that cannot run on the chip.

A Tesla T4 (compute capability 7.5; accelerators.json native_formats without bfloat16): vLLM's CUDA platform
lists only float16 and float32 there (vllm/platforms/cuda.py supported_dtypes), so --dtype auto serves a
bfloat16 checkpoint in float16 (float32 for the model types _FLOAT16_NOT_SUPPORTED_MODELS names), and an
explicit bfloat16 is refused at boot ('Bfloat16 is only supported on GPUs with compute capability of at
least 8.0'). The plan printed `--dtype bfloat16` for the T4 before: a command that does not start.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"


def test_t4_serves_a_bfloat16_checkpoint_in_float16(run) -> None:
    assert plan_model("google/gemma-4-E2B-it", "t4", max_model_len=16384).dtype == "float16"
    code, out, err = run("plan", "google/gemma-4-E2B-it", "--chip", "t4", "--max-model-len", "16384", "--json")
    assert code == 0, err
    argv = json.loads(out)["serve_command"]["argv"]
    assert argv[argv.index("--dtype") + 1] == "float16"


def test_t4_refuses_an_explicit_bfloat16_as_vllm_does() -> None:
    with pytest.raises(ConfigError, match="compute capability of at least 8.0.*--dtype float16"):
        plan_model("google/gemma-4-E2B-it", "t4", dtype="bfloat16", max_model_len=16384)


def test_t4_gemma3_falls_back_to_float32_not_float16(tmp_path: Path) -> None:
    """vLLM refuses float16 for Gemma 3 (numerical instability), so its 'auto' on a T4 is float32."""
    config = json.loads((CONFIGS / "google--gemma-3-1b-it.json").read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "g3", config, 2 * 10**9)
    assert plan_model(str(path), "t4", max_model_len=4096).dtype == "float32"


def test_chips_with_bfloat16_keep_it() -> None:
    for chip in ("l4", "a100-80gb", "h100"):
        assert plan_model("google/gemma-4-E2B-it", chip, max_model_len=16384).dtype == "bfloat16"


@pytest.mark.parametrize(("chip", "engine"), [("h100", "vllm-tpu"), ("v5e-1", "vllm-gpu"), ("l4", "vllm-cpu")])
def test_an_engine_of_another_kind_of_chip_is_refused(chip: str, engine: str) -> None:
    """`plan --chip h100 --engine vllm-tpu` planned TPU pages on an H100 (and `--chip v5e-1 --engine
    vllm-gpu` printed `docker run --gpus all` for a TPU VM) with the verdict 'fits'."""
    with pytest.raises(ConfigError, match=f"engine {engine} does not run on {chip}"):
        plan_model("google/gemma-4-E2B-it", chip, engine, max_model_len=8192)


def test_the_kv_range_says_it_counts_tokens_as_the_log_does(run) -> None:
    """The range line printed tokens in the log's units under a headline in the plan's (48,272 tokens, range
    21,770 - 347,552 on a T4), with nothing saying which."""
    code, out, err = run("plan", "google/gemma-4-E2B-it", "--chip", "l4", "--max-model-len", "16384")
    assert code == 0, err
    text = " ".join(out.split())
    assert "(logged as " in text and " tokens as logged; dominant uncertainty: " in text


def test_enforce_eager_speaks_of_cuda_graphs_on_gpus_only() -> None:
    """On a TPU the flag's reason read 'no CUDA graphs: the plan reserves none'."""

    def reason(chip: str) -> str:
        plan = plan_model("google/gemma-4-E2B-it", chip, max_model_len=8192, enforce_eager=True)
        assert plan.serve.enforce_eager is not None
        return plan.serve.enforce_eager.reason

    assert "CUDA graphs" in reason("h100")
    assert "CUDA" not in reason("v5e-1")
