"""vLLM v1 releases before 0.11.0 (issue 27: the rules of newer versions must not be applied to older ones).

What the profiler counts changed twice (vllm/v1/worker/gpu_worker.py, read in the vllm 0.8.5, 0.9.0, 0.9.2,
0.10.0 and 0.10.1.1 wheels and the 0.10.2 - 0.19.0 sdists): up to 0.9.0 every non-torch byte on the device (CUDA
context and NCCL included); 0.9.1 - 0.10.x the increase since a snapshot taken before NCCL is initialized; from
0.11.0 the increase since a snapshot taken after it. Up to 0.9.0 the sizes are the ones the 0.19.0 H100 logs
print; from 0.9.1 they are measured on logs of those releases (engines.json memory_rules sources)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from factories import SMOLLM2_CONFIG, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB

CATALOG = Path(__file__).resolve().parents[3] / "src" / "onechip" / "catalog"
BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
LLAMA_8B_BYTES = 16_060_522_496  # safetensors total of meta-llama/Llama-3.1-8B-Instruct (corpus.json)


def logged_gib(log: str, pattern: str) -> float:
    """The first figure `pattern` captures in a corpus log."""
    match = re.search(pattern, (BOOTLOGS / log).read_text(encoding="utf-8"))
    assert match, pattern
    return float(match.group(1))


# What the 0.19.0 H100 logs print: non-torch memory at the worker's init snapshot (the CUDA context; at TP2 also
# NCCL's communicator buffers) and the non-torch increase of the profiling forward.
INIT = r"worker init memory snapshot: .*?non_torch_memory=([\d.]+)GiB"
FORWARD = r"non-torch forward increase memory: ([\d.]+)GiB"
TP1 = "h100-llama31-8b-tp1-v0190.log"
TP2 = "h100x2-llama31-8b-tp2-v0190.log"


def non_torch_gib(tmp_path: Path, version: str, tp: int) -> float:
    path = sized_checkpoint(tmp_path / f"llama-{version}-tp{tp}", LLAMA, LLAMA_8B_BYTES)
    plan = plan_model(str(path), "h100", engine_version=version, max_model_len=8192, tensor_parallel_size=tp)
    assert plan.memory_budget is not None
    return plan.memory_budget.non_torch_bytes / GIB


@pytest.mark.parametrize("version", ["0.8.5", "0.9.0"])
def test_v1_before_0_9_1_counts_the_cuda_context_and_all_of_nccl(tmp_path: Path, version: str) -> None:
    # total used - torch allocated after profile_run: the context, NCCL at init and in the forward
    assert non_torch_gib(tmp_path, version, 1) == pytest.approx(
        logged_gib(TP1, INIT) + logged_gib(TP1, FORWARD), abs=0.01
    )
    assert non_torch_gib(tmp_path, version, 2) == pytest.approx(
        logged_gib(TP2, INIT) + logged_gib(TP2, FORWARD), abs=0.01
    )


# llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md (H100 80GB, 'Free memory on device ... on
# startup ... for non-torch memory' lines; sort-based sampler peaks, so 0.11.0 - 0.15.x): 0.13 GiB non-torch at TP1
# (Llama-3.1-8B, Qwen3-0.6B, gpt-oss-20b/120b @ 259334868c50), 0.55 GiB at TP2 (Llama-3.3-70B-FP8 @ 259334868c50),
# startup free memory 78.57 GiB at TP1 against 77.64 GiB at TP2 (NCCL's communicators and the custom all-reduce
# buffers, allocated before the 0.11.0+ snapshot: 0.93 GiB). Held out: Qwen3-32B TP2 (0.54 GiB) and
# Mistral-Small-3.2 TP1 (0.14 GiB), both added at 4f4d44943c39.
LLMD_TP1, LLMD_TP2, LLMD_NCCL_INIT = 0.13, 0.55, 78.57 - 77.64
# tests/fixtures/bootlogs h100-llava-v16-mistral-7b-len4096-v0102 (vLLM 0.10.2, TP1; the 0.9.1 - 0.10.x TP1 figure
# is fitted on it): '0.07 GiB for non-torch memory'
LLAVA_V0102 = r"Actual usage is .*? ([\d.]+) GiB for non-torch memory"


@pytest.mark.parametrize("version", ["0.9.1", "0.10.1"])
def test_v1_0_9_1_to_0_10_counts_nccl_init_but_not_the_context(tmp_path: Path, version: str) -> None:
    # the snapshot holds the CUDA context but not NCCL's buffers: they count as increase, beside the TP2 forward
    # increase of the 0.11.0+ logs
    tp1 = logged_gib("h100-llava-v16-mistral-7b-len4096-v0102.log", LLAVA_V0102)
    assert non_torch_gib(tmp_path, version, 1) == pytest.approx(tp1, abs=0.01)
    assert non_torch_gib(tmp_path, version, 2) == pytest.approx(tp1 + LLMD_NCCL_INIT + LLMD_TP2 - LLMD_TP1, abs=0.01)


def test_the_0_10_2_h200_tp2_log_out_of_sample(tmp_path: Path) -> None:
    # tests/fixtures/bootlogs h200x2-qwen3-next-80b-a3b-tp2-v0102 (vLLM 0.10.2, 2 x H200 NVLink; nothing fitted on
    # it): '1.38 GiB for non-torch memory'
    logged = logged_gib("h200x2-qwen3-next-80b-a3b-tp2-v0102.log", LLAVA_V0102)
    assert non_torch_gib(tmp_path, "0.10.2", 2) == pytest.approx(logged, abs=0.05)


def test_from_0_11_only_the_forward_increase(tmp_path: Path) -> None:
    assert non_torch_gib(tmp_path, "0.11.0", 1) == pytest.approx(LLMD_TP1, abs=0.01)
    tp2 = non_torch_gib(tmp_path, "0.15.1", 2)
    assert tp2 == pytest.approx(LLMD_TP2, abs=0.01)
    assert tp2 == pytest.approx(0.54, abs=0.02)  # Qwen3-32B TP2, held out
    # the 0.19.0 H100 logs print a larger forward increase at TP2 (2.07 GiB): not carried back
    assert non_torch_gib(tmp_path, "0.19.0", 2) == pytest.approx(logged_gib(TP2, FORWARD), abs=0.01)


def test_an_a100_gets_the_large_card_batch_defaults_before_0_9_0(tmp_path: Path) -> None:
    # vllm/engine/arg_utils.py _set_default_args_v1: 0.8.5 'if device_memory >= 70 * GiB_bytes:'; 0.9.0 adds
    # 'and "a100" not in device_name' (both wheels). The profiling peak follows the defaults (1,024 sequences /
    # 8,192 tokens against 256 / 2,048), so an A100 80GB peaks as an H100 on 0.8.5 and lower on 0.9.0.
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)

    def peak(chip: str, version: str) -> int:
        budget = plan_model(str(path), chip, engine_version=version, max_model_len=8192).memory_budget
        assert budget is not None
        return budget.activation_peak_bytes

    assert peak("a100-80gb", "0.8.5") == peak("h100", "0.8.5")
    assert peak("a100-80gb", "0.9.0") < peak("h100", "0.9.0")


def test_0_8_profile_run_holds_only_the_logits_rows(tmp_path: Path) -> None:
    # 0.8.5: _dummy_run returns hidden_states[logit_indices] alone and the sampler uses it as is; from 0.9.2 the
    # full [max_num_batched_tokens, hidden] states stay too, and torch.rand_like adds a second row copy
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    peaks = {}
    # both sort-based with the same sampler and base terms (0.11.0 counts its own: engines.json cublas_workspace_bytes)
    for version in ("0.8.5", "0.10.2"):  # 0.10.2 with FlashInfer importable would sample on it
        plan = plan_model(str(path), "h100", engine_version=version, max_model_len=8192, flashinfer=False)
        assert plan.memory_budget is not None
        peaks[version] = plan.memory_budget.activation_peak_bytes
    hidden, tokens, seqs = LLAMA["hidden_size"], 8192, 1024  # the H100 defaults of both versions
    assert peaks["0.10.2"] - peaks["0.8.5"] == pytest.approx((tokens + seqs) * hidden * 2, abs=2)


@pytest.mark.parametrize(
    ("chip", "version", "fields", "v0"),
    [
        # _is_v1_supported_oracle (vllm/engine/arg_utils.py of the 0.8.5 - 0.11.0 wheels): 'Compute Capability
        # < 8.0' falls back through 0.10.1; PP > 1 with the default executor through 0.9.0; --dtype float32
        # through 0.9.1
        ("t4", "0.10.1", {}, True),
        ("t4", "0.10.2", {}, False),
        ("h100", "0.8.5", {"pipeline_parallel_size": 2}, True),
        ("h100", "0.9.1", {"pipeline_parallel_size": 2}, False),
        ("h100", "0.9.1", {"dtype": "float32"}, True),
        ("h100", "0.9.2", {"dtype": "float32"}, False),
        ("h100", "0.8.5", {}, False),
        # --enable-prompt-embeds from 0.9.0 (the field's first release) through 0.10.2 (read in 0.9.0, 0.10.1.1 and
        # 0.10.2; the 0.9.0 corpus log rtx4090-cosyvoice2-0.5b-llm-len32768-util040-v090 says 'Falling back to V0')
        ("rtx4090", "0.9.0", {"enable_prompt_embeds": True}, True),
        ("rtx4090", "0.10.2", {"enable_prompt_embeds": True}, True),
        ("rtx4090", "0.11.0", {"enable_prompt_embeds": True}, False),
        ("rtx4090", "0.9.0", {}, False),
    ],
)
def test_v1_era_releases_hand_what_v1_lacks_to_the_v0_engine(
    tmp_path: Path, chip: str, version: str, fields: dict[str, object], v0: bool
) -> None:
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    plan = plan_model(str(path), chip, engine_version=version, max_model_len=4096, **fields)
    assert plan.memory_budget is not None
    assert plan.memory_budget.rule_versions.startswith("V0 engine") is v0
    (said,) = [w.message for w in plan.warnings if w.code == "engine-version"]
    assert ("runs its V0 engine" in said) is v0


def test_v0_0_6_5_counts_the_allocators_cached_blocks(tmp_path: Path) -> None:
    # 0.6.5/0.6.6 (PR #10511): non-torch = in use - baseline - weights - torch *allocated* increase, so cached
    # blocks count; 0.7.0 (PRs #11809, #12126) subtracts memory_reserved(). Sizes: PR #10511's comment (the corpus
    # fixture gpu80g-llama3-8b-v0-profiling: 1.79 GiB at TP 1) and PR #12126's H100 log (0.16 GiB)
    assert non_torch_gib(tmp_path, "0.6.5", 1) == pytest.approx(1.79, abs=0.01)
    assert non_torch_gib(tmp_path, "0.7.0", 1) == pytest.approx(0.16, abs=0.01)


def test_prompt_embeds_before_0_9_0_is_refused_not_written(tmp_path: Path) -> None:
    # engines.json v0_fallbacks prompt_embeds: 'the vllm 0.9.0 ... wheels (0.8.5 has no such field)': vLLM 0.8.5's
    # argparse has no --enable-prompt-embeds, so a command carrying it fails before the engine starts
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    for chip in ("h100", "v6e-1", "cpu"):  # the argument parser is the same on every platform
        with pytest.raises(ConfigError, match=r"--enable-prompt-embeds needs vLLM 0\.9\.0 or later.*0\.8\.5"):
            plan_model(str(path), chip, engine_version="0.8.5", max_model_len=4096, enable_prompt_embeds=True)
    plan = plan_model(str(path), "h100", engine_version="0.9.0", max_model_len=4096, enable_prompt_embeds=True)
    assert plan.serve.enable_prompt_embeds is not None and plan.serve.enable_prompt_embeds.value


@pytest.mark.parametrize(
    ("version", "block", "refused"),
    [
        # argparse choices from the BlockSize Literal (engines.json block_size_choices): 0.8.0 wheel [8 .. 128];
        # 0.8.5 - 0.11.0 [1, 8, 16, 32, 64, 128]; 0.11.1 - 0.17.x adds 256; 0.18.0 on any positive integer
        ("0.8.0", 1, True),
        ("0.10.2", 7, True),
        ("0.10.2", 256, True),
        ("0.12.0", 256, False),
        ("0.17.1", 48, True),
        ("0.19.0", 48, False),
        (None, 48, False),
    ],
)
def test_a_block_size_the_release_does_not_accept_is_refused(
    tmp_path: Path, version: str | None, block: int, refused: bool
) -> None:
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    if refused:
        with pytest.raises(ConfigError, match=f"--block-size {block}: vLLM {version} accepts "):
            plan_model(str(path), "h100", engine_version=version, max_model_len=4096, block_size=block)
    else:
        assert plan_model(str(path), "h100", engine_version=version, max_model_len=4096, block_size=block).block_size


@pytest.mark.parametrize(
    ("chip", "engine", "first", "before"),
    [
        # vllm/worker/cpu_worker.py is in the vllm 0.4.0.post1 wheel on PyPI and not in 0.4.0's (PR #3634)
        ("cpu", "vllm-cpu", "0.4.0.post1", ["0.2.7", "0.4.0"]),
        # vllm/worker/tpu_worker.py is in the vllm 0.5.0.post1 wheel on PyPI and not in 0.5.0's (PR #5292)
        ("v5e-1", "vllm-tpu", "0.5.0.post1", ["0.2.7", "0.5.0"]),
        # vllm 0.0.1 is the first release on PyPI (the oldest sdist catalog/vllm_flags.json read); 0.0.0 was planned
        # under the V0 rule with flag warnings
        ("h100", "vllm-gpu", "0.0.1", ["0.0.0"]),
    ],
)  # fmt: skip
def test_a_release_before_the_engines_backend_is_refused(
    tmp_path: Path, chip: str, engine: str, first: str, before: list[str]
) -> None:
    # both were planned under the 0.32 rules with an engine-version warning (`--engine vllm-cpu --engine-version
    # 0.2.7`), though no such release has a CPU or TPU backend to plan
    path = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    for version in before:
        with pytest.raises(ConfigError, match=rf"backend is first in {re.escape(first)}, so {engine} {version} ") as e:
            plan_model(str(path), chip, engine, engine_version=version, max_model_len=2048)
        assert "\n" not in str(e.value) and "PyPI" in str(e.value)
    assert plan_model(str(path), chip, engine, engine_version=first, max_model_len=2048).fits


def test_the_gpu_backends_first_release_is_the_oldest_release_read() -> None:
    flags = json.loads((CATALOG / "vllm_flags.json").read_text(encoding="utf-8"))
    assert engine_rules("vllm-gpu").first_release == flags["releases_read"][0] == "0.0.1"


def test_pipeline_parallelism_before_the_release_that_serves_it_is_refused(tmp_path: Path) -> None:
    # vllm 0.5.0.post1's config.py ParallelConfig._verify_args: 'Pipeline parallelism is not supported yet.' for any
    # pipeline_parallel_size > 1; 0.5.1 serves it (engines.json pipeline_parallel_from). Both were planned as fitting
    path = sized_checkpoint(tmp_path / "m", LLAMA, LLAMA_8B_BYTES)
    for version in ("0.4.0", "0.5.0.post1"):
        with pytest.raises(
            ConfigError, match=r"--pipeline-parallel-size 2: vLLM serves pipeline parallelism from 0\.5\.1"
        ) as e:
            plan_model(str(path), "h100", engine_version=version, max_model_len=4096, pipeline_parallel_size=2)
        assert "\n" not in str(e.value) and "not supported yet" in str(e.value)
    assert plan_model(str(path), "h100", engine_version="0.5.1", max_model_len=4096, pipeline_parallel_size=2).fits
    assert plan_model(str(path), "h100", engine_version="0.4.0", max_model_len=4096).fits  # PP 1: as before
