"""Every line format that carries a figure the boot-log reader keeps, as vLLM's own logging calls print it, version by
version and platform by platform: each row is the format string of the sdist (vllm==X from PyPI) and file it names,
its placeholders filled with figures that tell the fields apart, and the field the reader must put that figure in.
The corpus (tests/fixtures/bootlogs) holds real logs of a few versions and cards; this table holds the formats of the
others (V0 executors of 0.5 - 0.11, the XPU / TPU / CPU / OpenVINO / HPU / Neuron backends, the V1 worker's lines
0.8 - 0.34, tpu-inference 0.11 - 0.32). The figures are placeholders: what is checked is which field each one lands
in."""

from __future__ import annotations

from typing import Any

import pytest

from onechip.vllm.bootlog import failure_cause, read_boot_log

_HEAD = "INFO 12-01 10:00:01 [{}] {}"

# vllm/v1/worker/gpu_worker.py's closing memory line of the 0.28.0 - 0.34.0 sdists
CLOSING_028 = (
    "Free memory on device (78.68/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). Actual"
    " usage is 15.24 GiB for consumed memory (weights + non-torch), 1.89 GiB for peak activation, and 0.84 GiB for "
    "CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=57019940454` (53.1 GiB) to fit"
    " into requested memory, or `--kv-cache-memory=65610875392` (61.1 GiB) to fully utilize gpu memory. Current kv "
    "cache memory in use is 53.3 GiB."
)

