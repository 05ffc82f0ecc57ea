"""Failure paths found at the CLI (2026-12-03), one regression test per finding: a safetensors header whose
shape disagrees with its data_offsets, a user-given path that is not a regular file, a calibration cell whose
figures no engine could give, token and size options without an upper bound, simulate's --replicas bound, and
a binary file given to the logs summariser."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, one_error_line, sized_checkpoint

pytestmark = pytest.mark.usefixtures("offline_home")

LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
TENSOR = "model.layers.0.mlp.up_proj.weight"


def _header_only(directory: Path, header: Any) -> Path:
    """sized_checkpoint's config.json, with model.safetensors replaced by `header` as its JSON header."""
    sized_checkpoint(directory, LLAMA, 1024)
    text = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text)
    return directory


@pytest.mark.parametrize(
    ("tensor", "said"),
    [
        # was 'does not fit' for 2e30 bytes of weights, exit 0: the format requires (end - begin) ==
        # prod(shape) * dtype size (safetensors crate, Metadata::validate: TensorInvalidInfo)
        (
            {"dtype": "BF16", "shape": [10**30], "data_offsets": [0, 20]},
            f"tensor '{TENSOR}': shape [{10**30}] of BF16 is {2 * 10**30} bytes but its data_offsets [0, 20] span 20",
        ),
        (
            {"dtype": "F4", "shape": [3], "data_offsets": [0, 1]},
            f"tensor '{TENSOR}': shape [3] of F4 is 1.5 bytes but its data_offsets [0, 1] span 1",
        ),
        # InvalidOffset: end before begin, or offsets that are not two non-negative integers
        (
            {"dtype": "BF16", "shape": [0], "data_offsets": [20, 0]},
            f"tensor '{TENSOR}' has no data_offsets [begin, end] of integers 0 <= begin <= end (got [20, 0])",
        ),
        (
            {"dtype": "BF16", "shape": [10]},
            f"tensor '{TENSOR}' has no data_offsets [begin, end] of integers 0 <= begin <= end (got None)",
        ),
    ],
)
def test_a_safetensors_shape_that_disagrees_with_its_data_offsets_is_one_line(
    run, tmp_path: Path, tensor: dict[str, Any], said: str
):
    path = _header_only(tmp_path / "m", {TENSOR: tensor})
    line = one_error_line(run, "plan", str(path), "--chip", "l4", "--max-model-len", "4096")
    assert line == f"{path}/model.safetensors: {said}"
