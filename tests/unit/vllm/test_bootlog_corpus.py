"""The boot-log grammar (vllm/bootlog.py) over every real log of the corpus (tests/fixtures/bootlogs): each figure
the manifest says a log prints (`logged`, read by hand from the log, README.md there) is what the grammar reads,
on V1 and V0 engines, GPU, TPU and CPU, started and refused boots alike."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from onechip.schemas import BootRecord
from onechip.vllm.bootlog import read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
CORPUS: list[dict[str, Any]] = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
# manifest key -> BootRecord field
FIGURES = {
    "kv_cache_tokens": "kv_cache_tokens",
    "max_concurrency": "max_concurrency",
    "max_concurrency_at_tokens": "max_concurrency_context",
    "model_weights_gib": "weights_gib",
    "available_kv_cache_gib": "kv_cache_gib",
    # where the manifest gives the smallest rank's pool (the boot's: every rank gets the fewest blocks of any), that
    # one, as it comes later in this dict and wins
    "smallest_rank_kv_cache_gib": "kv_cache_gib",
    "num_gpu_blocks": "kv_cache_num_blocks",
    "kv_needed_one_request_gib": "kv_cache_needed_gib",
    "estimated_max_model_len_tokens": "estimated_max_model_len",
    # the profiler's CUDA-graph estimate, under either name the manifest gives it (never both in one entry)
    "cuda_graph_estimated_gib": "cuda_graph_estimated_gib",
    "cuda_graph_pool_estimated_gib": "cuda_graph_estimated_gib",
    "cuda_graph_gib": "cuda_graph_capture_gib",
}


@cache
def _read(name: str) -> tuple[str, BootRecord]:
    """A corpus log's text and what the grammar reads of it: once per log, for every test below that asks."""
    text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
    return text, read_boot_log(text, "vllm", "m")


@pytest.mark.parametrize("entry", CORPUS, ids=[e["name"] for e in CORPUS])
def test_the_grammar_reads_what_each_log_prints(entry: dict[str, Any]) -> None:
    text, record = _read(entry["name"])
    expected = {field: entry["logged"][key] for key, field in FIGURES.items() if key in entry["logged"]}
    assert {field: getattr(record, field) for field in expected} == expected
    if entry["vllm_version"] and entry["vllm_version"] in text:  # trimmed logs may have lost the banner
        assert record.engine_version == entry["vllm_version"]


def test_the_corpus_is_all_read() -> None:
    lines = sum("kv_cache_tokens" in e["logged"] for e in CORPUS)
    # README.md "Coverage"; every token line is asserted above
    assert (len(CORPUS), lines) == (347, 258)


@pytest.mark.parametrize("entry", CORPUS, ids=[e["name"] for e in CORPUS])
def test_the_utilization_a_log_prints_is_its_deployments(entry: dict[str, Any]) -> None:
    # bootlog._LOGGED 'gpu_memory_utilization', which _other_deployment holds against the plan's: 'non-default args',
    # 'Requested memory: 0.950000 (util)', 'Desired GPU memory utilization is (0.85, 67.43 GiB)', 0.21+'s 'The current
    # --gpu-memory-utilization=0.6200 is equivalent to --gpu-memory-utilization=0.5413 ...' (the first figure), V0's
    # profiling lines, a command line or an LLM(...) keyword; engine_args holds the utilization read by hand from the
    # same lines (corpus.json), so a figure read from the wrong place (the notice's second one) fails here
    read = _read(entry["name"])[1].logged.get("gpu_memory_utilization")
    if read is not None:
        assert float(read) == entry["engine_args"]["gpu_memory_utilization"]


