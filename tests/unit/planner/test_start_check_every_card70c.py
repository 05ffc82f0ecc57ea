"""vLLM's start-up check on every card and release that has it (issue 27, planfix70c). request_memory
(vllm/v1/worker/utils.py, 0.14.0 - 0.34.0 sdists; in gpu_worker.py init_device from 0.9.2 to 0.13.0, absent in 0.8.5)
refuses when the init snapshot's free memory is below ceil(total x utilization). On a CUDA card the context is in use
by then, so utilization 1.0 is always refused; the least any CUDA log of the corpus had in use at start is the T4's
(t4-gemma4-e2b-w4a16-text-emb4-fp16-len8192-v0300: 'Free memory on device (14.46/14.56 GiB) on startup'), at least
0.09 GiB once the print's two decimals are taken off."""

from __future__ import annotations

import json
import re
from pathlib import Path

from factories import sized_checkpoint
from onechip import catalog
from onechip.catalog.files import version_key
from onechip.planner import plan_model
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
FREE_AT_START = re.compile(r"Free memory on device \((\d+\.\d+)/(\d+\.\d+) GiB\) on startup")
SNAPSHOT = re.compile(r"worker init memory snapshot: .*?free_memory=(\d+\.\d+)GiB, total_memory=(\d+\.\d+)GiB")
# not a CUDA card: ROCm (hipMemGetInfo: rocm80gib prints 79.99 of 80.0 free), Ascend (torch_npu); GB10-class unified
# memory and hosts with other processes only raise what is in use, so they stay in
NOT_CUDA = ("rocm", "mi300", "mi325", "mi355", "ascend")


def _llama(tmp_path: Path) -> str:
    config = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
    return str(sized_checkpoint(tmp_path / "llama", config, 16_060_522_496))


def _least_in_use_gib() -> tuple[float, str]:
    """The least total - free printed at start by any CUDA log of the fixtures, less the print's rounding."""
    seen = []
    for log in sorted(BOOTLOGS.glob("*.log")):
        if log.name.startswith(NOT_CUDA):
            continue
        text = log.read_text(encoding="utf-8", errors="replace")
        for free, total in FREE_AT_START.findall(text) + SNAPSHOT.findall(text):
            seen.append(((float(total) - 0.005) - (float(free) + 0.005), log.name))
    return min(seen)


def test_the_bound_is_the_least_any_cuda_log_had_in_use() -> None:
    least, log = _least_in_use_gib()
    assert log == "t4-gemma4-e2b-w4a16-text-emb4-fp16-len8192-v0300.log"
    check = catalog.engines().engines["vllm-gpu"].start_check
    assert check is not None and abs(check.cuda_least_in_use_bytes / GIB - least) < 1e-6


def test_utilization_1_is_refused_on_any_cuda_card_and_release_with_the_check(tmp_path: Path) -> None:
    path = _llama(tmp_path)
    for chip in ("gpu:80GiB", "h100-nvl", "a100-80gb", "h100"):
        for version in ("0.9.2", "0.13.0", "0.16.0", "0.19.0", "0.20.0", "0.34.0"):
            plan = plan_model(path, chip, max_model_len=8192, engine_version=version, utilization=1.0)
            assert not plan.fits and plan.binding_limit == "free-memory-at-start", (chip, version, plan.verdict)


def test_no_check_before_it_existed(tmp_path: Path) -> None:
    # vllm-0.8.5 sdist: gpu_worker.py init_device takes torch.cuda.mem_get_info() and checks nothing against it
    plan = plan_model(_llama(tmp_path), "a100-80gb", max_model_len=8192, engine_version="0.8.5", utilization=1.0)
    assert plan.binding_limit != "free-memory-at-start"


def test_between_the_bound_and_what_cards_had_in_use_is_a_warning(tmp_path: Path) -> None:
    # 0.995 of an A100 80GB leaves 0.40 GiB: more than the 0.09 GiB bound, less than the H100's 0.51 at one rank
    path = _llama(tmp_path)
    plan = plan_model(path, "a100-80gb", max_model_len=8192, engine_version="0.16.0", utilization=0.995)
    assert plan.fits and "free-memory-at-start" in [w.code for w in plan.warnings]
    calm = plan_model(path, "a100-80gb", max_model_len=8192, engine_version="0.16.0", utilization=0.99)
    assert "free-memory-at-start" not in [w.code for w in calm.warnings]


