"""The model runner's block tables (planner.runner_tables): vLLM's V1 runner builds one [max_num_seqs, blocks per
request] int32 table and a [max_num_batched_tokens] int64 slot mapping per KV cache group when it is built, outside
what its profiling budgets (vllm/v1/worker/block_table.py, gpu_model_runner.py, utils/mem_utils.py, 0.19.0 sdist);
the V2 runner two tables per group and the slot mappings after the KV cache is sized (vllm/v1/worker/gpu/
block_table.py, 0.34.0 sdist). Neither takes KV cache; both must fit on the card beside the requested memory."""

from __future__ import annotations

import pytest

from onechip.planner import plan_model
from onechip.schemas.common import GIB

E2B, SMOL = "gemma-4-E2B-it", "SmolLM2-135M-Instruct"


@pytest.mark.usefixtures("offline_home")
def test_tables_beyond_the_cards_headroom_do_not_fit():
    # SmolLM2 at 8,192 tokens, block 16: 512 entries per sequence in its one group; 2^20 sequences x 512 x 4 B and
    # 2^20 slots x 8 B = 2.01 GiB, beside 0.95 of an L4 (the V1 runner builds them first, before it profiles)
    plan = plan_model(SMOL, "l4", max_num_seqs=2**20, max_num_batched_tokens=2**20, utilization=0.95,
                      engine_version="0.19.0")  # fmt: skip
    assert plan.binding_limit == "block-table" and not plan.fits
    assert f"holds {(2**20 * 512 * 4 + 2**20 * 8) / GIB:,.2f} GiB of block tables" in plan.verdict
    assert "vllm/v1/worker/block_table.py" in plan.verdict


@pytest.mark.usefixtures("offline_home")
def test_the_v2_runner_holds_two_tables_per_group():
    # Gemma 4 E2B at 131,072 tokens on an H100: four sliding groups of block 32 (4,096 entries) and one full group of
    # block 16 (8,192): 24,576 entries per sequence. At 16,384 sequences the V1 runner's one copy (1.50 GiB) fits in
    # the 3% an H100 keeps beside 0.97; the V2 runner's two (3.00 GiB) do not
    kw = dict(max_num_seqs=16384, max_num_batched_tokens=16384, utilization=0.97)
    assert plan_model(E2B, "h100", engine_version="0.19.0", **kw).fits
    v2 = plan_model(E2B, "h100", engine_version="0.30.0", **kw)
    assert v2.binding_limit == "block-table"
    assert f"holds {(16384 * 24576 * 4 * 2 + 5 * 16384 * 8) / GIB:,.2f} GiB of block tables" in v2.verdict