# (where: 'version file.py', the message as the format string prints it, BootRecord field, value)
FORMATS: list[tuple[str, str, str, Any]] = [
    # V0 executors: '# %s blocks: %d, # CPU blocks: %d' and what came before executor_base.py
    ("0.5.5 executor/gpu_executor.py", "# GPU blocks: 2000, # CPU blocks: 512", "kv_cache_num_blocks", 2000),
    ("0.5.5 executor/tpu_executor.py", "# TPU blocks: 1234, # CPU blocks: 512", "kv_cache_num_blocks", 1234),
    ("0.5.5 executor/cpu_executor.py", "# CPU blocks: 4096", "kv_cache_num_blocks", 4096),
    ("0.5.5 executor/openvino_executor.py", "# CPU blocks: 4097", "kv_cache_num_blocks", 4097),
    (
        "0.6.3 executor/openvino_executor.py",
        "OpenVINO GPU: # device blocks: 777; # swap blocks: 0",
        "kv_cache_num_blocks",
        777,
    ),
    (
        "0.7.3 executor/executor_base.py (cuda)",
        "# cuda blocks: 41366, # CPU blocks: 2048",
        "kv_cache_num_blocks",
        41366,
    ),
    ("0.7.3 executor/executor_base.py (rocm)", "# rocm blocks: 6495, # CPU blocks: 2048", "kv_cache_num_blocks", 6495),
    ("0.7.3 executor/executor_base.py (tpu)", "# tpu blocks: 1500, # CPU blocks: 0", "kv_cache_num_blocks", 1500),
    ("0.7.3 executor/executor_base.py (cpu)", "# cpu blocks: 2731, # CPU blocks: 0", "kv_cache_num_blocks", 2731),
    ("0.8.5 executor/executor_base.py (xpu)", "# xpu blocks: 3100, # CPU blocks: 512", "kv_cache_num_blocks", 3100),
    ("0.8.5 executor/executor_base.py (hpu)", "# hpu blocks: 3200, # CPU blocks: 512", "kv_cache_num_blocks", 3200),
    ("0.8.5 executor/executor_base.py (neuron)", "# neuron blocks: 33, # CPU blocks: 0", "kv_cache_num_blocks", 33),
    (
        "0.11.0 executor/executor_base.py (npu plugin)",
        "# npu blocks: 9001, # CPU blocks: 0",
        "kv_cache_num_blocks",
        9001,
    ),
    (
        "0.6.3 executor/gpu_executor.py",
        "Maximum concurrency for 8192 tokens per request: 12.34x",
        "max_concurrency",
        12.34,
    ),
    (
        "0.7.3 worker/worker.py",
        "Memory profiling takes 5.12 seconds\nthe current vLLM instance can use total_gpu_memory (79.22GiB) x "
        "gpu_memory_utilization (0.90) = 71.29GiB\nmodel weights take 14.96GiB; non_torch_memory takes 0.33GiB; "
        "PyTorch activation peak memory takes 1.23GiB; the rest of the memory reserved for KV Cache is 54.77GiB.",
        "kv_cache_gib",
        54.77,
    ),
    (
        "0.6.4 worker/worker.py",
        "Memory profiling results: total_gpu_memory=44.98GiB initial_memory_usage=0.50GiB peak_torch_memory=17.20GiB "
        "memory_usage_post_profile=0.60GiB non_torch_memory=0.30GiB kv_cache_size=23.84GiB gpu_memory_utilization=0.90",
        "kv_cache_gib",
        23.84,
    ),
    # tpu-inference (the JAX worker behind vllm-tpu)
    (
        "0.32.0 tpu_inference/worker/tpu_worker.py (tpu-inference)",
        "Memory statistics | total_hbm_limit_gb=15.75GiB | total_hbm_limit_cap_gb=14.49GiB | total_hbm_used_gb=8.97GiB "
        "| total_hbm_avail_gb=5.52GiB",
        "kv_cache_gib",
        5.52,
    ),
    (
        "0.32.0 tpu_inference/runner/kv_cache_manager.py (tpu-inference)",
        "Hybrid KV cache layout: num_kv_cache_groups=2, num_kv_cache_tensors=30, kv_cache_config.num_blocks=1255, "
        "duplicate_shared_layers=False",
        "kv_cache_groups",
        2,
    ),
    (
        "0.32.0 tpu_inference/runner/kv_cache_manager.py (tpu-inference, Init kv-cache)",
        "Init kv-cache | num_total_layers=15 | num_blocks=[1255, 1255] | regular_attn_layers=15 | "
        "regular_attn_shape=(num_blocks, (256, 1, 2, 256)) | regular_attn_sharding=None | "
        "regular_attn_dtype=bfloat16 | hbm=9.0Gb",
        "kv_cache_shape",
        [256, 1, 2, 256],
    ),
    # before the hybrid layouts (0.11.1 - 0.13.3): 'shape=' and 'dtype=' unprefixed, the block counts numpy integers
    (
        "0.13.3 tpu_inference/runner/kv_cache_manager.py (tpu-inference, Init kv-cache shape)",
        "Init kv-cache | num_layers=28 | shape=(num_blocks, (64, 2, 2, 128)) | num_blocks=[np.int64(27561), "
        "np.int64(27561)] | sharding=NamedSharding(mesh=Mesh('data': 1, 'model': 2), spec=PartitionSpec(None, None, "
        "'model')) | dtype=bfloat16 | hbm=[(25.03, 31.25), (25.03, 31.25)]Gb",
        "kv_cache_shape",
        [64, 2, 2, 128],
    ),
    (
        "0.11.1 tpu_inference/runner/kv_cache_manager.py (tpu-inference, Init kv-cache blocks)",
        "Init kv-cache | num_layers=28 | shape=(num_blocks, (64, 2, 2, 128)) | num_blocks=[np.int64(27561)] | "
        "sharding=None | dtype=bfloat16 | hbm=[(25.03, 31.25)]Gb",
        "kv_cache_num_blocks",
        27561,
    ),
    (
        "0.12.0 tpu_inference/runner/kv_cache_manager.py (tpu-inference, Init kv-cache dtype)",
        "Init kv-cache | num_layers=28 | shape=(num_blocks, (64, 2, 2, 128)) | num_blocks=[np.int64(27561)] | "
        "sharding=None | dtype=bfloat16 | hbm=[(25.03, 31.25)]Gb",
        "kv_cache_dtype",
        "bfloat16",
    ),
    # weights: V0 and the V1 runners
    ("0.5.5 worker/model_runner.py", "Loading model weights took 14.9612 GB", "weights_gib", 14.9612),
    ("0.7.3 v1/worker/gpu_model_runner.py", "Loading model weights took 14.9615 GB", "weights_gib", 14.9615),
    ("0.8.5 worker/xpu_model_runner.py", "Loading model weights took 14.9616 GiB", "weights_gib", 14.9616),
    ("0.8.5 worker/model_runner.py", "Model loading took 14.9613 GiB and 3.123456 seconds", "weights_gib", 14.9613),
    (
        "0.13.0 v1/worker/gpu_model_runner.py",
        "Model loading took 14.9614 GiB memory and 3.123456 seconds",
        "weights_gib",
        14.9614,
    ),
    (
        "0.16.0 v1/worker/gpu_model_runner.py (format_gib)",
        "Model loading took 14.96 GiB memory and 3.123456 seconds",
        "weights_gib",
        14.96,
    ),
    ("0.8.5 model_executor/model_loader/loader.py", "Loading weights took 2.44 seconds", "weight_load_s", 2.44),
    # the V1 pool, tokens and concurrency, graphs
    ("0.9.2 v1/worker/gpu_worker.py", "Available KV cache memory: 58.11 GiB", "kv_cache_gib", 58.11),
    (
        "0.22.0 v1/worker/cpu_worker.py (VLLM_CPU_KVCACHE_SPACE)",
        "Explicitly set (2.0/7.21) GiB for KV cache on node 0.",
        "kv_cache_gib",
        2.0,
    ),
    (
        "0.25.0 v1/worker/cpu_worker.py (auto)",
        "Auto set (12.5/62.7) GiB for KV cache on node 0, with 50.0 GiB requested memory for the worker. 3.2 GiB "
        "memory was consumed by non-kv usages.",
        "kv_cache_gib",
        12.5,
    ),
    ("0.16.0 v1/worker/gpu_worker.py (format_gib)", "Available KV cache memory: 58.1 GiB", "kv_cache_gib", 58.1),
    (  # 0.28+: the first figure is weights and non-torch memory together, no weights figure
        "0.28.0 v1/worker/gpu_worker.py (closing line: consumed memory)",
        CLOSING_028,
        "weights_gib",
        None,
    ),
    ("0.28.0 v1/worker/gpu_worker.py (closing line: the pool)", CLOSING_028, "kv_cache_gib", 53.3),
    (
        "0.10.2 v1/worker/gpu_worker.py (closing line, the pool in bytes)",
        "Free memory on device (78.68/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). "
        "Actual usage is 14.99 GiB for weight, 1.89 GiB for peak activation, 0.25 GiB for non-torch memory, and 0.84 "
        "GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=57019940454` to fit "
        "into requested memory, or `--kv-cache-memory=65610875392` to fully utilize gpu memory. Current kv cache "
        "memory in use is 57176752128 bytes.",
        "kv_cache_gib",
        53.25,
    ),
    ("0.9.2 v1/core/kv_cache_utils.py", "GPU KV cache size: 476,016 tokens", "kv_cache_tokens", 476016),
    (
        "0.22.0 v1/core/kv_cache_utils.py",
        "Maximum concurrency for 131,072 tokens per request: 1234.50x",
        "max_concurrency",
        1234.5,
    ),
    (
        "0.28.0 v1/core/kv_cache_utils.py (one line, 'GPU' as a literal)",
        "GPU KV cache size: 476,016 tokens, Maximum concurrency for 8,192 tokens per request: 58.11x",
        "kv_cache_tokens",
        476016,
    ),
    (
        "0.28.0 v1/core/kv_cache_utils.py (one line, concurrency)",
        "GPU KV cache size: 476,016 tokens, Maximum concurrency for 8,192 tokens per request: 58.11x",
        "max_concurrency",
        58.11,
    ),
    (  # the scheduler's per-iteration stats: a share of the pool in use, no size of it
        "0.26.0 v1/metrics/loggers.py (KV cache usage)",
        "Iteration(12): 1 context requests, 512 context tokens, 3 generation requests, 3 generation tokens, iteration "
        "elapsed time: 25.10 ms, GPU KV cache usage: 4.5%",
        "kv_cache_tokens",
        None,
    ),
    (
        "0.34.0 v1/core/kv_cache_utils.py (hisparse: 'GPU + host')",
        "GPU + host KV cache size: 1,234,567 tokens, Maximum concurrency for 131,072 tokens per request: 9.42x",
        "kv_cache_tokens",
        1234567,
    ),
    (
        "0.34.0 v1/core/kv_cache_utils.py (a plugin's device type)",
        "NPU KV cache size: 1,234 tokens, Maximum concurrency for 1,024 tokens per request: 1.21x",
        "max_concurrency",
        1.21,
    ),
    (
        "0.11.0 v1/worker/gpu_model_runner.py",
        "Graph capturing finished in 12 secs, took 0.91 GiB",
        "cuda_graph_capture_gib",
        0.91,
    ),
    (
        "0.22.0 v1/worker/gpu_model_runner.py",
        "Estimated CUDA graph memory: 0.84 GiB total",
        "cuda_graph_estimated_gib",
        0.84,
    ),
]


