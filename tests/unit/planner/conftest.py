"""Fixtures for planner tests: tiny local checkpoints written with the real `safetensors` package."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from planner_models import SMOLLM2_CONFIG
from safetensors.torch import save_file

WriteCheckpoint = Callable[..., Path]


@pytest.fixture
def write_checkpoint(tmp_path: Path) -> WriteCheckpoint:
    """Return f(config, tensors: {name: tensor}, name='ckpt', shards=1) -> checkpoint directory."""

    def write(config: dict, tensors: dict[str, torch.Tensor], name: str = "ckpt", shards: int = 1) -> Path:
        directory = tmp_path / name
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
        names = sorted(tensors)
        for s in range(shards):
            part = {n: tensors[n].contiguous() for n in names[s::shards]}
            save_file(part, str(directory / f"model-{s:05d}-of-{shards:05d}.safetensors"))
        return directory

    return write


@pytest.fixture
def tiny_llama(write_checkpoint: WriteCheckpoint) -> Path:
    """SmolLM2's attention geometry with a handful of small bf16 tensors (no real weights needed:
    the KV geometry comes from config.json, weights from the tensor headers)."""
    tensors = {
        "model.embed_tokens.weight": torch.zeros(64, 8, dtype=torch.bfloat16),
        "model.layers.0.self_attn.q_proj.weight": torch.zeros(8, 8, dtype=torch.bfloat16),
        "model.layers.0.mlp.up_proj.weight": torch.zeros(16, 8, dtype=torch.bfloat16),
        "model.norm.weight": torch.zeros(8, dtype=torch.bfloat16),
    }
    return write_checkpoint(SMOLLM2_CONFIG, tensors, name="smollm2-geometry")
