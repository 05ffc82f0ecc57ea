"""vLLM's own checks of max_num_seqs and max_num_batched_tokens (planner.scheduler_limits), and the sizes a plan
sizes its profiling memory with. The rules and releases are in the module docstring: SchedulerConfig refuses
max_num_batched_tokens < max_num_seqs in every release read (0.6.6 - 0.34.0), and max_num_batched_tokens <
max_model_len without chunked prefill; from 0.10.1 a max_num_seqs not given defaults to min(default,
max_num_batched_tokens) (EngineArgs._set_default_args_v1 of the 0.10.1 sdist), before it the default alone."""

from __future__ import annotations

import json

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.scheduler_limits import scheduler_sizes
from onechip.schemas.common import GIB
from onechip.schemas.inputs import MAX_POSITIONS

SMOL = "SmolLM2-135M-Instruct"  # a bundled inventory: plans offline; 8,192 positions, vocab 49,152


def _sizes(seqs, batch, *, capped=True, chunked=True, max_model_len=8192):
    # the small-card V1 defaults (vllm/engine/arg_utils.py get_batch_defaults: 256 sequences, 2,048 tokens)
    return scheduler_sizes(
        seqs, batch, defaults=(256, 2048), seqs_capped=capped, max_model_len=max_model_len,
        chunked_prefill=chunked, engine="vLLM X",
    )  # fmt: skip


def test_given_sizes_are_kept_and_defaults_fill_the_rest():
    assert _sizes(None, None) == (256, 2048)
    assert _sizes(512, 4096) == (512, 4096)
    assert _sizes(2048, None) == (2048, 2048)  # equal is allowed ('greater than or equal to')


def test_the_default_sequences_follow_the_batched_tokens_from_0_10_1():
    assert _sizes(None, 1) == (1, 1)  # min(256, 1)
    assert _sizes(None, 100) == (100, 100)
    with pytest.raises(ConfigError, match="less than the 256 sequences vLLM X schedules by default"):
        _sizes(None, 100, capped=False)


@pytest.mark.parametrize(("seqs", "batch"), [(512, 256), (2, 1), (99_999_999, None)])
def test_fewer_batched_tokens_than_sequences_is_refused(seqs, batch):
    with pytest.raises(ConfigError, match="vLLM refuses max_num_batched_tokens < max_num_seqs") as info:
        _sizes(seqs, batch)
    assert "\n" not in str(info.value) and "0.6.6 - 0.34.0" in str(info.value)


def test_fewer_batched_tokens_than_the_model_length_is_refused_only_without_chunked_prefill():
    assert _sizes(None, 4096) == (256, 4096)
    with pytest.raises(ConfigError, match="less than --max-model-len 8192 .* without chunked prefill"):
        _sizes(None, 4096, chunked=False)


def test_a_batch_short_of_both_is_told_the_model_length_first_as_vllm_checks_it():
    # SchedulerConfig checks max_num_batched_tokens < max_model_len before < max_num_seqs (vllm/config.py
    # _verify_args of the 0.6.6 and 0.8.5 sdists; vllm/config/scheduler.py of 0.34.0): 100 tokens against 256
    # default sequences and 8,192 positions said 'give --max-num-seqs 100 or fewer', which vLLM refuses next
    with pytest.raises(ConfigError, match="^--max-num-batched-tokens 100 is less than --max-model-len 8192"):
        _sizes(None, 100, capped=False, chunked=False)
    with pytest.raises(ConfigError, match="less than the 256 sequences"):  # with chunked prefill: the sequences
        _sizes(None, 100, capped=False, chunked=True)


def test_the_catalog_names_both_releases_for_every_vllm_engine():
    for name in ("vllm-gpu", "vllm-cpu", "vllm-tpu", "vllm-ascend"):
        entry = catalog.engines().engines[name]
        assert entry.default_seqs_capped_from == "0.10.1" and "0.10.1" in entry.default_seqs_capped_source
        assert entry.default_batch_capped_from == "0.11.1" and "0.11.1" in entry.default_batch_capped_source


@pytest.mark.usefixtures("offline_home")
@pytest.mark.parametrize(("version", "batch"), [("0.11.0", 2048), ("0.11.1", 1024), ("0.11.2", 1024), ("0.12.0", 1024)])
def test_the_default_batch_is_capped_at_sequences_times_length_from_0_11_1(version: str, batch: int) -> None:
    # vllm/engine/arg_utils.py EngineArgs._set_default_args of the 0.11.1 and 0.11.2 sdists already caps a
    # max_num_batched_tokens not given: 'self.max_num_batched_tokens = min(self.max_num_seqs *
    # model_config.max_model_len, self.max_num_batched_tokens)' (the code 0.12.0 moved into
    # _set_default_max_num_seqs_and_batched_tokens_args); the 0.11.0 sdist's _set_default_args sets the default alone.
    # l4: below the 70 GiB tier, 2,048 tokens by default
    plan = plan_model(SMOL, "l4", engine_version=version, max_model_len=1024, max_num_seqs=1)
    assert plan.in_flight_tokens == batch  # one batch in flight before 0.26.0