def test_most_of_the_corpus_prints_its_utilization() -> None:
    # counted by hand (grep "'gpu_memory_utilization': |(util)|Desired GPU memory utilization|--gpu-memory-utilization"
    # and V0's forms over tests/fixtures/bootlogs/*.log): 130 logs print theirs on one line (the HPU worker's
    # '(gpu_memory_utilization=0.9)' among them); two more only in a line the paste hard-wraps or cuts before the figure
    # (mi300x-gemma4-e2b-len32768-v0291-rocm, rtx4090x2-r1-distill-...-v0); 2026-12-06 (logsa63): three more, the
    # 0.22.0 / 0.23.0 / 0.23.1rc1 logs' non-default args (0.85, 0.64, 0.7); 2026-12-06 (logs64): three more, the 0.21+
    # '--gpu-memory-utilization=0.9200 is equivalent to ...' notices of the L40S and RTX 5090 excerpts and the 8x H200
    # excerpt's closing 'Desired GPU memory utilization is (0.9, ...)'; and the 80 GiB ROCm boot's (0.92, ...);
    # 2026-12-07 (boot65): mi300x-gemma4-e2b-len32768-v0291-rocm's, whose paste word-wrapped it at a space ('... Desired
    # GPU memory utilization is' / '(0.9, 172.52 GiB). ...'), joined as a word wrap's rows are (bootlog._unwrapped);
    # 2026-12-07 (logs66a): two more, the GB200 0.26.0 log's and the 0.26.1rc0 TP 3 fork's ('Desired GPU memory
    # utilization is (0.92, ...)', 'non-default args' ... 'gpu_memory_utilization': 0.91); 2026-12-07 (corpus67b): the
    # 2x R9700 Qwen2.5-7B log's 'non-default args' ('gpu_memory_utilization': 0.85); 2026-12-07 (corpus68b): the GB10
    # Qwen3.5-35B-A3B-FP8 log's 'non-default args' ('gpu_memory_utilization': 0.8); 2026-12-07 (corpus69b): twenty-one
    # more llm-d-planner 0.19.0 H100 sweep logs, each with its 'non-default args' ('gpu_memory_utilization': 0.95);
    # 2026-12-07 (corpus69c): five more of that sweep (phi-4 and four FAILED boots), each with the same line;
    # 2026-12-07 (corpus70a): the 2x R9700 Qwen3-Next-80B AWQ log's 'non-default args' ('gpu_memory_utilization': 0.98);
    # 2026-12-07 (corpus70b): eight more of the sweep's FAILED boots (six Hub refusals, Gemma 4 E4B, Llama-3.1-8B DP 2)
    # and three of its started boots (CodeLlama-7B, Gemma-7B, Mistral-Small-3.1-24B bf16);
    # 2026-12-07 (corpus70c): kyuz0/amd-r9700-vllm-toolboxes' Qwen3-14B-FP8-dynamic logs: RTX 3090 and 4090 (0.86)
    # and four R9700 boots (0.98) print it; its RTX 5090, A100 and RTX 5000 Ada runs at vLLM's default 0.9 do not; its
    # Qwen3-Coder-30B-A3B GPTQ logs: the four R9700 boots (0.98, 0.95) print it, the five NVIDIA ones at 0.9 do not;
    # its six R9700 gemma-3-12b/27b-it FP8-dynamic boots (0.98, 0.94); its four R9700 Llama-3.1-8B FP8-block and TP 2
    # boots (0.98); its five R9700 gpt-oss-20b boots and the 12-09 Qwen3-Next-80B AWQ one (0.98, 0.95)
    assert sum("gpu_memory_utilization" in _read(e["name"])[1].logged for e in CORPUS) == 208


TOTALS = [e for e in CORPUS if "total_gpu_memory_gib" in e["logged"]]


@pytest.mark.parametrize("entry", TOTALS, ids=[e["name"] for e in TOTALS])
def test_the_grammar_reads_the_cards_total_memory(entry: dict[str, Any]) -> None:
    # what tells a log of another card (bootlog._other_deployment): V0's 'total_gpu_memory (X GiB)', '=XGiB' and
    # profiler-table forms, V1's 'Free memory on device (free/total GiB)' and 'memory snapshot: ... total_memory='
    record = _read(entry["name"])[1]
    assert float(record.logged["total_memory_gib"]) == entry["logged"]["total_gpu_memory_gib"]


