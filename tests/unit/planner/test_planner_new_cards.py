"""Cards the corpus had no log of (issue 27), planned from their real boot logs (tests/fixtures/bootlogs, each entry's
`source`): the KV token line given the logged pool (within 1%), the whole budget from the card's visible memory
(within 5%, where the log states every input), and the verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path

from factories import sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.rules import accelerator
from onechip.schemas.common import GIB

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
CORPUS = {e["name"]: e for e in json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))}


def test_mi300x_gemma4_12b_v0311(tmp_path: Path) -> None:
    # xbill9/gemma4-dev, vLLM 0.31.1rc1 on ROCm: 'Available KV cache memory: 150.9 GiB', 'GPU KV cache size:
    # 470,708 tokens, Maximum concurrency for 32,768 tokens per request: 14.36x'
    entry = CORPUS["mi300x-gemma4-12b-fp8-len32768-v0311"]
    logged, args = entry["logged"], entry["engine_args"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "g", config, int(logged["model_weights_gib"] * GIB))
    common = {
        "max_model_len": args["max_model_len"], "max_num_batched_tokens": args["max_num_batched_tokens"],
        "engine_version": "0.31.1", "multimodal": False,
    }  # fmt: skip
    given = plan_model(str(path), "mi300x", kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB), **common)
    assert abs(given.kv_tokens_logged - logged["kv_cache_tokens"]) / logged["kv_cache_tokens"] < 0.01
    budget = plan_model(str(path), "mi300x", utilization=args["gpu_memory_utilization"], **common)
    assert abs(budget.kv_tokens_logged - logged["kv_cache_tokens"]) / logged["kv_cache_tokens"] < 0.05
    assert budget.fits


def test_gb10_unified_memory_refuses_what_no_host_had_free_at_start(tmp_path: Path) -> None:
    # MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47: vLLM on a DGX Spark sees 121.69 GiB, but only 101.3 - 102.2 GiB
    # was free when it started on those hosts; utilization 0.87 ('wants 105.87 GiB') always failed there, 0.82 ran.
    # gb10-qwen36-35b-a3b-nvfp4-kvfp8-len65536-v0200 (a DGX Spark, vLLM 0.20.0) passed the check at 0.9 (109.52 GiB):
    # the free figure is the host's, so a request between the two is a warning, and above 0.9 (recipes#632: the
    # default 0.92 'OOMs at startup') a refusal
    config = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "llama", config, 16_060_522_496)
    warned = plan_model(str(path), "gb10", max_model_len=8192, utilization=0.87)
    assert warned.memory_budget is not None
    assert round(warned.memory_budget.requested_bytes / GIB, 2) == 105.87
    assert warned.fits and "free-memory-at-start" in [w.code for w in warned.warnings]
    assert plan_model(str(path), "gb10", max_model_len=8192, utilization=0.9).fits
    refused = plan_model(str(path), "gb10", max_model_len=8192, utilization=0.92)
    assert not refused.fits and refused.binding_limit == "free-memory-at-start"
    calm = plan_model(str(path), "gb10", max_model_len=8192, utilization=0.82)
    assert calm.fits and "free-memory-at-start" not in [w.code for w in calm.warnings]
    # both name the utilization the least free memory (101.3 GiB of 121.69) covers, and it plans without the warning
    said = float(re.search(r"--gpu-memory-utilization ([\d.]+) or less", refused.verdict).group(1))
    assert said == 0.83 and "--gpu-memory-utilization 0.83 passed" in str([w.message for w in warned.warnings])
    at_said = plan_model(str(path), "gb10", max_model_len=8192, utilization=said)
    assert at_said.fits and "free-memory-at-start" not in [w.code for w in at_said.warnings]


def test_rtx_a5000_qwen25_14b_awq_v0130(tmp_path: Path) -> None:
    # kumaxxp/duo-talk vllm.log, vLLM 0.13.0, quantization=awq forced: 'Model loading took 9.3795 GiB', 'Available KV
    # cache memory: 10.39 GiB', 'GPU KV cache size: 56,736 tokens'; the card's memory is not logged (rule: 23.62 GiB)
    entry = CORPUS["rtxa5000-qwen25-14b-awq-len8192-v0130"]
    logged = entry["logged"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    config = {k: v for k, v in config.items() if not k.startswith("_")} | {
        "architectures": ["Qwen2ForCausalLM"], "torch_dtype": "float16",
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
    }  # fmt: skip
    path = sized_checkpoint(tmp_path / "q", config, int(logged["model_weights_gib"] * GIB))
    common = {"max_model_len": 8192, "engine_version": "0.13.0", "multimodal": False}
    given = plan_model(
        str(path), "rtx-a5000", kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB), **common
    )
    assert given.kv_tokens_logged == logged["kv_cache_tokens"]
    budget = plan_model(str(path), "rtx-a5000", **common)
    assert abs(budget.kv_tokens_logged - logged["kv_cache_tokens"]) / logged["kv_cache_tokens"] < 0.05
    assert budget.fits
    assert any(w.code == "memory-by-rule" for w in budget.warnings)


def test_radeon_pro_vii_qwen3_06b_v085_rocm(tmp_path: Path) -> None:
    # A 2025-12-31 ROCm test report (search-index file id 54382809113), vLLM 0.8.5 (nlzy/vllm-gfx906) on an 'AMD Radeon
    # (TM) Pro VII' (gfx906): 'rocm is experimental on VLLM_USE_V1=1. Falling back to V0 Engine.', dtype=torch.bfloat16,
    # 'total_gpu_memory (15.98GiB) x gpu_memory_utilization (0.90) = 14.39GiB', 'the rest of the memory reserved for KV
    # Cache is 11.10GiB', '# rocm blocks: 6495' (103,920 tokens), 'Maximum concurrency for 40960 tokens per request:
    # 2.54x'
    entry = CORPUS["radeonprovii-qwen3-0.6b-len40960-v085-rocm"]
    logged = entry["logged"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "q", config, int(logged["model_weights_gib"] * GIB))
    common = {"max_model_len": 40960, "engine_version": "0.8.5", "dtype": "bfloat16", "multimodal": False}
    given = plan_model(
        str(path), "Radeon Pro VII", kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB), **common
    )
    assert given.kv_tokens_logged == logged["num_gpu_blocks"] * 16  # bf16 served on gfx906, not refused
    budget = plan_model(str(path), "Radeon Pro VII", **common)
    assert budget.memory_budget is not None and "V0" in budget.memory_budget.rule_versions  # the ROCm fallback
    assert round(budget.memory_budget.requested_bytes / GIB, 2) == logged["requested_memory_gib"]
    # ROCm's non-torch memory (0.46 GiB logged) is above the CUDA figure the V0 rule carries: within 5%, not 1%
    assert abs(budget.kv_tokens_logged - 103_920) / 103_920 < 0.05
    assert budget.fits


def test_v100_qwen25_7b_fp16_v085(tmp_path: Path) -> None:
    # zhuanlan.zhihu.com/p/1916529253169734444, vLLM 0.8.5 on a V100: 'total_gpu_memory (31.74GiB) x
    # gpu_memory_utilization (0.90) = 28.57GiB', 'the rest of the memory reserved for KV Cache is 9.88GiB'
    entry = CORPUS["v100-qwen25-7b-fp16-v085"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "q", config, entry["weights_total_bytes"])
    plan = plan_model(
        str(path), "V100 32GB", max_model_len=32768, engine_version="0.8.5", dtype="float16", multimodal=False
    )
    assert plan.memory_budget is not None and "V0" in plan.memory_budget.rule_versions  # compute capability 7.0
    assert round(plan.memory_budget.requested_bytes / GIB, 2) == entry["logged"]["requested_memory_gib"]
    assert abs(plan.memory_budget.kv_cache_bytes / GIB - 9.88) / 9.88 < 0.05


def test_mi300x_vf_sees_less_than_a_bare_metal_mi300x() -> None:
    # rocm-smi on MI300X VFs: 'VRAM | 205,822,885,888 B = 191.69 GiB' (search-index file ids 69501450715,
    # 71598303300), as vLLM's 'Free memory on device' line on the VF of mi300x-gemma4-e2b-len32768-v0291-rocm;
    # bare-metal torch: 'total capacity of 191.98 GiB' (catalog mi300x)
    vf = accelerator("AMD Instinct MI300X VF")
    assert vf.memory_visible_bytes == 205_822_885_888 and round(vf.memory_visible_bytes / GIB, 2) == 191.69
    assert accelerator("mi300x").memory_visible_bytes > vf.memory_visible_bytes
    # the name rocm-smi and the corpus print for the bare-metal card is the catalog's measured entry, not a rule
    assert accelerator("AMD Instinct MI300X").memory_visible_bytes == accelerator("mi300x").memory_visible_bytes


def test_minimax_m27_awq_on_two_gb10_is_refused_given_its_pool(tmp_path: Path) -> None:
    # eugr/spark-vllm-docker#396, vLLM 0.29.1rc1 on 2x DGX Spark (TP 2): 'Available KV cache memory: 22.5 GiB', then
    # '23.25 GiB KV cache is needed' for 196,608 tokens, 'the estimated maximum model length is 190272'. minimax_m2 is
    # every layer full attention (vllm/model_executor/models/minimax_m2.py): 62 x 8 KV heads x 128 x 2 x 2 B a token,
    # half of it a GPU at TP 2 (126,976 B: 23.25 GiB / 196,608 as the engine printed it)
    entry = CORPUS["gb10x2-minimax-m27-awq-tp2-len196608-refused-v0291"]
    logged, args = entry["logged"], entry["engine_args"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "m", {k: v for k, v in config.items() if not k.startswith("_")}, 2)
    plan = plan_model(
        str(path), "gb10", max_model_len=args["max_model_len"], tensor_parallel_size=2, engine_version="0.29.1",
        kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB), multimodal=False,
    )  # fmt: skip
    assert plan.kv_bytes_per_token == 253_952
    assert plan.max_concurrency < 1  # refused, as the engine did
    # the engine's estimate of what fits, within one 16-token block of the 2-decimal pool it printed
    assert abs(plan.kv_tokens_logged - logged["estimated_max_model_len_tokens"]) <= 16


def test_rtx_a5000_qwen3_8b_v0210_given_its_pool(tmp_path: Path) -> None:
    # LMCache/LMCache#3430, vLLM 0.21.0 on an RTX A5000: 'Available KV cache memory: 6.37 GiB', 'GPU KV cache size:
    # 46,368 tokens', 'Maximum concurrency for 16,384 tokens per request: 2.83x'
    entry = CORPUS["rtxa5000-qwen3-8b-len16384-v0210"]
    logged = entry["logged"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "q", {k: v for k, v in config.items() if not k.startswith("_")}, 2)
    plan = plan_model(
        str(path), "rtx-a5000", max_model_len=16384, engine_version="0.21.0", multimodal=False,
        kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB),
    )  # fmt: skip
    assert abs(plan.kv_tokens_logged - logged["kv_cache_tokens"]) <= 16  # one block: the pool's 2-decimal print
    assert round(plan.max_concurrency, 2) == logged["max_concurrency"]


def test_gb10_kv_range_carries_the_pool_drift_measured_across_boots(tmp_path: Path, monkeypatch) -> None:
    # search-index file id 68531280425 ('Pinning the pool', a DGX Spark at a fixed utilization 0.83): unpinned pools of
    # 1,460,513 - 2,609,348 tokens across one day's boots, 9,126,805,504 B pinned holding 2,706,122 tokens: the pool
    # moved by 3,874,619,696 B per GPU (accelerators.json gb10 host_memory_drift_bytes). The estimate holds none of it
    # (no term models the host memory counted), so only the range's low end moves, by exactly that much
    from onechip.planner import chips

    drift = accelerator("gb10").host_memory_drift_bytes
    assert drift == (2_609_348 - 1_460_513) * 9_126_805_504 // 2_706_122
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-0.6B.json").read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "qwen3", config, 1_503_264_768)
    carried = plan_model(str(path), "gb10", utilization=0.6, engine_version="0.27.1")
    entry = chips.catalog_entry
    monkeypatch.setattr(chips, "catalog_entry", lambda key: {**entry(key), "host_memory_drift_bytes": 0})
    bare = plan_model(str(path), "gb10", utilization=0.6, engine_version="0.27.1")
    ours, theirs = carried.memory_budget, bare.memory_budget
    assert ours is not None and theirs is not None
    assert ours.kv_cache_bytes == theirs.kv_cache_bytes
    assert ours.kv_cache_low_bytes == theirs.kv_cache_low_bytes - drift
    assert ours.dominant_uncertainty == "host memory counted on unified memory (moves from boot to boot)"
    (warning,) = [w for w in carried.warnings if w.code == "unified-memory-pool"]
    assert "carries the 3.61 GiB" in warning.message


def test_a_given_pool_is_its_own_range(tmp_path: Path) -> None:
    # --kv-cache-memory sets the pool (vLLM sizes no pool by profiling then): the stated range read 103.68 - 108.76 GiB
    # on gb10 beside a pinned 50 GiB pool, the profiled terms' spread around a pool they no longer size
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-0.6B.json").read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "qwen3", config, 1_503_264_768)
    for chip in ("gb10", "h100"):
        plan = plan_model(str(path), chip, kv_cache_memory_bytes=50 * GIB)
        budget = plan.memory_budget
        assert budget is not None and budget.kv_cache_low_bytes == budget.kv_cache_high_bytes == 50 * GIB
        assert budget.dominant_uncertainty == "none (--kv-cache-memory sets the pool)"
        assert plan.kv_tokens_range == (plan.kv_tokens_logged, plan.kv_tokens_logged)
