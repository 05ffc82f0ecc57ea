"""Kimi-Linear (planner.recurrent KDA_FAMILIES): Kimi Delta Attention layers hold three conv states in the model
dtype and a float32 recurrent state, its full layers are MLA (one latent of kv_lora_rank + qk_rope_head_dim per
token), and the MLA block is raised to hold one state page.

Expected figures are the engine's arithmetic as read in the vllm sdists 0.20.0, 0.27.1 and 0.34.0:
vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator.kda_state_shape (0.20.0: three convs of
num_heads x head_dim / TP x (kernel - 1); 0.27.1, 0.34.0: one of 3 x that; the recurrent state num_heads / TP x head_dim
x head_dim), MambaStateDtypeCalculator.kda_state_dtype (convs in the model dtype, the recurrent state float32),
vllm/model_executor/models/kimi_linear.py (0.20.0) and vllm/models/kimi_k3/nvidia/model.py (0.27.1, 0.34.0)
KimiLinearForCausalLM (is_kda_layer: layer i + 1 in linear_attn_config.kda_layers, else MLA), and
vllm/platforms/interface.py _align_hybrid_block_size (the MLA page of one token; 0.27.1 and 0.34.0 align an MLA
hybrid's block to at least 128).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import KIMI_LINEAR_FULL_LAYERS, kimi_linear_config, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.recurrent import layer_roles, state_bytes, state_elements
from onechip.schemas.common import GIB


# kda_state_shape, TP 1: convs 3 x (32 x 128) x (4 - 1) = 36,864 elements in bf16 (73,728 B), recurrent 32 x 128 x
# 128 = 524,288 in float32 (2,097,152 B): 2,170,880 B per KDA layer per request; TP 2 halves both: 1,085,440 B.
# --mamba-ssm-cache-dtype is not read for it (kda_state_dtype takes mamba_cache_dtype only, 0.20.0 and 0.27.1).
def test_kda_state_is_three_convs_in_the_model_dtype_and_a_float32_recurrent_state() -> None:
    cfg = kimi_linear_config()
    assert state_elements(cfg, "kimi_linear", 1) == (3 * 32 * 128 * 3, 32 * 128 * 128)
    arch = cfg["architectures"]
    assert state_bytes(cfg, "kimi_linear", arch, model_dtype_bytes=2, tensor_parallel_size=1) == 2_170_880
    assert state_bytes(cfg, "kimi_linear", arch, model_dtype_bytes=2, tensor_parallel_size=2,
                       mamba_ssm_cache_dtype="bfloat16") == 1_085_440  # fmt: skip
    roles = layer_roles(cfg, "kimi_linear")
    assert [i + 1 for i, (attention, _) in enumerate(roles) if attention] == KIMI_LINEAR_FULL_LAYERS
    assert sum(state for _, state in roles) == 20 and not any(a and s for a, s in roles)


def test_kda_config_errors_are_one_line() -> None:
    cfg = kimi_linear_config()
    with pytest.raises(ConfigError, match="linear_attn_config num_heads 32 is not divisible by TP 3"):
        state_elements(cfg, "kimi_linear", 3)
    for bad in ({"kda_layers": [0, 1]}, {"kda_layers": [28]}, {"kda_layers": None}):
        with pytest.raises(ConfigError, match="'linear_attn_config.kda_layers' must list 1-based") as caught:
            layer_roles({**cfg, "linear_attn_config": {**cfg["linear_attn_config"], **bad}}, "kimi_linear")
        assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="'linear_attn_config' is missing"):
        state_elements({k: v for k, v in cfg.items() if k != "linear_attn_config"}, "kimi_linear", 1)


# H200, TP 1, bf16: MLA 576 x 2 = 1,152 B/token. 0.20.0: alignment 16, block 16 x cdiv(2,170,880, 16 x 1,152) =
# 16 x 118 = 1,888, page 1,888 x 1,152 = 2,174,976 B; 0.27.1 and 0.34.0: alignment max(16, 128) = 128, block 128 x
# cdiv(2,170,880, 128 x 1,152) = 128 x 15 = 1,920, page 2,211,840 B. 7 MLA + 20 KDA layers: group size 7 (20 >= 1.5
# x 7), 1 + 3 groups; 20 GiB // page // 7 = 1,410 (0.20.0) and 1,387 blocks. A 131,072-token request: 0.20.0
# cdiv(131,072, 1,888) = 70 MLA pages + 3 state groups x 2 pages ('align', prefix caching on as `up` runs it) = 76;
# 0.27.1 69 + 6 = 75; without prefix caching ('none', 1 page each) 69 + 3 = 72 (0.27.1, 0.34.0). 0.34.0 with prefix
# caching ('align', MambaModelConfig): Kimi-Linear's KDA layer (kimi_gdn_linear_attn.py KimiGatedDeltaNetAttention,
# Triton prefill only) declares no checkpoint alignment and no checkpoint page, so 69 + 3 x 2 = 75 as 0.27.1.
@pytest.mark.parametrize(
    ("version", "caching", "block", "blocks", "pages"),
    [("0.20.0", True, 1888, 1410, 76), ("0.27.1", True, 1920, 1387, 75), ("0.27.1", False, 1920, 1387, 72),
     ("0.34.0", True, 1920, 1387, 75), ("0.34.0", False, 1920, 1387, 72)],
)  # fmt: skip
def test_kimi_linear_plan_raises_the_mla_block_to_one_state_page(
    tmp_path: Path, version: str, caching: bool, block: int, blocks: int, pages: int
) -> None:
    path = sized_checkpoint(tmp_path / "m", kimi_linear_config(), 92 * GIB)
    plan = plan_model(
        str(path), "h200", "vllm-gpu", engine_version=version, max_model_len=131072, max_num_seqs=8,
        kv_cache_memory_bytes=20 * GIB, multimodal=False, enable_prefix_caching=caching,
    )  # fmt: skip
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == block
    assert plan.memory_budget.kv_groups == 4 and plan.memory_budget.block_bytes == block * 1152 * 7
    assert plan.max_concurrency == pytest.approx(blocks / pages)
    if version == "0.20.0":  # the 'groups' token line: 1,410 // 4 x 1,888
        assert plan.kv_tokens_logged == 1410 // 4 * 1888


def test_kimi_linear_on_a_release_whose_rule_was_not_read_is_refused_in_one_line(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", kimi_linear_config(), 92 * GIB)
    for version in ("0.22.0", "0.31.0", "0.33.0"):  # no --engine-version plans 0.32.0, the release `up` runs
        with pytest.raises(
            ConfigError, match="Kimi-Linear .KDA. is planned for vLLM 0.20.0, 0.27.1, 0.32.0, 0.34.0 only"
        ) as e:
            plan_model(str(path), "h200", "vllm-gpu", engine_version=version, max_model_len=8192, multimodal=False)
        assert "\n" not in str(e.value)


# A kimi_linear config with use_full_rank_gate builds Kimi-K3's KDA layer (vllm/models/kimi_k3/nvidia/model.py,
# 0.34.0), whose FlashKDA prefill adds checkpoint pages not modelled: 'align' mode stays refused in one line.
def test_kda_with_a_full_rank_gate_in_align_mode_is_refused_in_one_line(tmp_path: Path) -> None:
    config = kimi_linear_config()
    config["linear_attn_config"] = {**config["linear_attn_config"], "use_full_rank_gate": True}
    path = sized_checkpoint(tmp_path / "m", config, 92 * GIB)
    with pytest.raises(ConfigError, match="use_full_rank_gate .*FlashKDA checkpoint pages are not modelled") as e:
        plan_model(str(path), "h200", "vllm-gpu", engine_version="0.34.0", max_model_len=8192, multimodal=False)
    assert "\n" not in str(e.value)
