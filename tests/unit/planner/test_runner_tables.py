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


def test_one_cdiv_serves_the_kv_groups_and_the_runner_tables():
    from onechip.planner import geometry, kv_groups, runner_tables

    assert kv_groups.cdiv is runner_tables.cdiv is geometry.cdiv
    assert [geometry.cdiv(a, 4) for a in (1, 4, 5, 8, 9)] == [1, 1, 2, 2, 3]


@pytest.mark.usefixtures("offline_home")
def test_the_tpu_tables_take_the_sizes_the_engine_runs_with(monkeypatch: pytest.MonkeyPatch):
    # vllm/engine/arg_utils.py (0.10.1 and later, engines.json vllm-tpu default_seqs_capped_from): the default
    # max_num_seqs (256) is capped by max_num_batched_tokens, so 64 batched tokens run 64 sequences, and
    # tpu-inference builds its block table with the scheduler's max_num_seqs (tpu_inference/runner/block_table.py)
    from onechip.planner import core

    seen: dict[str, int] = {}

    def table(seqs: int, max_model_len: int, block_size: int) -> int:
        seen["seqs"] = seqs
        return 0

    def bucket(tokens: int, hidden: int, dtype_bytes: float) -> int:
        seen["bucket"] = tokens
        return 0

    monkeypatch.setattr(core, "tpu_block_table_bytes", table)
    monkeypatch.setattr(core, "tpu_largest_bucket_bytes", bucket)
    plan_model(E2B, "v5e-1", max_model_len=8192, max_num_batched_tokens=64, multimodal=False)
    assert seen["seqs"] == 64
    # from 0.11.1 (default_batch_capped_from) the default 2,048 batched tokens are capped at max_num_seqs x
    # max_model_len: 1 x 1,024, the largest bucket compiled
    plan_model(E2B, "v5e-1", max_model_len=1024, max_num_seqs=1, multimodal=False)
    assert seen == {"seqs": 1, "bucket": 1024}
