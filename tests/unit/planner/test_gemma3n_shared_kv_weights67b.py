"""Gemma 3n (gemma3n): the K/V projections of its KV-shared layers, which vLLM stopped loading in 0.30.0 (planfuzz67b).

A KV-shared layer (index >= num_hidden_layers - num_kv_shared_layers) reads the cache of an earlier layer, and from
vLLM 0.30.0 Gemma3nAttention builds it with q_proj only; Gemma3nTextModel's _kv_sharing_weights_mapper maps
'layers.{i}.self_attn.{k_proj,v_proj,k_norm}.' of those layers to None: 'Original checkpoints still ship K/V tensors
for the shared layers (fine-tuned ones omit them); those are dropped' (vllm/model_executor/models/gemma3n.py, 0.30.0 -
0.34.0 sdists and the 0.32.0 wheel). Through 0.29.0 every layer built a QKVParallelLinear and loaded them. google/
gemma-3n-E4B-it: 15 shared layers x (k_proj 512 x 2048 + v_proj 512 x 2048 + k_norm 256) x 2 B = 62,922,240 B.
The KV geometry is the same in every release: 20 layers own a cache (16 sliding, 4 full) of 2 x 256 x (K, V) x 2 B.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from factories import BOOTLOGS, header_checkpoint
from onechip.planner import plan_model

GEMMA3N = json.loads((BOOTLOGS / "configs" / "google--gemma-3n-E4B-it.text.json").read_text(encoding="utf-8"))
HIDDEN, HEAD_DIM, LAYERS, SHARED = 2048, 256, 35, 15


def _shapes() -> dict[str, list[int]]:
    shapes = {"model.language_model.embed_tokens.weight": [262400, HIDDEN]}
    for i in range(LAYERS):
        at = f"model.language_model.layers.{i}.self_attn"
        shapes |= {f"{at}.q_proj.weight": [8 * HEAD_DIM, HIDDEN], f"{at}.k_proj.weight": [2 * HEAD_DIM, HIDDEN],
                   f"{at}.v_proj.weight": [2 * HEAD_DIM, HIDDEN], f"{at}.o_proj.weight": [HIDDEN, 8 * HEAD_DIM],
                   f"{at}.q_norm.weight": [HEAD_DIM], f"{at}.k_norm.weight": [HEAD_DIM]}  # fmt: skip
    return shapes


ALL = 2 * sum(math.prod(shape) for shape in _shapes().values())
SHARED_KV = SHARED * (2 * 2 * HEAD_DIM * HIDDEN + HEAD_DIM) * 2


@pytest.mark.parametrize(
    ("version", "loaded"),
    [("0.29.0", ALL), ("0.30.0", ALL - SHARED_KV), ("0.32.0", ALL - SHARED_KV),
     # a dev build is the code before its number (catalog.files version_key, _DEV_BUILD: setuptools_scm's
     # guess-next-dev numbers a commit past tag 0.29.0 '0.29.1.devN', past 0.30.0rc0 '0.30.0rc1.devN')
     ("0.30.0.dev5+g1234abc", ALL), ("0.30.0rc1.dev3+g1234abc", ALL), ("0.30.1.dev2+g1234abc", ALL - SHARED_KV)],
)  # fmt: skip
def test_gemma3n_shared_layers_kv_projections_by_release(tmp_path: Path, version: str, loaded: int) -> None:
    plan = plan_model(str(header_checkpoint(tmp_path / "m", GEMMA3N, _shapes())), "h100", "vllm-gpu",
                      engine_version=version, max_model_len=8192)  # fmt: skip
    assert SHARED_KV == 62_922_240
    assert plan.weights_bytes == loaded
    assert plan.decode_bytes_per_step <= loaded  # nothing dropped is streamed either
    # 20 layers own a cache: 16 sliding + 4 full, each 2 KV heads x 256 x (K, V) x 2 B
    assert plan.kv_bytes_per_token == 20 * 2 * 256 * 2 * 2 == 40_960