# What a deployment is run with, as the start-up checks print it: (where, the message, BootRecord.logged key, value)
LOGGED: list[tuple[str, str, str, str | None]] = [
    (
        "0.14.1 v1/core/kv_cache_utils.py (--max-model-len auto, 'GPU memory')",
        "Auto-fit max_model_len: reduced from 131072 to 43008 to fit in available GPU memory (4.12 GiB available for "
        "KV cache)",
        "max_model_len",
        "43008",
    ),
    (
        "0.32.0 v1/core/kv_cache_utils.py (--max-model-len auto, 'KV cache memory')",
        "Auto-fit max_model_len: reduced from 8192 to 2816 to fit in available KV cache memory (0.12 GiB CPU)",
        "max_model_len",
        "2816",
    ),
    (
        "0.32.0 v1/core/kv_cache_utils.py (--max-model-len auto, it fits)",
        "Auto-fit max_model_len: full model context length 32768 fits in available KV cache memory (4.2 GiB GPU)",
        "max_model_len",
        "32768",
    ),
    (  # the engine lowers the length it settled on ('Using max model len 8192' before it)
        "0.21.0 model_executor/models/config.py (a Nomic BERT embedder without context extension)",
        "Nomic context extension is disabled. Changing max_model_len from 8192 to 2048. To enable context extension, "
        "see: https://github.com/vllm-project/vllm/tree/main/examples/features/context_extension/"
        "context_extension_offline.py",
        "max_model_len",
        "2048",
    ),
    (
        "0.33.0 config/vllm.py (a draft shorter than the target under the V2 runner)",
        "The draft model's max_model_len (32768) is smaller than the target model's (40960) and the V2 model runner "
        "can't skip speculation for longer sequences; reducing max_model_len to 32768.",
        "max_model_len",
        "32768",
    ),
    (  # the command a paste starts with, in the short form of the flag (engine/arg_utils.py '-tp', 0.6.6 - 0.34.0)
        "0.34.0 engine/arg_utils.py (-tp on the command line, vllm#53961)",
        "vllm serve deepseek-ai/DeepSeek-V4-Pro --dtype auto -tp 8 --load-format dummy --kv-cache-dtype fp8",
        "tensor_parallel_size",
        "8",
    ),
    (
        "0.18.1 v1/worker/gpu_worker.py (CUDA graph profiling on: the deployment's figure first)",
        "CUDA graph memory profiling is enabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1). This will become the "
        "default in v0.19. The current --gpu-memory-utilization=0.6200 is equivalent to "
        "--gpu-memory-utilization=0.5413 without CUDA graph memory profiling. To maintain the same effective KV "
        "cache size as before, increase "
        "--gpu-memory-utilization to 0.7011.",
        "gpu_memory_utilization",
        "0.6200",
    ),
    (  # both figures are advice, neither the deployment's
        "0.18.1 v1/worker/gpu_worker.py (CUDA graph profiling off: advice only)",
        "In v0.19, CUDA graph memory profiling will be enabled by default "
        "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), which more accurately accounts for CUDA graph memory during "
        "KV cache allocation. To try it now, set "
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 and increase --gpu-memory-utilization from 0.9000 to 0.9683 to "
        "maintain the same effective KV cache size.",
        "gpu_memory_utilization",
        None,
    ),
    (  # the example in backticks is no figure of this deployment
        "0.32.0 v1/worker/cpu_worker.py (the flag's share of host memory, with an example)",
        "ValueError: Available memory on node 0 (40.1/62.7 GiB) on startup is less than desired CPU memory utilization "
        "(0.9, 56.43 GiB). On the CPU backend, the `--gpu-memory-utilization` flag controls the fraction of CPU memory "
        "reserved (despite its name). To resolve: decrease `--gpu-memory-utilization` (e.g. `--gpu-memory-utilization "
        "0.5`) or reduce CPU memory used by other processes.",
        "gpu_memory_utilization",
        "0.9",
    ),
    (
        "0.21.0 v1/worker/cpu_worker.py (the flag's share of host memory)",
        "ValueError: Available memory on node 0 (40.1/62.7 GiB) on startup is less than desired CPU memory utilization "
        "(0.9, 56.43 GiB). Decrease --gpu-memory-utilization or reduce CPU memory used by other processes.",
        "gpu_memory_utilization",
        "0.9",
    ),
    (
        "0.32.0 v1/worker/utils.py (budget after external weights)",
        "ValueError: Free memory on device cuda:0 (50.2/79.19 GiB) on startup is less than the engine's budget after "
        "excluding external process's weights (0.85, 60.1 GiB). Decrease GPU memory utilization or reduce GPU memory "
        "used by other processes.",
        "gpu_memory_utilization",
        "0.85",
    ),
    (
        "0.32.0 v1/worker/utils.py (external weights over the cap)",
        "ValueError: Externally held weights on device cuda:0 (70.2/79.19 GiB) exceed the desired GPU memory "
        "utilization (0.8, 63.35 GiB). Increase GPU memory utilization or reduce GPU memory used by other processes.",
        "total_memory_gib",
        "79.19",
    ),
]


