"""Recurrent layers named as vLLM names them (reach62): the plan called every state-only layer 'mamba', LFM2's short
convolutions too; each now carries vLLM's name for it (LayerKV.state_kind), which `plan` shows, with the arithmetic
unchanged (every one is a MambaSpec)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from test_planner_lfm2_short_conv import _lfm2

from factories import sized_checkpoint
from onechip.cli import plan_cmd
from onechip.planner import plan_model, recurrent
from onechip.schemas.common import GIB


# vLLM 0.34.0 names a recurrent layer by its MambaBase layer's mamba_type (MambaAttentionBackendEnum, the backend its
# MambaSpec carries): LFM2's ShortConv returns SHORT_CONV (vllm/model_executor/layers/mamba/short_conv.py), Jamba's
# MambaMixer MAMBA1 (mamba_mixer.py), Nemotron-H's MambaMixer2 MAMBA2 (mamba_mixer2.py), Qwen3-Next's
# GatedDeltaNetAttention GDN_ATTN (gdn/base.py). The plan said 'mamba' for every one; the figures stay as they were.
@pytest.mark.parametrize(
    ("family", "name"),
    [("lfm2", "short_conv"), ("lfm2_moe", "short_conv"), ("jamba", "mamba1"), ("mamba", "mamba1"),
     ("nemotron_h", "mamba2"), ("zamba2", "mamba2"), ("qwen3_next", "gdn_attn"), ("olmo_hybrid", "gdn_attn")],
)  # fmt: skip
def test_recurrent_layers_are_named_as_vllm_names_them(family: str, name: str) -> None:
    assert recurrent.vllm_state_kind(family) == name


def test_lfm2_plan_shows_short_conv_layers_with_the_same_figures(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _lfm2(), 2 * GIB)
    plan = plan_model(str(path), "b200", "vllm-gpu", engine_version="0.34.0", max_model_len=32768,
                      kv_cache_memory_bytes=8 * GIB, multimodal=False)  # fmt: skip
    conv = [layer for layer in plan.layers if layer.state_bytes]
    assert len(conv) == 10 and {layer.state_kind for layer in conv} == {"short_conv"}
    assert {layer.attention_type for layer in conv} == {"mamba"}  # the arithmetic's kind (a MambaSpec) is unchanged
    console = Console(record=True, width=200)
    plan_cmd.render(plan, console)
    rows = [line for line in console.export_text().splitlines() if "2-4" in line or "0-1" in line]
    assert any("short_conv" in row for row in rows) and not any(" mamba " in row for row in rows), rows
