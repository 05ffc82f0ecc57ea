"""The catalog models added for the serving corpus (catalog/models.json): their bundled inventories add up to what
each checkpoint's publisher states, so the bytes a decode step streams are the checkpoint's."""

from __future__ import annotations

import pytest

from onechip.planner import source
from onechip.schemas.common import GIB


def _tensors(model: str):  # type: ignore[no-untyped-def]
    found = source.catalog_entry(model)
    assert found is not None
    return source.inventory(*found)


def test_llama_31_8b_inventory_is_the_checkpoint_index_total() -> None:
    # safetensors index total_size of meta-llama/Llama-3.1-8B-Instruct (tests/fixtures/bootlogs/corpus.json
    # h100-llama31-8b-tp1-v0190 weights_total_bytes)
    tensors = _tensors("meta-llama/Llama-3.1-8B-Instruct")
    assert sum(t.nbytes() for t in tensors) == 16_060_522_496


def test_gemma_4_12b_fp8_text_inventory_matches_its_model_card() -> None:
    # xbill9/gemma-4-12B-it-qat-q4_0-fp8-text model card: 11,907,350,320 parameters, 10,899,947,520 of them FP8 in
    # 328 Linear modules (float32 scale per output channel, not counted as parameters), checkpoint 12.04 GiB
    tensors = _tensors("xbill9/gemma-4-12B-it-qat-q4_0-fp8-text")
    fp8 = [t for t in tensors if t.dtype == "F8_E4M3"]
    assert sum(t.numel for t in tensors if not t.name.endswith("_scale")) == 11_907_350_320
    assert (len(fp8), sum(t.numel for t in fp8)) == (328, 10_899_947_520)
    assert sum(t.nbytes() for t in tensors) / GIB == pytest.approx(12.04, abs=0.005)
