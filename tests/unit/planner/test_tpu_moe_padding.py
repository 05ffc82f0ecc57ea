"""tpu-inference's GMM TP MoE backend pads unquantized experts' gate and up projections on load
(planner.gpu_memory.tpu_moe_w13_padding_bytes).

Source: vllm-project/tpu-inference@b8692ff01fa191343836996c27a39dc95f008b88
tpu_inference/layers/common/process_weights/moe_weights.py: process_moe_weights, case MoEBackend.GMM_TP, calls
get_w13_padding_config(intermediate_size, w13_reorder_size, align=128), w13_reorder_size the mesh's MLP_TENSOR size
(TP): w1 and w3 become [experts, hidden, round_up(intermediate / TP, 128) x TP]; w2 is not padded. The 0.29.1rc1
logs print it from the same lines (moe_weights.py:254): 'w13_weight_w1 shape after padding: (128, 2816, 1024)' at
TP 4 (tests/fixtures/bootlogs/tpu-v6e4-gemma4-26b-a4b-tp4-len2048-v0291.log) and (128, 2816, 768) at TP 1
(tpu-v6e1-gemma4-26b-a4b-q4w4a16-kvbf16-len2048-v0291.log).
"""

from __future__ import annotations

import json
from pathlib import Path

from factories import tpu_pool_rules
from onechip.planner.gpu_memory import tpu_moe_w13_padding_bytes

CONFIG = Path(__file__).parents[2] / "fixtures" / "bootlogs" / "configs" / "google--gemma-4-26B-A4B-it.json"
GIB = 1024**3


def _text() -> dict[str, object]:
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    return dict(config.get("text_config") or config)


def test_the_logged_padded_widths_give_the_bytes() -> None:
    rule, text = tpu_pool_rules()["0.29.0"], _text()  # 30 layers, 128 experts, hidden 2,816, moe_intermediate_size 704
    tp4 = tpu_moe_w13_padding_bytes(rule, text, dtype_bytes=2, tensor_parallel_size=4)
    tp1 = tpu_moe_w13_padding_bytes(rule, text, dtype_bytes=2, tensor_parallel_size=1)
    assert tp4 == 30 * 128 * 2 * 2816 * (1024 - 704) * 2  # 176 a shard -> 256, x 4 = 1,024 as logged
    assert tp1 == 30 * 128 * 2 * 2816 * (768 - 704) * 2  # 704 -> 768 as logged
    # the TP 4 bf16 log: 61.16 GiB resident over the chips for a 48.07 GiB checkpoint, 13.09 GiB more; 12.89 of it
    assert round(tp4 / GIB, 2) == 12.89


def test_older_rules_and_configs_without_experts_in_every_layer_add_nothing() -> None:
    rules, text = tpu_pool_rules(), _text()
    assert tpu_moe_w13_padding_bytes(rules["0.26.0"], text, dtype_bytes=2, tensor_parallel_size=4) == 0
    dense = {k: v for k, v in text.items() if k != "enable_moe_block"}
    assert tpu_moe_w13_padding_bytes(rules["0.29.0"], dense, dtype_bytes=2, tensor_parallel_size=4) == 0