@pytest.mark.usefixtures("offline_home")
def test_a_batch_of_one_token_plans_one_sequence_from_0_10_1_and_is_refused_before():
    # l4: 22 GiB, below the 70 GiB tier, so 256 sequences / 2,048 tokens by default
    with pytest.raises(ConfigError, match="less than the 256 sequences vLLM 0.10.0 schedules by default"):
        plan_model(SMOL, "l4", engine_version="0.10.0", max_num_batched_tokens=1)
    plan = plan_model(SMOL, "l4", engine_version="0.11.0", max_num_batched_tokens=64)
    same = plan_model(SMOL, "l4", engine_version="0.11.0", max_num_batched_tokens=64, max_num_seqs=64)
    # 0.11.0's sort-based sampler warms up max_num_seqs x vocab: the default 256 would take 4x what 64 takes
    assert plan.memory_budget.activation_peak_bytes == same.memory_budget.activation_peak_bytes
    assert plan.fits


@pytest.mark.usefixtures("offline_home")
def test_the_v0_engine_refuses_a_batch_shorter_than_the_model_length():
    with pytest.raises(ConfigError, match="less than --max-model-len 8192 and vLLM 0.7.3 runs this deployment"):
        plan_model(SMOL, "l4", engine_version="0.7.3", max_num_batched_tokens=4096)
    assert plan_model(SMOL, "l4", engine_version="0.7.3", max_num_batched_tokens=8192).fits


@pytest.mark.usefixtures("offline_home")
def test_huge_sizes_vllm_accepts_are_planned_as_the_profiling_run_running_out_of_memory():
    # the most batched tokens a request takes (schemas.inputs.MAX_POSITIONS, 2**26)
    plan = plan_model(SMOL, "l4", max_num_seqs=MAX_POSITIONS, max_num_batched_tokens=MAX_POSITIONS)
    assert not plan.fits and plan.binding_limit == "profiling-memory"
    assert (
        f"{MAX_POSITIONS:,} batched tokens" in plan.verdict
        and "runs out of memory before it sizes the KV cache" in (plan.verdict)
    )


@pytest.mark.usefixtures("offline_home")
@pytest.mark.parametrize(("chip", "limit"), [("cpu", 2048), ("v5e-1", 2048)])
def test_engines_without_gpu_rules_check_against_their_own_defaults(chip, limit):
    with pytest.raises(ConfigError, match=f"more than the {limit} tokens"):
        plan_model(SMOL, chip, max_num_seqs=limit + 1)
    assert plan_model(SMOL, chip, max_num_seqs=limit).fits


def test_the_default_batched_tokens_follow_sequences_times_length_from_0_12_0():
    # EngineArgs._set_default_max_num_seqs_and_batched_tokens_args (0.12.0): min(default, max_num_seqs x max_model_len)
    assert _sizes(1, None, max_model_len=1024) == (1, 2048)  # not capped (0.11.0 and before)
    capped = scheduler_sizes(
        1, None, defaults=(256, 2048), seqs_capped=True, batch_capped=True, max_model_len=1024,
        chunked_prefill=True, engine="vLLM X",
    )  # fmt: skip
    assert capped == (1, 1024)


@pytest.mark.usefixtures("offline_home")
def test_one_short_sequence_profiles_a_shorter_batch_from_0_12_0():
    # h100: >= 70 GiB, so 8,192 batched tokens by default; one 1,024-token sequence batches 1,024 from 0.12.0
    old, new = (
        plan_model(SMOL, "h100", engine_version=v, max_num_seqs=1, max_model_len=1024) for v in ("0.11.0", "0.12.0")
    )
    assert (old.in_flight_tokens, new.in_flight_tokens) == (8192, 1024)
    assert new.memory_budget.activation_peak_bytes < old.memory_budget.activation_peak_bytes