def _read(where: str, message: str) -> Any:
    source = where.split()[1].rsplit("/", 1)[-1] + ":1"
    text = "\n".join(_HEAD.format(source, line) for line in message.split("\n")) + "\n"
    return read_boot_log(text, "vllm", "m")


@pytest.mark.parametrize(("where", "message", "field", "value"), FORMATS, ids=[row[0] for row in FORMATS])
def test_each_format_lands_its_figure(where: str, message: str, field: str, value: Any) -> None:
    assert getattr(_read(where, message), field) == value


@pytest.mark.parametrize(("where", "message", "key", "value"), LOGGED, ids=[row[0] for row in LOGGED])
def test_each_start_up_check_names_its_deployment(where: str, message: str, key: str, value: str | None) -> None:
    assert _read(where, message).logged.get(key) == value


def test_a_pool_of_no_blocks_on_any_device_is_the_cause_and_no_swap_space_is_not() -> None:
    # '# %s blocks: %d, # CPU blocks: %d' (executor_base.py 0.7 - 0.11): the second figure is swap space in host RAM,
    # and a zero there is no empty pool; a zero first is one on whatever device the platform names
    error = _HEAD.format("engine.py:1", "x").replace("INFO", "ERROR").replace(" x", " RuntimeError: boom")
    swap = failure_cause(
        "\n".join([_HEAD.format("executor_base.py:116", "# cuda blocks: 18418, # CPU blocks: 0"), error])
    )
    empty = failure_cause(
        "\n".join([_HEAD.format("executor_base.py:116", "# tpu blocks: 0, # CPU blocks: 512"), error])
    )
    assert swap == "RuntimeError: boom"
    assert empty is not None and empty.startswith("weights and the profiling peak fill the memory cap")