# The card each corpus log names, read by hand (grep 'device_name=|tpu_type=|GPU device name|nvidia-smi row' over
# tests/fixtures/bootlogs): vLLM's fused-MoE config file name, tpu-inference's 'TPU info' line, an nvidia-smi table
# row or CSV row and a script's 'GPU device name:' line pasted beside the log, tpu_commons' 'TFRT TPU v6 lite'. The
# other logs name no card.
NAMES = {
    "a100-qwen25-vl-7b-util022-len128000-refused-v0230": "NVIDIA A100-SXM4-80GB",  # line 48, nvidia-smi row
    "h200x2-qwen3-next-80b-a3b-tp2-v0102": "NVIDIA_H200",  # line 13, 'Using configuration from .../E=512,N=256,...'
    "h200x8-deepseek-r1-tp8-len128000-v073": "NVIDIA H200",  # line 2, nvidia-smi '|   0  NVIDIA H200   On  |'
    "l40-qwen25-math-1.5b-len4096-v072": "NVIDIA L40",  # line 1, nvidia-smi row
    "l40s-deepseek-coder-v2-lite-cpuoffload30-len100000-v0": "NVIDIA_L40S",  # line 2, 'Using default MoE config'
    "mi300x-gemma4-26b-a4b-len32768-v0311": "AMD_Instinct_MI300X",  # line 20, 'Using default MoE config'
    "gb10-qwen35-35b-a3b-fp8-len262144-util080-v0181dev": "NVIDIA_GB10",  # line 41, 'Using default MoE config'
    # line 31, the block-FP8 kernel config file name (fp8_utils.py 'Config file not found at .../device_name=...')
    "r9700x2-qwen36-27b-fp8-tp2-len8192-eager-v0190-rocm": "AMD_Radeon_AI_PRO_R9700",
    # line 29, 'Using default MoE config'
    "r9700x2-mixtral-8x7b-awq-tp2-len8192-eager-v0190-rocm": "AMD_Radeon_AI_PRO_R9700",
    # lines 28-29, 'Using default MoE config' (a TheRock nightly build names the card by its gfx target)
    "r9700x2-qwen3-next-80b-a3b-awq-tp2-len16384-util098-v0112dev-rocm": "AMD-gfx1201",
    # the same, corpus70c: Qwen3-Coder-30B-A3B GPTQ at TP 1 (line 17; 18 on the 0.13.0rc2 build) and TP 2 (lines 25-26;
    # 26-27)
    **dict.fromkeys(
        (
            "r9700-qwen3-coder-30b-a3b-gptq-len24576-util098-v0112dev-rocm",
            "r9700x2-qwen3-coder-30b-a3b-gptq-tp2-len24576-util095-v0112dev-rocm",
            "r9700-qwen3-coder-30b-a3b-gptq-len24576-util098-v0130rc2dev-rocm",
            "r9700x2-qwen3-coder-30b-a3b-gptq-tp2-len24576-util098-v0130rc2dev-rocm",
            # the block-FP8 kernel config file name, 'Using default W8A8 Block FP8 kernel config' (lines 14-17; 19-26)
            "r9700-llama31-8b-fp8block-len65536-util098-v0112dev-rocm",
            "r9700x2-llama31-8b-fp8block-tp2-len65536-util098-v0112dev-rocm",
            # the 12-09 Qwen3-Next-80B AWQ run, 'Using default MoE config' (lines 26-27)
            "r9700x2-qwen3-next-80b-a3b-awq-tp2-len20480-util095-v0112dev-rocm",
        ),
        "AMD-gfx1201",
    ),
    "rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110": "NVIDIA_GeForce_RTX_3090",  # line 12, a list of config paths
    # nvidia-smi's CSV rows inside club-3090 reports (line 14 of each)
    "rtx4090x2-qwen36-27b-int4-dflash-tp2-len180000-v0201rc1dev": "NVIDIA GeForce RTX 4090",
    "rtx3090x2-qwen36-27b-int4-dflash-tp2-len200000-v0202rc1dev": "NVIDIA GeForce RTX 3090",
    "rtx4090-cosyvoice2-0.5b-llm-len32768-util040-v090": "NVIDIA GeForce RTX 4090",  # line 1, 'GPU device name:'
    "t4-gemma4-e2b-len16384-v0280": "Tesla T4",  # line 14, nvidia-smi's CSV row 'Tesla T4, 7.5, 15360 MiB, ...'
    "tpu-v5e1-gemma3-1b-keras-len512-v0260": "v5e-1",  # 'TPU info: ... | tpu_type=v5e-1 | ...'
    "tpu-v5e1-gemma4-e2b-util095-len16384-refused-v0261": "v5litepod-1",
    "tpu-v5e1-gemma4-e4b-w4a16-len2048-v0291": "v5litepod-1",
    **{
        f"tpu-v6e1-gemma4-{rest}": "v6e-1"
        for rest in (
            "12b-len2048-v0291",
            "12b-w4a16-len2048-v0291",
            "26b-a4b-fp8dyn-len2048-v0291",
            "26b-a4b-q4w4a16-kvbf16-len2048-v0291",
            "31b-awq-len2048-refused-v0291",
            "31b-w4a16-len2048-v0291",
            "e2b-len32768-v0261",
            "e4b-len2048-v0291",
        )
    },  # fmt: skip
    "tpu-v6e4-gemma4-26b-a4b-q4w4a16-tp4-len2048-v0291": "v6e-4",
    "tpu-v6e4-gemma4-26b-a4b-tp4-len2048-v0291": "v6e-4",
    "tpu-v6e4-gemma4-31b-tp4-len2048-v0231-tpu0260": "v6e-4",
    "tpu-v7x-llama32-1b-len1024-v0182": "tpu7x-8",
    "tpu-v6e4-tp4-len4096": "TPU v6 lite",  # line 5, '[tpu_jax_runner.py:236] TFRT TPU v6 lite'
}