def test_a_hybrid_block_larger_than_the_batch_is_refused_where_align_mode_asserts_it(tmp_path):
    # the corpus's Qwen3.6-35B-A3B on an RTX 5090 (vLLM 0.24.0, prefix caching on -> 'align'): the attention block is
    # raised to 2,096 tokens (tests/unit/planner/test_planner_hybrid_state.py); VllmConfig.validate_block_size of
    # 0.17.0 - 0.26.0 asserts block_size <= max_num_batched_tokens in 'align' mode (gone in 0.27.0)
    entry = corpus_entry("rtx5090-qwen36-35b-a3b-nvfp4-kvfp8-v0240")
    path = sized_checkpoint(tmp_path / "m", json.loads((BOOTLOGS / entry["config_file"]).read_text()), 20 * GIB)
    args = {"max_model_len": 8192, "kv_cache_dtype": "fp8", "multimodal": False, "kv_cache_memory_bytes": 5 * GIB}

    def plan(version, batch, prefix=True):
        return plan_model(str(path), "rtx5090", "vllm-gpu", engine_version=version, max_num_batched_tokens=batch,
                          enable_prefix_caching=prefix, **args)  # fmt: skip

    with pytest.raises(ConfigError, match="less than the 2096-token attention block .* 0.17.0 - 0.26.x assert"):
        plan("0.24.0", 2048)
    assert plan("0.24.0", 2096).memory_budget.min_block_size == 2096
    assert plan("0.27.0", 2048).memory_budget is not None  # the assert is gone there
    assert plan("0.24.0", 2048, prefix=False).memory_budget is not None  # mode 'none': no such assert


@pytest.mark.usefixtures("offline_home")
def test_huge_sizes_on_a_tpu_are_planned_as_the_runner_tables_tpu_inference_allocates():
    # tpu_inference/runner/block_table.py: max(max_num_seqs, 8) x cdiv(max_model_len, block) int32 on the device, built
    # with the runner (before the KV cache is sized); SmolLM2 at 8,192 tokens plans block 32 on v6e-1: 256 blocks
    plan = plan_model(SMOL, "v6e-1", max_num_seqs=MAX_POSITIONS, max_num_batched_tokens=MAX_POSITIONS)
    assert not plan.fits and plan.binding_limit == "block-table"
    assert f"a {MAX_POSITIONS * 256 * 4 / GIB:,.2f} GiB block table" in plan.verdict
    # the largest token bucket's hidden states (2^26 x 576 x 2 B: SmolLM2 served in bf16) do not fit
    # beside the KV cache: tpu_inference/runner/compilation_manager.py precompiles it after the KV allocation
    plan = plan_model(SMOL, "v6e-1", max_num_batched_tokens=MAX_POSITIONS)  # 2**26: its own bucket
    assert not plan.fits and plan.binding_limit == "program-memory"
    assert f"every token bucket up to {MAX_POSITIONS:,}" in plan.verdict
    assert f"max_num_batched_tokens {MAX_POSITIONS:,}" in plan.verdict


@pytest.mark.usefixtures("offline_home")
def test_the_tpu_block_table_comes_out_of_the_kv_pool():
    small, large = (plan_model(SMOL, "v6e-1", max_num_seqs=seqs, max_num_batched_tokens=4096) for seqs in (256, 4096))
    assert small.fits and large.fits and large.num_blocks < small.num_blocks
    table_bytes = (4096 - 256) * 256 * 4  # the larger table, by its rows (256 blocks of 32 at 8,192 tokens)
    block_bytes = small.block_size * small.kv_bytes_per_token
    assert small.num_blocks - large.num_blocks in (table_bytes // block_bytes, table_bytes // block_bytes + 1)


@pytest.mark.usefixtures("offline_home")
@pytest.mark.parametrize(
    ("version", "cited", "not_cited"),
    [
        # V0 (0.6.6): ModelRunner.profile_run samples inside execute_model; no sampler warm-up, no message of its own
        ("0.6.6", "vllm/worker/model_runner.py profile_run", "_dummy_sampler_run"),
        # V1 (0.19.0): gpu_model_runner.py _dummy_sampler_run wraps the OOM in 'when warming up sampler'
        ("0.19.0", "warming up sampler", "vllm/worker/model_runner.py"),
        # V2 model runner (0.30.0): vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run catches nothing
        ("0.30.0", "vllm/v1/worker/gpu/model_runner.py", "warming up sampler"),
    ],
)
def test_the_profiling_memory_verdict_cites_the_runner_the_version_runs(version, cited, not_cited):
    # 4,096 sequences: the V1 runner's block tables (built before it profiles, planner.runner_tables) fit
    plan = plan_model(SMOL, "l4", max_num_seqs=4096, max_num_batched_tokens=MAX_POSITIONS, engine_version=version)
    assert plan.binding_limit == "profiling-memory"
    assert cited in plan.verdict and not_cited not in plan.verdict