def test_the_pool_is_what_the_multimodal_carve_out_leaves() -> None:
    # vllm/v1/worker/gpu_worker.py of the 0.25.0 sdist: determine_available_memory prints 'Available KV cache memory: %s
    # GiB', then _reserve_mm_ipc_gpu_memory carves the frontend's GPU video decoding out of it and returns the rest,
    # which the cache is sized from ('Reserving %s GiB of GPU memory for frontend multimodal decoding (%s GiB raw-frame
    # semaphore budget, %s GiB decoder+CUDA-context across %d API server(s) @ %s GiB/server); KV cache memory reduced
    # to %s GiB.'); the closing line's 'Current kv cache memory in use is %s GiB.' formats
    # self.available_kv_cache_memory_bytes, the figure before the carve-out
    reserve = (
        "Reserving 2.5 GiB of GPU memory for frontend multimodal decoding (1.0 GiB raw-frame semaphore budget, 1.5 GiB "
        "decoder+CUDA-context across 1 API server(s) @ 1.5 GiB/server); KV cache memory reduced to {} GiB."
    )
    closing = (
        "Free memory on device (78.68/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). "
        "Actual usage is 14.99 GiB for weight, 1.89 GiB for peak activation, 0.25 GiB for non-torch memory, and 0.84 "
        "GiB for CUDAGraph memory. Current kv cache memory in use is {} GiB."
    )
    lines = [
        "(Worker_TP0 pid=11) " + _HEAD.format("gpu_worker.py:539", "Available KV cache memory: 53.3 GiB"),
        "(Worker_TP0 pid=11) " + _HEAD.format("gpu_worker.py:644", reserve.format("50.8")),
        "(Worker_TP1 pid=12) " + _HEAD.format("gpu_worker.py:539", "Available KV cache memory: 53.2 GiB"),
        "(Worker_TP1 pid=12) " + _HEAD.format("gpu_worker.py:644", reserve.format("50.7")),
        "(EngineCore pid=10) " + _HEAD.format("kv_cache_utils.py:2146", "GPU KV cache size: 830,656 tokens"),
        "(Worker_TP0 pid=11) " + _HEAD.format("gpu_worker.py:832", closing.format("53.3")),
        "(Worker_TP1 pid=12) " + _HEAD.format("gpu_worker.py:832", closing.format("53.2")),
    ]
    assert read_boot_log("\n".join(lines) + "\n", "vllm", "m").kv_cache_gib == 50.7