def test_the_refusal_says_it_is_a_lower_bound(tmp_path: Path) -> None:
    plan = plan_model(_llama(tmp_path), "gpu:80GiB", max_model_len=8192, engine_version="0.19.0", utilization=1.0)
    assert "at least 0.09 GiB" in plan.verdict and "t4-gemma4-e2b" not in plan.verdict
    assert "--gpu-memory-utilization 0.99 or less" in plan.verdict


def test_block_tables_under_a_tenth_of_a_gib_are_said_in_mib(tmp_path: Path) -> None:
    # qa70a: 'holds 0.00 GiB of block tables ... 0.00 GiB more than the card holds' on H100 PCIe 80 GB at 1.0 (0.8.5
    # has no start-up check, so the block tables bind)
    plan = plan_model(_llama(tmp_path), "H100 PCIe 80 GB", max_model_len=8192, engine_version="0.8.5", utilization=1.0)
    assert (
        plan.binding_limit == "block-table"
        and "0.00 GiB" not in plan.verdict
        and " MiB of block tables" in plan.verdict
    )


def test_a_warning_from_other_cards_figures_says_so(tmp_path: Path) -> None:
    # 2x RTX 3090 at 0.95 on 0.19.0 asks 22.40 GiB of 23.58: inside the 0.09 - 1.56 GiB band read on other cards' logs
    # for a dense model (engines.json start_check dense_ranks_most_bytes), which is not a measurement of this card, and
    # the warning must not say it is
    plan = plan_model(
        _llama(tmp_path), "rtx3090", max_model_len=8192, engine_version="0.19.0", utilization=0.95,
        tensor_parallel_size=2,
    )  # fmt: skip
    (warning,) = [w.message for w in plan.warnings if w.code == "free-memory-at-start"]
    assert "other cards (not measured on this one" in warning and "on this card" not in warning


def test_a_dense_pair_at_the_default_utilization_gets_no_warning(tmp_path: Path) -> None:
    # 2x RTX 3090 at 0.9 on 0.19.0 leaves 2.36 GiB of 23.58 free: above the most any dense TP x PP >= 2 log of 0.14.0 or
    # later had in use (1.56 GiB), since a dense model builds no expert-parallel group (parallel_state.py, 0.14.0 on);
    # before 0.14.0 every model builds it, and the band's top is still the expert-parallel boot's 3.52 GiB
    for version, warned in (("0.19.0", False), ("0.13.0", True)):
        plan = plan_model(
            _llama(tmp_path / version), "rtx3090", max_model_len=8192, engine_version=version, utilization=0.9,
            tensor_parallel_size=2,
        )  # fmt: skip
        assert any(w.code == "free-memory-at-start" for w in plan.warnings) is warned, version


def test_the_dense_band_top_is_the_most_any_dense_multi_rank_log_had_in_use() -> None:
    """The most total - free at start over the corpus's dense TP x PP >= 2 boots of 0.14.0 or later, plus the print's
    rounding, is the catalog's dense_ranks_most_bytes (engines.json start_check)."""
    corpus = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
    seen = []
    for entry in corpus:
        logged, args, version = entry["logged"], entry["engine_args"], entry["vllm_version"] or "0"
        ranks = (args.get("tensor_parallel_size") or 1) * (args.get("pipeline_parallel_size") or 1)
        if ranks < 2 or logged.get("init_free_memory_gib") is None or entry.get("config_file") is None:
            continue
        config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
        text = config.get("text_config") or config
        moe = any(text.get(k) for k in ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts"))
        if not moe and version_key(version.split("+")[0]) >= version_key("0.14.0"):
            seen.append(logged["total_gpu_memory_gib"] - logged["init_free_memory_gib"] + 0.01)
    check = engine_rules("vllm-gpu").start_check
    assert check is not None and check.dense_ranks_most_bytes is not None
    assert len(seen) >= 10 and round(max(seen), 2) == round(check.dense_ranks_most_bytes / GIB, 2) == 1.56
