"""Where each release's source changes the hybrid KV allocator (engines.json hybrid_rules and group_size_rules).

Expected figures come from the engine's source of the release each test names, read in the vllm packages from PyPI:
the 0.19.0 sdist and the 0.19.1 wheel (vllm/model_executor/models/config.py is the same file in both), the 0.20.0
wheel (vllm/platforms/interface.py Platform._align_hybrid_block_size, vllm/model_executor/models/config.py
NemotronHForCausalLMConfig), and vllm/v1/core/kv_cache_utils.py of the 0.9.2 - 0.32.0 packages; or from the boot
logs of the corpus (tests/fixtures/bootlogs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.core import group_size_max_ratio
from onechip.planner.geometry import kv_geometry
from onechip.planner.gpu_memory import select_rule
from onechip.planner.kv_groups import kv_layout
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB

CASCADE = "gpu94g-nemotron-cascade2-30b-nvfp4-kvfp8-len262144-v0191"


def _nemotron(tmp_path: Path, **drop_or_set: Any) -> Path:
    config = json.loads((BOOTLOGS / corpus_entry(CASCADE)["config_file"]).read_text(encoding="utf-8"))
    for key, value in drop_or_set.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return sized_checkpoint(tmp_path / "m", config, 18 * GIB)


def _block(path: Path, version: str, **kwargs: Any) -> int:
    plan = plan_model(str(path), "gpu:1024GiB", "vllm-gpu", engine_version=version, max_model_len=131072,
                      kv_cache_dtype="fp8", kv_cache_memory_bytes=40 * GIB, enable_prefix_caching=False,
                      multimodal=False, **kwargs)  # fmt: skip
    assert plan.memory_budget is not None
    return plan.memory_budget.min_block_size


# NemotronHForCausalLMConfig turns an 'auto' --mamba-ssm-cache-dtype into the config's mamba_ssm_cache_dtype, else
# 'float16' in 0.19.0 and 0.19.1 (getattr(hf_config, 'mamba_ssm_cache_dtype', 'float16')) and 'float32' from 0.20.0
# (DEFAULT_MAMBA_SSM_CACHE_DTYPE = 'float32'). The Nemotron-3-Nano geometry without that field, fp8 KV (2 heads x 128
# x 2 x 1 B = 512 B/token): float16 SSM (6,144 x 3 + 64 x 64 x 128) x 2 B = 1,085,440 B -> 16 x cdiv(1,085,440,
# 8,192) = 2,128 tokens; float32 2,134,016 B -> 4,176 (the block the corpus's 0.19.1 log prints with float32 asked).
def test_nemotron_h_default_ssm_dtype_is_float16_until_0_20(tmp_path: Path) -> None:
    rules = engine_rules("vllm-gpu").hybrid_rules
    assert [select_rule(rules, v).nemotron_h_ssm_default for v in ("0.19.0", "0.19.1", "0.20.0", "0.25.0")] == [
        "float16", "float16", "float32", "float32"]  # fmt: skip
    path = _nemotron(tmp_path, mamba_ssm_cache_dtype=None)
    assert [_block(path, v) for v in ("0.19.0", "0.19.1", "0.20.0")] == [2128, 2128, 4176]
    # the log's own case: float32 asked on 0.19.1 -> 'Setting attention block size to 4176 tokens'
    assert _block(path, "0.19.1", mamba_ssm_cache_dtype="float32") == 4176


# The alignment the attention block is rounded to: 0.19.x HybridAttentionMambaModelConfig.verify_and_update_config
# 'kernel_block_alignment_size = 16' (a --block-size below the raised block is replaced by it, not used to align);
# 0.20.0 Platform._align_hybrid_block_size 'kernel_block_alignment_size = max(min(...supported kernel block
# sizes), cache_config.block_size)'.
# The float32 state (2,134,016 B at 512 B/token) with --block-size 64: 16 x cdiv(2,134,016, 8,192) = 4,176 on 0.19,
# 64 x cdiv(2,134,016, 32,768) = 4,224 on 0.20.
def test_user_block_size_aligns_the_hybrid_block_from_0_20(tmp_path: Path) -> None:
    rules = engine_rules("vllm-gpu").hybrid_rules
    assert [select_rule(rules, v).user_block_aligns for v in ("0.18.1", "0.19.0", "0.19.1", "0.20.0")] == [
        False, False, False, True]  # fmt: skip
    path = _nemotron(tmp_path)
    assert [_block(path, v, block_size=64) for v in ("0.19.0", "0.19.1", "0.20.0")] == [4176, 4176, 4224]
    assert [_block(path, v) for v in ("0.19.0", "0.20.0")] == [4176, 4176]  # block 16: the same either way


# _get_kv_cache_groups_uniform_page_size (kv_cache_utils.py) sizes the groups of every model whose specs share one
# page size, not only hybrids: the fewest layers of a spec before 0.12.0 (read in 0.9.2, 0.10.0, 0.10.1.1, 0.10.2 -
# 0.11.2), the most when 'max_num_layers < min_num_layers * 1.25' in 0.12.0 - 0.17.1, '* 1.5' from 0.18.0.
# A sliding + full model with 8 full and 9 sliding layers (9 < 8 x 1.25): 8 per group (1 + cdiv(9, 8) = 3 groups)
# before 0.12, 9 per group (2 groups) from it; 4 full and 5 sliding (5 = 4 x 1.25): 3 groups until 0.18, 2 from it.
def test_sliding_and_full_groups_by_release() -> None:
    rules = engine_rules("vllm-gpu")
    ratios = {v: group_size_max_ratio(rules, v) for v in ("0.8.5", "0.10.1.1", "0.11.2", "0.12.0", "0.17.1", "0.18.0")}
    assert ratios == {"0.8.5": 1.0, "0.10.1.1": 1.0, "0.11.2": 1.0, "0.12.0": 1.25, "0.17.1": 1.25, "0.18.0": 1.5}
    assert group_size_max_ratio(rules, None) == 1.5
    for full, sliding, expected in (
        (8, 9, {"0.11.2": (3, 8), "0.12.0": (2, 9), "0.18.0": (2, 9)}),
        (4, 5, {"0.11.2": (3, 4), "0.12.0": (3, 4), "0.18.0": (2, 5)}),
    ):
        text = {"num_hidden_layers": full + sliding, "num_attention_heads": 8, "num_key_value_heads": 2,
                "head_dim": 128, "hidden_size": 1024, "sliding_window": 512,
                "layer_types": ["full_attention"] * full + ["sliding_attention"] * sliding}  # fmt: skip
        geometry = kv_geometry(text, kv_dtype_bytes=2)
        for version, (groups, size) in expected.items():
            layout = kv_layout(geometry, 16, 1, group_size_max_ratio=ratios[version])
            assert (len(layout.groups), layout.group_size) == (groups, size), (full, sliding, version)


# gpt-oss alternates sliding and full layers (18 + 18 in gpt-oss-120b): every release puts 18 layers in a group, so
# the 0.10.1.1 log (dennislee22/vLLM-benchmarking, 4 x A100, TP 4: 'Available KV cache memory: 45.32 GiB', 'GPU KV
# cache size: 2,640,144 tokens') is planned the same under the fewest-layers rule: 2 groups of 18.
def test_gpt_oss_groups_under_the_0_10_rule() -> None:
    text = {"num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
            "hidden_size": 2880, "sliding_window": 128,
            "layer_types": ["sliding_attention", "full_attention"] * 18}  # fmt: skip
    geometry = kv_geometry(text, kv_dtype_bytes=2)
    for ratio in (1.0, 1.25, 1.5):
        layout = kv_layout(geometry, 16, 4, group_size_max_ratio=ratio)
        assert (len(layout.groups), layout.group_size) == (2, 18)