def test_a_refused_tpu_boot_keeps_its_negative_pool_and_says_why() -> None:
    # tpu_inference/worker/tpu_worker.py determine_available_memory (the 0.32.0 sdist; tpu_worker_jax.py of 0.11.1):
    # logger.info(f"Memory statistics | {total_hbm_limit_gb=}GiB | {total_hbm_limit_cap_gb=}GiB |
    # {total_hbm_used_gb=}GiB | {total_hbm_avail_gb=}GiB"), then raise ValueError(f"{total_hbm_used_gb=}GiB exceeds
    # {total_hbm_limit_cap_gb=}GiB by {-total_hbm_avail_gb}GiB. Please consider increasing --gpu-memory-utilization
    # from {util} to a larger value.")
    text = "\n".join(
        [
            _HEAD.format(
                "tpu_worker.py:558",
                "Memory statistics | total_hbm_limit_gb=15.75GiB | total_hbm_limit_cap_gb=14.49GiB | "
                "total_hbm_used_gb=15.2GiB | total_hbm_avail_gb=-0.71GiB",
            ),
            _HEAD.format(
                "core.py:1",
                "ValueError: total_hbm_used_gb=15.2GiB exceeds total_hbm_limit_cap_gb=14.49GiB by 0.71GiB. Please "
                "consider increasing --gpu-memory-utilization from 0.92 to a larger value.",
            ).replace("INFO", "ERROR"),
        ]
    )
    record = read_boot_log(text + "\n", "vllm", "m")
    assert (record.hbm_gib.get("avail"), record.kv_cache_gib) == (-0.71, -0.71)
    assert (record.failure_cause or "").startswith("weights and the profiling peak fill the memory cap")


def test_an_xpu_boot_says_its_cards_memory_in_mib() -> None:
    # vllm/v1/worker/xpu_worker.py determine_available_memory of 0.9.2 - 0.14.1: 'Before memory profiling run, total GPU
    # memory: {total / 1024**2:.2f} MB, model load takes {...:.2f} MB, free gpu memory is {...:.2f} MB.'; the total is
    # what _other_deployment holds against the planned card (GiB)
    line = _HEAD.format(
        "xpu_worker.py:92",
        "Before memory profiling run, total GPU memory: 24480.00 MB, model load takes 15000.00 MB, free gpu memory is "
        "9000.00 MB.",
    )
    assert float(read_boot_log(line + "\n", "vllm", "m").logged["total_memory_gib"]) == 24480 / 1024


