"""A bitsandbytes 4-bit checkpoint with double quantization as vLLM holds it (planfuzz67b).

bitsandbytes saves each 4-bit weight as the packed uint8 `W.weight` ([n / 2, 1]) and its quant state beside it:
`.absmax` (uint8 when double-quantized: one per 64-element block), `.nested_absmax` and `.nested_quant_map` (float32,
the absmax's own quantization), `.quant_map` (float32 [16]) and `.quant_state.bitsandbytes__nf4` (the packed state's
metadata, uint8). vLLM's BitsAndBytesModelLoader keeps that metadata on the CPU ('bitsandbytes library requires
weight.quant_state.bitsandbytes__* in CPU') and dequantizes the double-quantized absmax at load, 'at the cost of
increased memory usage': _dequantize_dq sets quant_state.absmax to the float32 dequantize_blockwise(absmax, state2)
and drops state2 (vllm/model_executor/model_loader/bitsandbytes_loader.py, 0.25.0 and 0.27.1 sdists; the last
releases with the method in-tree, catalog/vllm_registries.json). The packed weight keeps its uint8 layout
(BitsAndBytesLinearMethod create_weights: torch.empty(total_size // quant_ratio, 1, dtype=torch.uint8)).
So each quantized weight of n elements holds n / 2 + 4 n / 64 + 64 B, not its files' n / 2 + n / 64 + nested state.
Llama-3-8B-Instruct (6,979,321,856 quantized elements): 327,155,712 B more than the float32 absmax's uint8 files hold.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from factories import BOOTLOGS, header_checkpoint
from onechip.planner import plan_model

BNB = json.loads(
    (BOOTLOGS / "configs" / "NousResearch--Meta-Llama-3-8B-Instruct.bnb-4bit.json").read_text(encoding="utf-8")
)
HIDDEN, INTER, VOCAB, LAYERS = 4096, 14336, 128256, 32
LINEAR = [("self_attn.q_proj", HIDDEN, HIDDEN), ("self_attn.k_proj", 1024, HIDDEN), ("self_attn.v_proj", 1024, HIDDEN),
          ("self_attn.o_proj", HIDDEN, HIDDEN), ("mlp.gate_proj", INTER, HIDDEN), ("mlp.up_proj", INTER, HIDDEN),
          ("mlp.down_proj", HIDDEN, INTER)]  # fmt: skip
STATE_BYTES = 120  # the packed JSON of one quant state (its size varies a little; nothing of it is on the GPU)


def _shapes() -> dict[str, list[int] | tuple[str, list[int]]]:
    shapes: dict[str, list[int] | tuple[str, list[int]]] = {
        "model.embed_tokens.weight": [VOCAB, HIDDEN], "lm_head.weight": [VOCAB, HIDDEN], "model.norm.weight": [HIDDEN]
    }  # fmt: skip
    for i in range(LAYERS):
        for module, out, inp in LINEAR:
            w, n = f"model.layers.{i}.{module}.weight", out * inp
            shapes |= {w: ("U8", [n // 2, 1]), f"{w}.absmax": ("U8", [n // 64]),
                       f"{w}.nested_absmax": ("F32", [math.ceil(n / 64 / 256)]),
                       f"{w}.nested_quant_map": ("F32", [256]), f"{w}.quant_map": ("F32", [16]),
                       f"{w}.quant_state.bitsandbytes__nf4": ("U8", [STATE_BYTES])}  # fmt: skip
        for norm in ("input_layernorm", "post_attention_layernorm"):
            shapes[f"model.layers.{i}.{norm}.weight"] = [HIDDEN]
    return shapes


QUANTIZED = LAYERS * sum(out * inp for _, out, inp in LINEAR)
BF16 = 2 * (2 * VOCAB * HIDDEN + HIDDEN + LAYERS * 2 * HIDDEN)


def test_double_quantized_absmax_is_held_in_float32(tmp_path: Path) -> None:
    plan = plan_model(str(header_checkpoint(tmp_path / "m", BNB, _shapes())), "l4", "vllm-gpu",
                      engine_version="0.27.1", max_model_len=8192)  # fmt: skip
    assert QUANTIZED == 6_979_321_856
    # packed weights, float32 absmax, quant_map; the nested state and the CPU-side metadata are not resident
    assert plan.weights_bytes == BF16 + QUANTIZED // 2 + 4 * QUANTIZED // 64 + LAYERS * len(LINEAR) * 16 * 4
    # 32 layers x 8 KV heads x 128 x (K, V) x 2 B
    assert plan.kv_bytes_per_token == 131_072