@pytest.mark.parametrize("entry", CORPUS, ids=[e["name"] for e in CORPUS])
def test_the_grammar_reads_the_card_a_log_names(entry: dict[str, Any]) -> None:
    # what tells a log of another card of the same memory (bootlog._other_deployment: an L40 and an L40S, a 3090 and
    # a 4090); a log that names none reads none
    assert _read(entry["name"])[1].logged.get("device_name") == NAMES.get(entry["name"])


def test_the_other_places_a_card_is_named() -> None:
    # vLLM's block-FP8 kernel config file (vllm/model_executor/layers/quantization/utils/fp8_utils.py: 'N=..,K=..,
    # device_name=..,dtype=fp8_w8a8,block_shape=[128, 128].json'), collect_env's 'GPU models and configuration' and
    # nvidia-smi -L ('GPU 0: NAME (UUID: ...)'); an nvidia-smi name cut short ('...') is not a name
    lines = {
        "INFO [fp8_utils.py:1] Using configuration from /v/configs/N=4096,K=7168,device_name=NVIDIA_H100_80GB_HBM3,"
        "dtype=fp8_w8a8,block_shape=[128,128].json for W8A8 Block FP8 kernel.": "NVIDIA_H100_80GB_HBM3",
        "GPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB",
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-0000)": "NVIDIA H100 80GB HBM3",
        "|   0  NVIDIA GeForce RTX 4090 ...  Off |   00000000:01:00.0 Off |                  Off |": None,
        # nvidia-smi's CSV ('nvidia-smi --query-gpu=index,name,driver_version --format=csv', noonghunna/club-3090#96;
        # 'name,memory.total': no index, a figure with its unit); its header row names no card
        "0, NVIDIA GeForce RTX 3090, 580.142": "NVIDIA GeForce RTX 3090",
        "NVIDIA H100 80GB HBM3, 81559 MiB": "NVIDIA H100 80GB HBM3",
        "index, name, driver_version": None,
    }
    assert {line: read_boot_log(line, "vllm", "m").logged.get("device_name") for line in lines} == lines


@pytest.mark.parametrize("entry", CORPUS, ids=[e["name"] for e in CORPUS])
def test_the_length_a_log_prints_is_its_deployments(entry: dict[str, Any]) -> None:
    # bootlog._LOGGED 'max_model_len', which _other_deployment holds against the plan's: 'non-default args', the engine
    # config's max_seq_len, 'Using max model len', a command line, the start-up check's 'max seq len (N)' and the
    # auto-fit lines; engine_args and the concurrency line's length hold it read by hand (corpus.json)
    read = _read(entry["name"])[1].logged.get("max_model_len")
    if read is not None:
        assert int(read) == entry["engine_args"]["max_model_len"]
        assert int(read) == entry["logged"].get("max_concurrency_at_tokens", int(read))