# a draft model's speculative_config inside 'non-default args' (vllm/entrypoints/utils.py log_non_default_args, dicts
# as the parser returns them): its 'model' and 'max_model_len' are the draft's
EAGLE_ARGS = (
    "non-default args: {'model_tag': 'meta-llama/Llama-3.1-8B-Instruct', 'model': 'meta-llama/Llama-3.1-8B-Instruct', "
    "'speculative_config': {'model': 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', 'method': 'eagle3', "
    "'num_speculative_tokens': 3, 'draft_tensor_parallel_size': 1, 'max_model_len': 2048}}"
)


def test_a_draft_models_keys_inside_the_args_are_not_the_deployments() -> None:
    logged = _read("0.33.0 entrypoints/utils.py (a speculative_config dict)", EAGLE_ARGS).logged
    assert (logged.get("model"), logged.get("max_model_len")) == ("meta-llama/Llama-3.1-8B-Instruct", None)
    wrapped = EAGLE_ARGS.replace(", 'speculative_config'", ",\n  'speculative_config'").replace(
        ", 'max_model_len'", ",\n 'max_model_len'"
    )
    text = "\n".join(_HEAD.format("utils.py:1", line) if i == 0 else line for i, line in enumerate(wrapped.split("\n")))
    logged = read_boot_log(text + "\n", "vllm-gpu", "m").logged  # the dict a paste wrapped, read once it closes
    assert (logged.get("model"), logged.get("max_model_len")) == ("meta-llama/Llama-3.1-8B-Instruct", None)


def test_a_version_in_a_markdown_report_is_read() -> None:
    # noonghunna/club-3090#96's environment section: a bold label, the version in a code span
    text = "- **vLLM:** `0.20.2rc1.dev9+g01d4d1ad3`\n" + _HEAD.format(
        "gpu_worker.py:460", "Available KV cache memory: 10.55 GiB"
    )
    assert read_boot_log(text + "\n", "vllm-gpu", "m").engine_version == "0.20.2rc1.dev9+g01d4d1ad3"


REFUSAL = (
    "ValueError: To serve at least one request with the model's max seq len (40960), (4.38 GiB KV cache is needed, "
    "which is larger than the available KV cache memory (4.00 GiB). {}Try increasing `gpu_memory_utilization` (which "
    "also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine."
)


def test_a_refusal_names_the_length_the_engine_estimates_fits() -> None:
    # v1/core/kv_cache_planning.py of the 0.33.0 sdist: the estimate is printed only when it is above 0
    estimated = REFUSAL.format("Based on the available memory, the estimated maximum model length is 37376. ")
    assert "lower --max-model-len to at most 37376 (the engine's estimate" in (failure_cause(estimated) or "")
    assert failure_cause(REFUSAL.format("")) == (
        "the KV pool (4.00 GiB) holds less than one --max-model-len request: lower --max-model-len or raise "
        "--gpu-memory-utilization"
    )


@pytest.mark.parametrize(
    "wrap",
    [
        "KV cache is needed, which is\nlarger than the available",  # vllm#53961 as pasted: the message broke there
        "larger than the available KV\ncache memory (4.00 GiB)",
        "max seq len (40960), (4.38 GiB\nKV cache is needed, which is larger than the available KV cache memory "
        "(4.00 GiB). Based on the available\nmemory, the estimated",
    ],
)
def test_a_refusal_wrapped_across_lines_is_read_as_one(wrap: str) -> None:
    # was the raw 'ValueError: To serve at least one request ... which is' as the cause: the pool refusal's pattern
    # was looked for on each line apart
    estimated = REFUSAL.format("Based on the available memory, the estimated maximum model length is 37376. ")
    start, _, end = wrap.partition("\n")
    pasted = "(EngineCore pid=9) " + estimated.replace(start + " " + end.replace("\n", " "), wrap) + "\n"
    assert pasted.count("\n") > 1
    assert "lower --max-model-len to at most 37376 (the engine's estimate" in (failure_cause(pasted) or "")
    after = pasted + "(EngineCore pid=9) ERROR 12-01 10:00:09 [core.py:1] EngineCore failed to start.\n"
    record = read_boot_log(after, "vllm-gpu", "m")
    assert "lower --max-model-len to at most 37376" in (record.failure_cause or "")
    assert (record.kv_cache_needed_gib, record.estimated_max_model_len) == (4.38, 37376)
