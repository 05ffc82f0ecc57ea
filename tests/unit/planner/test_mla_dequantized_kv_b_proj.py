"""The dequantized copy of a quantized kv_b_proj that vLLM's MLA attention keeps beside it (engines.json
mla_dequantized_kv_b_proj; planner.weights.mla_dequantized_kv_b_proj_bytes).

MLA's process_weights_after_loading (v1/attention/backends/mla/common.py of the 0.8.0 - 0.12.0 sdists,
model_executor/layers/attention/mla_attention.py of 0.19.0 - 0.34.0) runs inside load_model, and so inside the
DeviceMemoryProfiler that prints 'Model loading took': it splits get_and_maybe_dequant_weights(kv_b_proj), viewed as
[kv_lora_rank, heads, qk_nope_head_dim + v_head_dim], into W_UK_T and W_UV and keeps both. An unquantized kv_b_proj
comes back as the parameter itself (views: no memory); a quantized one as a new tensor in the model dtype."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from factories import corpus_entry
from onechip.planner.core import plan_model
from onechip.planner.rules import engine_rules
from onechip.planner.weights import Tensor, kv_b_proj_quantized, mla_dequantized_kv_b_proj_bytes

ROOT = Path(__file__).resolve().parents[3]
CONFIG = json.loads(
    (ROOT / "tests" / "fixtures" / "bootlogs" / "configs" / "deepseek-ai--DeepSeek-V2-Lite-Chat.json").read_text(
        encoding="utf-8"
    )
)
# 27 layers x kv_lora_rank 512 x 16 heads x (qk_nope_head_dim 128 + v_head_dim 128) x 2 B (bf16) = 108 MiB
COPIES = 27 * 512 * 16 * 256 * 2


def test_the_copy_is_kv_lora_rank_by_heads_by_nope_and_v() -> None:
    assert COPIES == 113_246_208
    assert mla_dequantized_kv_b_proj_bytes(CONFIG, layers=27, dtype_bytes=2) == COPIES
    assert mla_dequantized_kv_b_proj_bytes({"num_attention_heads": 32}, layers=32, dtype_bytes=2) == 0  # not MLA


def test_only_a_quantized_kv_b_proj_is_copied() -> None:
    bf16 = [Tensor("model.layers.0.self_attn.kv_b_proj.weight", (4096, 512), "BF16")]
    assert not kv_b_proj_quantized(bf16)
    fp8 = [Tensor("model.layers.0.self_attn.kv_b_proj.weight", (4096, 512), "F8_E4M3")]
    assert kv_b_proj_quantized(fp8)
    gptq = [Tensor("model.layers.0.self_attn.kv_b_proj.qweight", (64, 4096), "I32")]
    assert kv_b_proj_quantized(gptq)
    assert not kv_b_proj_quantized([Tensor("model.all_weights", (8,), "BF16")])  # no kv_b_proj named


def test_the_releases_read() -> None:
    rules = engine_rules("vllm-gpu")
    assert rules.keeps_mla_dequantized_kv_b_proj("0.8.0") and rules.keeps_mla_dequantized_kv_b_proj("0.34.0")
    assert not rules.keeps_mla_dequantized_kv_b_proj("0.7.3")  # matrix absorption there instead, not modelled


def _checkpoint(directory: Path, *, kv_b_fp8: bool) -> int:
    """A DeepSeek-V2-Lite FP8 checkpoint's headers (block-quantized 128 x 128 linear layers with weight_scale_inv,
    as DeepSeek-V3's): the layout of benchmarks/planner_accuracy.py deepseek_v2_layout, with kv_b_proj FP8 or kept
    BF16. Returns its bytes."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    header, offset = {}, 0

    def put(name: str, shape: list[int], dtype: str, width: int) -> None:
        nonlocal offset
        size = width * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size

    for name, shape in planner_accuracy.deepseek_v2_layout(CONFIG).items():
        linear = len(shape) == 2 and "embed_tokens" not in name and "lm_head" not in name and ".gate." not in name
        if linear and (kv_b_fp8 or "kv_b_proj" not in name):
            put(name, shape, "F8_E4M3", 1)
            put(name + "_scale_inv", [-(-shape[0] // 128), -(-shape[1] // 128)], "F32", 4)
        else:
            put(name, shape, "BF16", 2)
    config = dict(CONFIG, quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic",
                                               "fmt": "e4m3", "weight_block_size": [128, 128]})  # fmt: skip
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw)
    return offset


def test_an_fp8_checkpoint_loads_the_copies(tmp_path: Path) -> None:
    fp8 = tmp_path / "fp8"
    bf16_kv_b = tmp_path / "bf16-kv-b"
    fp8_bytes = _checkpoint(fp8, kv_b_fp8=True)
    bf16_bytes = _checkpoint(bf16_kv_b, kv_b_fp8=False)
    # per layer kv_b_proj 4,096 x 512: 2 MiB of FP8 and 32 x 4 scales of 4 B against 4 MiB of BF16
    assert bf16_bytes - fp8_bytes == 27 * (4096 * 512 - 32 * 4 * 4)
    for tp in (1, 2):
        plans = {
            path.name: plan_model(
                str(path), "h100", engine_version="0.19.0", max_model_len=8192, utilization=0.95,
                tensor_parallel_size=tp,
            )
            for path in (fp8, bf16_kv_b)
        }  # fmt: skip
        weights = {name: plan.memory_budget.weights_bytes for name, plan in plans.items()}
        # the FP8 kv_b_proj's bytes less the BF16 one's, over the ranks, and each rank's heads' dequantized copy
        assert weights["fp8"] - weights["bf16-kv-b"] == (fp8_bytes - bf16_bytes) // tp + COPIES // tp


def test_the_v2_lite_row_is_planned_on_its_layout(tmp_path: Path) -> None:
    # benchmarks/planner_accuracy.py plans h100-deepseek-v2-lite-mla-v0190 on the DeepSeek-V2 layout, which adds up to
    # the published 31,412,968,448 B, so the planner sees vLLM's parameters as a real checkpoint shows them: the
    # caching allocator's tails (planner.weights.allocator_tail_bytes) of the 26 shared-expert down_proj of
    # 2,048 x 2,816 x 2 B = 11 MiB (+1 MiB each) and layer 0's gate_up_proj of 2 x 10,944 x 2,048 x 2 B = 85.5 MiB
    # (+0.5); bf16, so no dequantized kv_b_proj copy (W_UK_T and W_UV are views of the parameter); and the MLA
    # attention's RoPE cache, 163,840 positions x qk_rope_head_dim 64 x 2 B (gpu_memory.deepseek_rope_cache_bytes:
    # the held config has no rope_scaling; the published one's yarn 4,096 x 40 rows are as many, bf16 when compiled)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    entry = corpus_entry("h100-deepseek-v2-lite-mla-v0190")
    model, how = planner_accuracy.model_of(entry, "vllm-gpu", tmp_path, True)
    assert how == "checkpoint bytes (DeepSeek-V2 layout)"
    fields = planner_accuracy.request_of(entry, "h100", "vllm-gpu", "0.19.0")
    plan = planner_accuracy.plan_fields(model, fields)
    assert plan.memory_budget.weights_bytes == 31_412_968_448 + 26 * (1 << 20) + (1 << 19) + 163_840 * 64 * 2
