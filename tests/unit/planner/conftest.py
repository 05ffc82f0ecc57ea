"""Fixtures for planner tests: tiny local checkpoints written with the real `safetensors` package
(tests/factories.py writes them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from factories import smollm2_checkpoint, write_checkpoint

WriteCheckpoint = Callable[..., Path]


@pytest.fixture(name="write_checkpoint")
def write_checkpoint_fixture(tmp_path: Path) -> WriteCheckpoint:
    """Return f(config, tensors: {name: tensor}, name='ckpt', shards=1) -> checkpoint directory."""

    def write(config: dict, tensors: dict[str, torch.Tensor], name: str = "ckpt", shards: int = 1) -> Path:
        return write_checkpoint(tmp_path / name, config, tensors, shards)

    return write


@pytest.fixture
def tiny_llama(tmp_path: Path) -> Path:
    """SmolLM2's attention geometry with a handful of small bf16 tensors (no real weights needed:
    the KV geometry comes from config.json, weights from the tensor headers)."""
    return smollm2_checkpoint(tmp_path / "smollm2-geometry")
