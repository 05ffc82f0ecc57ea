"""The one grammar from vLLM boot-log text to a BootRecord, and the one cross-check of a Plan against it.

    parse_boot_log(text, record, started) -> BootRecord   version, timeline, weights, KV cache, HBM, failure
    read_boot_log(text, engine, model) -> BootRecord      the same for a log file given on its own
    failure_cause(text) -> str | None                     one line saying why a boot failed
    bare_line(line) -> str                                a line without what a paste or collector put before it
    wrap_row(before, row) -> bool                         whether a paste's word wrap may have broken `row` off
    stage_durations(record)                               seconds spent in each boot stage
    planned_log_tokens(plan)                              the token figure the engine's log line will print
    crosscheck(plan, boot) -> CrossCheck                  planned vs reported allocation, known log lies flagged

`onechip up`, `demo` (boot.json) and `plan --against LOG` all read logs through parse_boot_log, so a line
that one of them understands, all of them understand.

Line formats (vLLM 0.32.0 CPU build, recorded in tests/data/vllm_cpu_0.32_boot.log):
    (APIServer pid=N) INFO 11-29 09:52:23 [api_utils.py:347]  ... version 0.32.0
    (EngineCore pid=N) INFO 11-29 09:52:54 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: ...
    (Worker pid=N) INFO ... Loading weights took 2.44 seconds
    (EngineCore pid=N) INFO ... CPU KV cache size: 46,592 tokens, Maximum concurrency for 8,192 tokens per
        request: 5.69x   (one line in the log)
    (EngineCore pid=N) INFO ... init engine (profile, create kv cache, warmup model) took 9.68 s
    INFO:     Application startup complete.
GPU builds print `GPU KV cache size: ... tokens` and `Maximum concurrency for ... tokens per request: ...x`
on the same or the next line; both are matched. The token figure is the engine's own derivation; on
hybrid models its meaning changed between versions (issue 3), so callers treat it as reported, not truth.

TPU lines (vllm-tpu; recorded from the seed articles in tests/data/vllm_tpu_seed_boot.log, wrapped here):
    Memory statistics | total_hbm_limit_gb=15.75GiB | total_hbm_limit_cap_gb=14.49GiB
        | total_hbm_used_gb=8.97GiB | total_hbm_avail_gb=5.52GiB
    TPU KV cache size: 321,280 tokens, Maximum concurrency for 8,192 tokens per request: 39.22x
    Init kv-cache | num_total_layers=15 | num_blocks=[1255, ...]
        | regular_attn_shape=(num_blocks, (256, 1, 2, 256)) | regular_attn_dtype=bfloat16 | ...
    init engine (profile, create kv cache, warmup model) took 503.54 s (compilation: 413.41 s)
    RuntimeProgramAllocationFailure: Attempting to reserve 384.11M at the bottom of memory.
    That was not possible. There are 347.33M free, 0B reserved, and 347.33M reservable.
    Hybrid KV cache layout: num_kv_cache_groups=1
    non-default args: {'kv_cache_dtype': 'fp8_e4m3'}
A failed boot gets `failure_cause`: one line saying what went wrong and what to change.

Known log lies the cross-check flags: the shape line is a first-wins sample from layer 0, so on a hybrid
model its head dim says nothing about the other layers (seed article fact 4); an fp8 KV flag whose capacity
did not change (seed article '--kv-cache-dtype': 1.000x). The token line's meaning changed between vLLM
versions for hybrid models, so it is treated as derived and the version is recorded with it.
"""

from __future__ import annotations

import ast
import calendar
import collections
import functools
import html
import json
import math
import re
import shlex
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Literal, NamedTuple

from onechip import catalog
from onechip.catalog.files import untagged_build, version_key
from onechip.errors import ConfigError, lines_redactor, redact
from onechip.schemas import BootEvent, BootRecord, CrossCheck, Plan
from onechip.schemas.common import GIB
from onechip.vllm.flag_table import AUTO_FIT

_STAMP = re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
_LEVEL = re.compile(r"^(WARNING|ERROR|CRITICAL)\b")  # on the bare_line
# The rest of a version after its first numbers ('.1rc1.dev17+gd2d649e67'): it ends in a letter or digit (PEP 440's
# release, pre, post, dev and local parts all do), so a full stop after it ends the sentence, not the version
# (Unsloth's banner 'Transformers: 4.55.4. vLLM: 0.9.2.', rtx4090d-qwen25-vl-3b-bnb-len16384-util0786-aot-failed-v092)
_VERSION_TAIL = r"(?:[\w.+-]*[^\W_])?"
_VERSION = [
    # V0 before 0.6: 'Initializing an LLM engine (v0.4.1) with config' (bootlogs/w7900-llama3-8b-len8192-v041-rocm.log)
    # a build without version metadata prints '(vdev)' (vllm/version.py falls back to __version__ = "dev"; livepeer/
    # ai-runner#230's image): not a release, so a version must start with a digit
    re.compile(r"Initializing (?:a V[01]|an) LLM engine \(v(\d[\w.+-]*)\)"),
    # vLLM's banner as vllm/entrypoints/utils.py log_version_and_model prints it: the logo's '█ ▀▄▀ █  version 0.22.0'
    # (the art is U+2580 - U+259F blocks) or, without the logo, 'vLLM server version 0.30.0, serving model M'; the API
    # server's 'vLLM API server version 0.6.3' before it. Not another product's 'version X' a paste puts before the log:
    # the CUDA image's 'CUDA Version 12.8.1' (l40s-qwen35-9b-kvfp8-len65536-modal-v0180), the PyTorch image's 'PyTorch
    # Version 2.6.0a0+ecf3bae', collect_env's 'CMake version : version 3.22.1' (vllm#18946's bug template)
    re.compile(
        rf"(?:\bvLLM(?: API)?(?: server)?\s+|[\u2580-\u259f]\s+)version[ =]\s*v?(\d+\.\d+{_VERSION_TAIL})",
        re.IGNORECASE,
    ),
    re.compile(rf"^vllm (\d+\.\d+{_VERSION_TAIL}) /"),  # a versions table beside the log: 'vllm 0.28.0 / torch 2.13.0'
    # what a report pastes beside its lines: collect_env's 'vLLM Version : 0.17.1' (vllm#41619) or prose ('vLLM
    # 0.29.1rc1.dev17+gd2d649e67', eugr/spark-vllm-docker#396), Markdown's bold label and code span ('- **vLLM:**
    # `0.20.2rc1.dev9+g01d4d1ad3`', noonghunna/club-3090#96); three numbers, so 'vLLM 0.8' in prose is not one
    re.compile(rf"\bvLLM(?: Version)?[*\s]*:?[*`\s]*v?(\d+\.\d+\.\d+{_VERSION_TAIL})"),
    # the wheel a report names as its environment ('vllm-0.15.2rc1.dev93+g11a4c9d30.cu128-cp312-cp312-linux_x86_64.whl',
    # vllm#34076): PEP 427 name-version-pythontag-..., the version up to the python tag
    re.compile(r"\bvllm-(\d+\.\d+\.\d+[^-\s]*)-(?:cp|py)\d"),
]
_WEIGHT_LOAD = re.compile(r"Loading weights took (\d+(?:\.\d+)?) seconds")
# V0 prints GiB figures with a 'GB' label ('Loading model weights took %.4f GB' divides by 2**30,
# vllm/worker/model_runner.py, and V1 0.7's gpu_model_runner.py), the XPU runner of 0.8 - 0.9 with a 'GiB' one ('Loading
# model weights took %.4f GiB', vllm/worker/xpu_model_runner.py of the 0.8.5 and 0.9.2 sdists), and its profiler table
# 'model weights take 14.96GiB'; HabanaAI's HPU runner 'Loading model weights took in total 15.05 GiB of device memory
# (...)' (habana_model_runner.py's f"Loading model weights took in total {m.get_summary_string()}", measured on the
# device: gaudi2-llama31-8b-util090-habana-v0-docs)
_WEIGHTS_GIB = re.compile(
    r"Model loading took (\d+(?:\.\d+)?) GiB|Checkpoint size: (\d+(?:\.\d+)?) GiB"
    r"|Loading model weights took (?:in total )?(\d+(?:\.\d+)?) Gi?B"
    r"|model weights take\s+(\d+(?:\.\d+)?)\s*GiB"
)
# The closing memory line of 0.19+ states the weights again, 'Actual usage is 8.28 GiB for weight, 1.02 GiB for peak
# activation, ...' (vllm/v1/worker/gpu_worker.py: the model runner's model_memory_usage, the figure 'Model loading took'
# prints; the 0.19.0, 0.20.0 and 0.26.0 sdists): read where the loading line is not (a paste that keeps only the
# closing line, a10-gemma4-12b-qat-len16384-util080-sleepmode-excerpt). vllm-ascend's NPUWorker words its own closing
# line 'Actual usage: 39.51 GiB for weights, ...' (vllm_ascend/worker/worker.py, format_gib(self.model_runner.
# model_memory_usage); search-index file ids 55862559283 and 59654600633; ascend-dsv4-flash-dp2-tp8-closing-line-
# excerpt)
_CLOSING_WEIGHTS_GIB = re.compile(r"Actual usage(?: is|:) (-?\d+(?:\.\d+)?) GiB for weights?\b")
_KV_TOKENS = re.compile(
    r"\b(?:CPU|GPU|TPU|XPU)? ?KV cache size: ([\d,]+) tokens"
    # the V0 and V1 refusal when the pool holds less than one max-length request
    r"|maximum number of tokens that can be stored in KV cache \(([\d,]+)\)"
)
# The pool in GiB as other lines print it; 'Available KV cache memory' and the closing 'Current kv cache memory in use'
# are read by _RANK_POOL below (one figure per rank, the smallest kept)
_KV_GIB = re.compile(
    r"available_kv_cache_memory\s+(\d+(?:\.\d+)?)\s*GiB"
    r"|the rest of the memory reserved for KV Cache is (-?\d+(?:\.\d+)?)\s*GiB|\bkv_cache_size=(\d+(?:\.\d+)?)\s*GiB"
    r"|larger than the available KV cache memory \((\d+(?:\.\d+)?) GiB\)"  # V1's refusal of one max-length request
    # --kv-cache-memory-bytes skips profiling and prints only this (vllm/v1/worker/gpu_worker.py 0.26 - 0.34:
    # 'Initial free memory 31.16 GiB, reserved 4.25 GiB memory for KV Cache as specified by kv_cache_memory_bytes
    # config', b70-len100000-refused-xpu)
    r"|reserved (\d+(?:\.\d+)?) GiB memory for KV Cache"
    # HabanaAI's V0 HPU worker cuts its blocks from the figure it states last, 'Free device memory: 79.22 GiB, 71.3 GiB
    # usable (gpu_memory_utilization=0.9), 7.13 GiB reserved for HPUGraphs (VLLM_GRAPH_RESERVED_MEM=0.1), 64.17 GiB
    # reserved for KV cache' (habana_worker.py / hpu_worker.py determine_num_available_blocks: num_hpu_blocks =
    # int(cache_size_bytes // cache_block_size), the figure format_bytes(cache_size_bytes); search-index file ids
    # 39436309804 and 66919756683; gaudi2-llama31-8b-util090-habana-v0-docs)
    r"|(\d+(?:\.\d+)?) GiB reserved for KV cache\b"
)
# V0 executor_base.py prints "# %s blocks" with the platform's device name: "# CUDA blocks" (the 0.7.2 L40 fixture),
# "# cuda blocks" (the 0.9.0 RTX 4090 fixture), "# rocm blocks" on ROCm
# V1's refusal of one max-length request ('To serve at least one request with the model's max seq len (N), (X GiB KV
# cache is needed, ... (Y GiB). Based on the available memory, the estimated maximum model length is M.',
# vllm/v1/core/kv_cache_utils.py 0.10 - 0.33, kv_cache_planning.py 0.34); 'KV cach' so a paste hard-wrapped inside
# 'cache' still reads (b70-len100000-refused-xpu), no '(' as a paste may lose it at a line break (gb10x2-minimax-...)
_KV_NEEDED = re.compile(r"(\d+(?:\.\d+)?) GiB KV cach")
# Each rank of a TP / PP engine prints its own pool before the cache is sized (gpu_worker.py 'Available KV cache
# memory'), and they can differ (Worker_TP0 2.94 GiB, Worker_TP1 2.90 GiB:
# gpu2-qwen3-next-80b-a3b-thinking-fp8-mtp2-tp2-len131072-v0110-html); the engine gives every rank the fewest blocks of
# any (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs: 'Change the num_blocks of each rank to the smallest among
# all ranks'), so the pool of a boot is the smallest one its ranks print, in whatever order. A round of them ends at the
# token line or a new engine start. The closing 'Current kv cache memory in use' lines after the token line print the
# same per-rank figure again (gpu_worker.py formats self.available_kv_cache_memory_bytes in both) and take the same
# smallest-of-the-round rule: h100x2-llama31-8b-pp2-v0190 prints PP0's 'Available' 66.54 GiB only, then the closing
# lines PP1 65.63 GiB and PP0 66.54 GiB, and the boot's pool is PP1's 65.63. 'Available' is negative where the weights
# and activations overrun the cap ('Available KV cache memory: -2.14 GiB', vllm#23278). The closing line (0.2x+,
# gpu_worker.py, after graph capture) gives the same figure as 'Available' (both 10.66 GiB in
# l4-gemma4-e2b-w4a16-len8192-v0300), and an excerpt may keep only it (gb10-qwen3-0.6b-util060-v0271).
# Where the API server decodes video on the GPU (mm_ipc_gpu_memory_gb), 0.25+ carves that memory out of the pool after
# printing it: 'Reserving %s GiB of GPU memory for frontend multimodal decoding (...); KV cache memory reduced to %s
# GiB.' (vllm/v1/worker/gpu_worker.py _reserve_mm_ipc_gpu_memory of the 0.25.0 sdist, vllm/multimodal/gpu_ipc_memory.py
# of 0.34.0), once per rank; the cache is sized from the reduced figure, while the closing 'Current kv cache memory in
# use' still prints the figure before the carve-out (self.available_kv_cache_memory_bytes, which the carve-out leaves
# as it was), so after a reduced line the closing lines are not read as the pool. vllm-ascend's NPUWorker ends its own
# closing line with 'Current KV cache memory: 13.73 GiB.' (format_gib(self.available_kv_cache_memory_bytes):
# vllm_ascend/worker/worker.py, search-index file ids 55862559283 and 59654600633), read as the CUDA worker's. The CPU
# backend's worker prints its pool per NUMA node, 'Explicitly set (%s/%s) GiB for KV cache on node %d.'
# (VLLM_CPU_KVCACHE_SPACE or --kv-cache-memory-bytes) or 'Auto set (%s/%s) GiB for KV cache on node %d, with ...' (pool
# / the node's memory; vllm/v1/worker/cpu_worker.py of the 0.22.0, 0.25.0 and 0.34.0 sdists;
# tests/data/vllm_cpu_0.32_boot.log). The closing line of 0.10.2 prints the pool in bytes, 'Current kv cache memory in
# use is 57213612851 bytes.' (int(self.available_kv_cache_memory_bytes): vllm/v1/worker/gpu_worker.py and V0's
# vllm/worker/worker.py of the 0.10.2 sdist; GiB from 0.11.0), read as GiB to 2 decimals, as the 'Available' line of the
# same figure prints it
_RANK_POOL = re.compile(
    r"Available KV cache memory: (-?\d+(?:\.\d+)?) GiB"
    r"|Current (?:kv cache memory in use is|KV cache memory:) (?:(\d+(?:\.\d+)?) GiB|(\d+) bytes)"
    r"|KV cache memory reduced to (\d+(?:\.\d+)?) GiB"
    r"|\b(?:Explicitly|Auto) set \((\d+(?:\.\d+)?)/[\d.]+\) GiB for KV cache"
)
_POOL_ROUND_END = re.compile(
    r"KV cache size: [\d,]+ tokens|Initializing (?:a V[01]|an) LLM engine|vLLM API server version"
)
# vLLM 0.34 sizes the cache after warmup on CUDA and ROCm (the extensible KV cache, on by default where the driver maps
# virtual memory: vllm/config/vllm.py, vllm/v1/worker/extensible_kv_cache.py of the 0.34.0 sdist): 'Available KV cache
# memory' and the closing 'Current kv cache memory in use' are then the reserved capacity, and the pool is what each
# rank measures after CUDA-graph capture and warmup, 'Memory after warmup: ...; %d KV cache blocks (%s GiB) fit within
# the requested %s GiB. ...' (blocks x bytes per block); the engine takes the fewest blocks of any rank
# (finalize_extensible_kv_cache), prints the token line from them, and each rank then prints 'Extended KV cache to %d
# blocks (%.2f GiB).' (the committed pages, padded to the driver's granule: its GiB is not the pool)
_COMMITTED_POOL = re.compile(r"KV cache blocks \((-?\d+(?:\.\d+)?) GiB\) fit within the requested")
# Where a boot starts: the API server's banner ('vLLM API server version X' to 0.17, V0 and V1; the logo's
# '█  version X' line of 0.18+, or 'vLLM server version X, serving model M' where the logo is off or a JSON formatter
# writes the logs: vllm/entrypoints/common/startup.py log_version_and_model of the 0.34.0 sdist) or the engine's start
# ('Initializing a V1 LLM engine (vX) with config', V0's 'Initializing an LLM engine'; the offline LLM(...) prints no
# banner); a boot came up at 'init engine (...) took' or 'Application startup complete'. A log holding two boots (a
# container restarted, a crash loop, a paste of two tries) is read for its last (_last_boot): a second banner starts
# one, and so does an engine start after an engine start of the same boot that failed or came up; not an engine start
# alone, as each data-parallel engine core of one boot prints its own (EngineCore_DP0, EngineCore_DP1), nor one after
# an ERROR the API server logs and survives before it (kaggle-gpt-oss-120b-...-v0112)
_BOOT_START = re.compile(
    r"(vLLM API server version|vLLM server version \S+, serving model|█\s+version \d)"
    r"|Initializing (?:a V[01]|an) LLM engine"
)
_BOOT_READY = re.compile(r"init engine \(profile, create kv cache, warmup model\) took|Application startup complete")
# The data-parallel rank of an engine core, from the process tag it logs under: vllm/v1/engine/utils.py
# CoreEngineProcManager names each core's process 'EngineCore_DP{global_index}' (0.10 - 0.13 always; later only where
# data_parallel_size > 1, else 'EngineCore'), 0.8.x 'EngineCore_{index}' (huggingface/trl#3310: '(EngineCore_1
# pid=2095613) INFO 04-17 23:05:00 [core.py:61] Initializing a V1 LLM engine (v0.8.3)'). Each core logs its own start
# and KV cache, and core 1's start may follow core 0's KV line: a start under another rank is the same boot
_CORE_RANK = re.compile(r"\(EngineCore_(?:DP)?(\d+) pid=\d+\)")
# The engine core a KV line is logged under, tag and pid: the same module names a core 'EngineCore_DP{global_index}' if
# is_dp else 'EngineCore' (0.18.0 - 0.34.0 sdists, is_dp = data_parallel_size > 1; 0.10 - 0.17 'EngineCore_DP{i}'
# always), so the cores of one boot are all tagged or none is, and a core is one process: a KV line under an untagged
# core beside a tagged one's, or under a tag the boot's KV line had with another pid, is another engine's (a
# disaggregated deployment's prefill and decode nodes quoted one after the other: tests/unit/vllm/
# test_bootlog_engines71.py)
_CORE = re.compile(r"\((EngineCore(?:_(?:DP)?\d+)?) pid=(\d+)\)")
_PIDS = re.compile(r"\([^()]*? pid=(\d+)(?:, ip=[^()]*)?\)")  # every process tag's pid on a line (_PREFIX's tags)
_ESTIMATED_LEN = re.compile(r"estimated maximum model length is (\d+)")
# V0's block line names the device the pool is on, as each version's executor spells it: '# GPU blocks: %d, # CPU
# blocks: %d' (gpu_executor.py, 0.5.5 - 0.6.x; the second figure is the CPU swap space), '# TPU blocks: %d, # CPU
# blocks: %d' (tpu_executor.py), '# CPU blocks: %d' alone on the CPU backend (cpu_executor.py and 0.5.5's
# openvino_executor.py: the pool itself), 'OpenVINO %s: # device blocks: %d; # swap blocks: %d' (0.6.x
# openvino_executor.py), and from 0.7 executor_base.py's '# %s blocks: %d, # CPU blocks: %d' with the platform's
# device_name ('cuda', 'rocm', 'tpu', 'xpu', 'hpu', 'cpu', 'neuron', 'openvino'; a plugin's own, vllm-ascend's 'npu'):
# the first device named on the line, not the swap figure after ', ' or '; ' (the 0.5.5 - 0.11.0 sdists)
V0_BLOCKS = r"(?:(?<![,;] )# ?(?!swap )[A-Za-z]+|GPU|CUDA|cuda|rocm) blocks: "
_GPU_BLOCKS = re.compile(rf"num_gpu_blocks is: (\d+)|{V0_BLOCKS}(\d+)|\bExtended KV cache to (\d+) blocks")
# The CUDA-graph memory the profiler estimated (what 0.20+ keeps out of the pool): the V1 runner's 'Estimated CUDA graph
# memory: 0.84 GiB total' (gpu_model_runner.py profile_cudagraph_memory; h100-llama31-8b-tp1-v0190) and the closing
# 'CUDA graph pool memory: 0.28 GiB (actual), 0.53 GiB (estimated), difference: ...' (gpu_worker.py;
# l4-gemma4-e2b-w4a16-len8192-v0300); and what the capture took ('Graph capturing finished in 6 secs, took 0.28 GiB'
# there: the last one, as the V2 runner prints its profiling capture's first, 0.48 GiB in the same log). The estimate
# may be negative (free memory grew between the captures: 'Estimated CUDA graph memory: -0.81 GiB total',
# gpu-arm64-qwen36-27b-nvfp4-mtp2-kvfp8-len262144-util070-v0231dev531), and gpu_worker.py determine_available_memory
# subtracts it as it is (requested - non-KV - estimate, 0.34.0 sdist), so the sign is read
_CUDA_GRAPH_ESTIMATE = re.compile(
    r"Estimated CUDA graph memory: (-?\d+(?:\.\d+)?) GiB total"
    r"|CUDA graph pool memory: [\d.]+ GiB \(actual\), (-?\d+(?:\.\d+)?) GiB \(estimated\)"
)
_CUDA_GRAPH_CAPTURE = re.compile(r"Graph capturing finished in [\d.]+ secs?, took (-?\d+(?:\.\d+)?) GiB")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: (\d+(?:\.\d+)?)x")
# on the bare_line: a traceback, an exception (dotted names too: 'pydantic_core._pydantic_core.ValidationError'),
# V0's refusal sentence, printed with no exception name (rtx3090-llama31-8b-len29000-refused-v0), the shell's
# report of a process ended by SIGKILL, the host's out-of-memory killer's signal ('Killed', bash's strsignal text;
# jetson-orin-nx-qwen2-7b-gguf-len200-killed-v063, whose log ends there with no traceback), or a container runtime's
# report of a container the kernel killed at its memory limit (_OOM_KILLED), or a device runtime's report of a GPU
# fault it aborts the process on (GPU_FAULT)
_FAILURE = re.compile(
    r"(Traceback \(most recent call last\)|^[\w.]*(?:Error|Exception|Failure): .+"
    r"|is larger than the maximum number of tokens that can be stored in KV cache|^Killed$"
    # vLLM's start-up checks' messages, which a note quotes without their 'ValueError: ' (_CAUSES reads them;
    # l40s-qwen25-coder-14b-util060-free-memory-refused, l40sx3-qwen25-coder-14b-tp3-heads-refused)
    r"|on startup is less than desired [GC]PU memory utilization|must be divisible by tensor parallel size"
    r"|^Memory access fault by GPU node-\d+)"
)
# ROCm's runtime on a GPU page fault: 'Memory access fault by GPU node-%u (Agent handle: %p) on address %p%s. Reason:
# %s.' on stderr, then std::abort() (ROCR-Runtime src/core/runtime/runtime.cpp, its VM fault handler; search-index file
# ids 1254024261 and 5138422984; older runtimes print it without the agent handle, file id 37303823587), so no Python
# traceback follows (gfx1151-granite4-h-350m-len32768-gpu-fault-v0111rc2-rocm, ROCm/ROCm#5724)
GPU_FAULT = re.compile(r"^Memory access fault by GPU node-(\d+)\b.*?(?:\. Reason: (.+?)\.?)?$")
# Kubernetes' termination reason 'OOMKilled' (kubectl describe: 'Reason: OOMKilled', exit code 137 = 128 + SIGKILL),
# Docker's State.OOMKilled, and a platform's sentence around the container log ('exceeded its 8Gi memory limit and was
# OOM-killed (exit 137)', gpu16g-sm90-lfm25-1.2b-int4-kvfp8-len32768-util095-v0260-container-oom); `docker inspect`'s
# '"OOMKilled": false' (or "false", or 0) says the opposite
_OOM_KILLED = re.compile(r"\bOOM-?killed\b(?![\"']?\s*[:=]\s*[\"']?(?:false|0)\b)", re.IGNORECASE)
# bash's report of a process it ran ended by SIGKILL (strsignal's 'Killed' on a line of its own)
_SIGKILLED = re.compile(r"^Killed$")
# tpu-inference's worker prints the line before it checks the pool, so a refused boot prints a negative avail
# ('total_hbm_avail_gb=-0.71GiB', then 'ValueError: total_hbm_used_gb=...GiB exceeds total_hbm_limit_cap_gb=...GiB':
# tpu_inference/worker/tpu_worker_jax.py of the 0.11.1 sdist, worker/tpu_worker.py of 0.32.0)
_MEMSTAT = re.compile(r"total_hbm_(limit|limit_cap|used|avail)_gb=(-?\d+(?:\.\d+)?)\s*GiB")
# Its 'Init kv-cache' line (tpu_inference/runner/kv_cache_manager.py) names the page shape, blocks and dtype of the
# attention layers: 'Init kv-cache | num_total_layers=%d | num_blocks=[...] | regular_attn_layers=%d |
# regular_attn_shape=(num_blocks, (256, 1, 2, 256)) | ... | regular_attn_dtype=bfloat16 | hbm=...Gb' (0.18.0 - 0.32.0
# sdists), and before the hybrid layouts 'Init kv-cache | num_layers=%d | shape=(num_blocks, (64, 2, 2, 128)) |
# num_blocks=[np.int64(27561), ...] | sharding=... | dtype=bfloat16 | hbm=...Gb' (the 0.11.1 - 0.13.3 sdists; the
# block counts numpy integers as their repr prints them: tests/fixtures/bootlogs
# tpu-v6e2-qwen25-1.5b-tp2-util080-len1024-v0111)
_INIT_KV = re.compile(r"Init kv-cache\b")
_KV_SHAPE = re.compile(r"(?:\bregular_attn_|\| )shape=\(num_blocks,\s*\((\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)\)")
_KV_BLOCKS = re.compile(r"num_blocks=\[(?:np\.int64\()?(\d+)")
_KV_DTYPE = re.compile(r"(?:\bregular_attn_|\| )dtype=(\w+)")
_GROUPS = re.compile(r"num_kv_cache_groups=(\d+)")
_FP8 = re.compile(r"kv_cache_dtype['\"]?\s*[:=]\s*['\"]?(fp8\w*)|--kv[-_]cache[-_]dtype(?:=|\s+)['\"]?(fp8\w*)")
# A model reference on a command line, quotes off: a Hub id, a path or a name with a '/', '.', '-', '_' or digit in it
# ('Qwen/Qwen3-32B', '/model', 'gpt2'), not a shell variable ('${MODEL_PATH}'), an option, a line's continuation '\\'
# or a usage line's placeholder ('usage: vllm serve [model_tag] [options]', argparse's error of a bad command)
_MODEL_WORD = r"""['"]?(?![$\\<\[{-])((?=[^\s'"`\\]*[/.\d_-])[^\s'"`\\]+)"""
# A client of a running server on a pasted command line: `vllm bench serve` (vllm/entrypoints/cli/benchmark/serve.py,
# vllm.benchmarks.serve's arguments) and the script before it (benchmarks/benchmark_serving.py) send requests; their
# --model is the name those ask for (a --served-model-name, or the path the server was given), not what a server
# loaded, so neither its line nor the lines its shell continuations ('\\') carry on is read as the deployment's
_CLIENT_COMMAND = re.compile(r"\bvllm\s+bench\s+serve\b|\bbenchmark_serving\.py\b")
# What deployment a log is of: vLLM's 'non-default args: {...}' (arg_utils, 0.10+) and 'Initializing a V1 LLM engine
# (vX) with config: model='...', ... max_seq_len=N, ... tensor_parallel_size=N' lines, and 'Resolved architecture: X'
# (tests/fixtures/bootlogs/a100-gpt-oss-20b-len131072-util065-v0190.log, a100-qwen2-7b-util025-v01011.log)
_LOGGED = {
    "model": re.compile(
        r"with config: model='([^']+)'|non-default args: \{.*'model': '([^']+)'"
        # the API server's banner (log_version_and_model, vllm/entrypoints/common/startup.py of the 0.34.0 sdist,
        # serve/utils/api_utils.py of 0.28.0: args.model beside the logo's 'model   ', or 'vLLM server version %s,
        # serving model %s' with VLLM_DISABLE_LOG_LOGO), which a paste may quote without the 'non-default args' line
        r"|█\s+model\s+(\S+)|\bserving model (\S+)"
    ),
    "architecture": re.compile(r"Resolved architecture: (\w+)"),
    # and the length the engine settled on, stated or derived from the model ('Using max model len 262144',
    # vllm/config ModelConfig, 0.10+: the one line that says it where the args leave it to the model,
    # gpu2-qwen3-30b-a3b-thinking-2507-fp8-tp2-v01011-html)
    "max_model_len": re.compile(
        r"with config: .*\bmax_seq_len=(\d+)|non-default args: \{.*'max_model_len': (\d+)|Using max model len (\d+)"
        # the start-up KV check's own statement of it (V1 'To serve at least one request with the models's max seq
        # len (262144), ...', V0 "The model's max seq len (29000) is larger than ..."; the refusals of the corpus)
        r"|max seq len \((\d+)\)"
        # --max-model-len auto (-1 in 'non-default args'): 'Using max model len' is the model's own length, the one the
        # engine runs is what the fit settles on, printed after it (vllm/v1/core/kv_cache_utils.py
        # _auto_fit_max_model_len of 0.14 - 0.33: 'Auto-fit max_model_len: reduced from 8192 to 2816 to fit in
        # available KV cache memory (0.12 GiB CPU)', tests/data/vllm_cpu_0.32_smollm2_autofit_boot.log; 'full model
        # context length %d fits in ...'; 'attention-free model, using derived max_model_len=%d'; kv_cache_planning.py
        # of 0.34 adds, once the extensible KV cache is measured after warmup, 'Auto-fit max_model_len: using
        # max_model_len=%d, which fits in the KV cache memory left after CUDA graph capture and warmup' and
        # '--max-model-len auto reduced max_model_len from %d to %d (%s).')
        r"|\bAuto-fit max_model_len: (?:reduced from \d+ to (\d+)|full model context length (\d+) fits"
        r"|(?:attention-free model, )?using (?:derived )?max_model_len=(\d+))"
        r"|--max-model-len auto reduced max_model_len from \d+ to (\d+)"
        # and the lines where the engine lowers the length after settling on it: a Nomic BERT embedder without context
        # extension, 'Nomic context extension is disabled. Changing max_model_len from 8192 to 2048.' (vllm/
        # model_executor/models/config.py of the 0.9.2 - 0.21.0 sdists), and a draft model shorter than the target
        # under the V2 runner, "The draft model's max_model_len (%d) is smaller than the target model's (%d) ...;
        # reducing max_model_len to %d." (vllm/config/vllm.py _limit_max_model_len_to_draft, 0.33.0 sdist)
        r"|Changing max_model_len from \d+ to (\d+)|reducing max_model_len to (\d+)"
    ),
    # the KV cache's element type, as 'non-default args' and the engine config line print it ('kv_cache_dtype=fp8, ':
    # 0.34's the one resolve_kv_cache_dtype_string takes from a checkpoint for 'auto', vllm/engine/arg_utils.py)
    "kv_cache_dtype": re.compile(r"non-default args: \{.*'kv_cache_dtype': '([\w.]+)'|\bkv_cache_dtype=([\w.]+)"),
    # the quantization method given, as 'non-default args' prints it; not the engine config line's
    # 'quantization=awq_marlin, ': the method the engine resolved (a checkpoint's own, or the kernel an override
    # claims), which no one gave
    "quantization": re.compile(r"non-default args: \{.*'quantization': '([\w.-]+)'"),
    # the most sequences per step given (vllm/engine/arg_utils.py --max-num-seqs; the config line does not print it)
    "max_num_seqs": re.compile(r"non-default args: \{.*'max_num_seqs': (\d+)"),
    # the length left to vLLM's auto-fit, as the log says so: '--max-model-len auto' (or -1) is -1 in 'non-default args'
    # (tests/data/vllm_cpu_0.32_smollm2_autofit_boot.log), and the fit's own lines above
    "max_model_len_auto": re.compile(
        r"non-default args: \{.*'max_model_len': (-1)\b"
        r"|\b(Auto-fit) max_model_len: |--max-model-len (auto) reduced max_model_len"
    ),
    # also the command line a paste or a container prints before the log ('$ vllm serve M --tensor-parallel-size 2',
    # ragflow#11166; SageMaker's 'vLLM engine args: [--port 8080 --tensor-parallel-size 1 ...]',
    # sagemaker-gpt-oss-mxfp4-cloudwatch-csv-failed-v0), and the keyword of the offline engine's Python call or of an
    # argparse Namespace ('llm = LLM(' then '    tensor_parallel_size=2,', gh200x2-deepseek-v4-flash-tp2-len30000-
    # refused; 'Namespace(... tensor_parallel_size=1, ...)', w7900-llama3-8b-len8192-v041-rocm); vLLM's own lines
    # come after it, and the last one read wins
    "tensor_parallel_size": re.compile(
        r"\btensor_parallel_size=(\d+)|non-default args: \{.*'tensor_parallel_size': (\d+)"
    ),
    # the data-parallel size, as the config line ('data_parallel_size=8, ': vllm/config/vllm.py __str__ of the 0.19.0 -
    # 0.34.0 sdists), 'non-default args' and a command line ('--data-parallel-size', '-dp': vllm/engine/arg_utils.py
    # add_cli_args of the 0.34.0 sdist) print it (b200x8-deepseek-v4-flash-0731-dp8-ep-v0250-banner:
    # "'data_parallel_size': 8"); each DP rank is an engine of its own, which onechip does not plan as one
    "data_parallel_size": re.compile(r"\bdata_parallel_size=(\d+)|non-default args: \{.*'data_parallel_size': (\d+)"),
    # the share of the card's memory the engine may use, as each vLLM generation prints it: 'non-default args' (0.10+),
    # V1's 'Requested memory: 0.950000 (util), 75.23 GiB' (gpu_worker.py, 0.10 - 0.19) and the closing 'Desired GPU
    # memory utilization is (0.85, 67.43 GiB)' (0.2x+), 0.21+'s 'The current --gpu-memory-utilization=0.6200 is
    # equivalent to --gpu-memory-utilization=0.5413 without CUDA graph memory profiling' (the first figure is the
    # deployment's: a line's first match is read), the start-up checks' 'less than desired GPU memory utilization
    # (0.75, 46.03 GiB)', the CPU worker's 'less than desired CPU memory utilization (0.9, 56.2 GiB)' (the same flag:
    # vllm/v1/worker/cpu_worker.py of the 0.21.0 - 0.32.0 sdists) and 'less than the engine's budget after excluding
    # external process's weights (0.9, 60.1 GiB)' (vllm/v1/worker/utils.py of the 0.32.0 - 0.34.0 sdists), V0's
    # 'total_gpu_memory (79.22GiB) x gpu_memory_utilization (0.90)', 'Memory profiling results: ...
    # gpu_memory_utilization=0.90' and PR #10511's table row 'gpu_memory_utilization       0.90'
    # (gpu80g-llama3-8b-v0-profiling), and a command line or Python call before the log (the corpus logs,
    # a800-qwen36-35b-a3b-fp8-dflash-len8192-util062-v0202, gh200x2-deepseek-v4-flash-tp2-len30000-refused)
    # (a number, so a sentence's full stop after it is not read: 'set --gpu-memory-utilization 0.9.'); a flag figure
    # followed by 'without' is the notice's equivalent, not the deployment's, even where a pasted log wrapped the
    # notice so that it starts a line of its own ('--gpu-memory-utilization=0.9683 without CUDA graph memory ...')
    "gpu_memory_utilization": re.compile(
        r"'gpu_memory_utilization': (\d*\.?\d+)|Requested memory: (\d*\.?\d+) \(util\)"
        r"|(?:[Dd]esired [CG]PU memory utilization (?:is )?|budget after excluding external process's weights )"
        r"\((\d*\.?\d+),|\bgpu_memory_utilization(?:=|\s+\(?)(\d*\.?\d+)"
        r"|\bThe current --gpu-memory-utilization=(\d*\.?\d+)"
    ),
    # the memory one GPU has, GiB, as the runtime sees it: V0's profiling lines ('total_gpu_memory (23.58GiB) x
    # gpu_memory_utilization', 'total_gpu_memory=23.58GiB', the PR #10511 table 'total_gpu_memory     79.22GiB'), V1's
    # 'Free memory on device (78.68/79.19 GiB)' (also 'device cuda:0 (14.52/31.36 GiB)'), the refusal 'Externally held
    # weights on device cuda:0 (70.2/79.19 GiB) exceed ...' (vllm/v1/worker/utils.py of the 0.32.0 - 0.34.0 sdists) and
    # 'memory snapshot: ... total_memory=79.19GiB', torch's OOM 'GPU 0 has a total capacity of 79.19 GiB' (all but the
    # refusal in tests/fixtures/bootlogs)
    "total_memory_gib": re.compile(
        r"total_gpu_memory(?: \(|=|\s+)(\d+(?:\.\d+)?)\s*GiB"
        r"|(?:Free memory|Externally held weights) on device[^(]*\([\d.]+/(\d+(?:\.\d+)?) GiB\)"
        r"|memory snapshot: .*\btotal_memory=(\d+(?:\.\d+)?)\s*GiB|has a total capacity of (\d+(?:\.\d+)?) GiB"
    ),
    # the card by name, as the runtime or a tool beside the log prints it (_other_deployment maps it to a chip):
    # - the fused-MoE / block-FP8 kernel config file vLLM looks up ('Using configuration from .../E=512,N=256,
    #   device_name=NVIDIA_H200.json for MoE layer.', 'Using default MoE config. ... Config file not found at
    #   .../device_name=AMD_Instinct_MI300X.json', 'N=..,K=..,device_name=...,dtype=fp8_w8a8,block_shape=...'): torch's
    #   device name, spaces made '_' (vllm/model_executor/layers/fused_moe/fused_moe.py get_config_file_name;
    #   configs/README 'device_name (torch.cuda.get_device_name())'; ROCm names its card by device id there)
    # - tpu-inference's 'TPU info: ... | tpu_type=v6e-1 | ...' (tpu_inference/__init__.py, tpu_commons/__init__.py);
    #   tpu_commons' tpu_jax_runner.py PJRT platform version, JAX's device kind ('TFRT TPU v6 lite')
    # - nvidia-smi's table row '|   0  NVIDIA H200      On  |' pasted beside a log (a name it cut short ends in
    #   '...' and is not read; its first '|' goes with a collector's timestamp before it, as _STAMP_COLUMN reads a log
    #   view's ' | '), nvidia-smi -L's and vLLM collect_env's 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)', a script's
    #   'GPU device name: NVIDIA GeForce RTX 4090', and nvidia-smi's CSV row ('nvidia-smi --query-gpu=index,name,
    #   driver_version --format=csv' prints '0, NVIDIA GeForce RTX 3090, 580.142': noonghunna/club-3090#96), with or
    #   without the index before the name, its other fields one word each ('81559 MiB', '350.00 W' with their unit)
    # (tests/fixtures/bootlogs h200x2-qwen3-next-80b-a3b-tp2-v0102, mi300x-gemma4-26b-a4b-len32768-v0311,
    # tpu-v6e1-gemma4-12b-len2048-v0291, tpu-v6e4-tp4-len4096, h200x8-deepseek-r1-tp8-len128000-v073, rtx4090-...)
    "device_name": re.compile(
        r"\bdevice_name=([^,/\\'\"\]\s]+?)(?:,|\.json)|\| tpu_type=([\w-]+) \|"
        r"|^(?:\|\s+)?\d+\s+((?:NVIDIA|Tesla|Quadro|AMD)\b[^|]*?[^.|\s])\s+(?:On|Off)\s+\|"
        r"|^(?:GPU models and configuration:\s*)?GPU \d+: (.+?)(?:\s*\(UUID: [^)]*\))?\s*$"
        r"|^GPU device name: (.+?)\s*$|\bTFRT (TPU v\d+\w*(?: lite)?)\s*$"
        r"|^(?:\d+, )?((?:NVIDIA|Tesla|Quadro|AMD)\b[^,|]*?[^.,|\s])(?:, [\w.:/\[\]-]+(?: (?:MiB|W|%|MHz))?)+\s*$"
    ),
}
# What the command line a paste or a container prints before the log gives ('$ vllm serve M --tensor-parallel-size 2',
# ragflow#11166; SageMaker's 'vLLM engine args: [--port 8080 --tensor-parallel-size 1 ...]', sagemaker-gpt-oss-mxfp4-
# cloudwatch-csv-failed-v0), as FlexibleArgumentParser.parse_args takes it (vllm/utils/argparse_utils.py of the 0.34.0
# sdist: '--flag=value' and '--flag value', underscores in a flag's name made dashes; vllm/engine/arg_utils.py
# add_cli_args: the short forms '-tp', '-dp', '-q'). vLLM's own lines ('non-default args', the config line: _LOGGED)
# are what it parsed, the command what a paste says was typed: a key either names wins over the command's, wherever the
# command stands (parse_boot_log). The model of `vllm serve M` is _command_model's.
_COMMAND = {
    "model": re.compile(rf"(?:^|\s)--model(?:=|\s+){_MODEL_WORD}"),
    # (the number as vLLM's human_readable_int_or_auto takes it, '32k' or '32K' too: _human_readable_int)
    "max_model_len": re.compile(r"(?:^|\s)--max[-_]model[-_]len(?:=|\s+)['\"]?(\d+(?:\.\d+)?[kKmMgGtT]?)\b"),
    "max_model_len_auto": re.compile(r"(?:^|\s)--max[-_]model[-_]len[= ](auto|-1)\b"),
    "kv_cache_dtype": re.compile(r"(?:^|\s)--kv[-_]cache[-_]dtype(?:=|\s+)['\"]?([\w.]+)"),
    # '-q' read on a vLLM command only, as 'pip install -q vllm' is another program's
    "quantization": re.compile(
        r"(?:^|\s)--quantization(?:=|\s+)['\"]?([\w.-]+)|\b(?:vllm serve|api_server)\b.*\s-q(?:=|\s+)['\"]?([\w.-]+)"
    ),
    "max_num_seqs": re.compile(r"(?:^|\s)--max[-_]num[-_]seqs(?:=|\s+)['\"]?(\d+)\b"),
    # (also a prefix argparse expands, allow_abbrev being True in FlexibleArgumentParser: '--tensor_parallel 2',
    # vllm#28228; '--tensor-parallel-size' is the one option so named, vllm/engine/arg_utils.py of the 0.34.0 sdist),
    # and its short form, '-tp N' (vllm/engine/arg_utils.py add_cli_args of the 0.6.6 - 0.34.0 sdists:
    # '--tensor-parallel-size', '-tp'; 'vllm serve deepseek-ai/DeepSeek-V4-Pro --dtype auto -tp 8', vllm#53961)
    "tensor_parallel_size": re.compile(
        r"(?:^|\s)--tensor[-_]parallel(?:[-_]size)?(?:=|\s+)['\"]?(\d+)\b|(?:^|\s)-tp(?:=|\s+)['\"]?(\d+)\b"
    ),
    "data_parallel_size": re.compile(
        r"(?:^|\s)--data[-_]parallel[-_]size(?:=|\s+)['\"]?(\d+)\b|(?:^|\s)-dp(?:=|\s+)['\"]?(\d+)\b"
    ),
    # (a number, so a sentence's full stop after it is not read: 'set --gpu-memory-utilization 0.9.'; one followed by
    # 'without' is 0.21+'s notice's equivalent, not the deployment's, even where a paste wrapped the notice)
    "gpu_memory_utilization": re.compile(
        r"(?:^|\s)--gpu[-_]memory[-_]utilization(?:=|\s+)['\"]?(\d*\.?\d+)(?![\d.]*\s+without\b)"
    ),
}
# Where `vllm serve`'s arguments start: the command, or the vllm/vllm-openai image, whose ENTRYPOINT is
# ["vllm", "serve"] (docker/Dockerfile of the 0.28.0 - 0.34.0 sdists), so the words after it are serve's
_SERVE_ARGS = re.compile(r"(?:^|[\s\[`$#>;|&(])vllm serve(?=\s|$)|\bvllm/vllm-openai(?:-\w+)?(?::[\w.+-]+)?(?=\s|$)")
_MODEL_REF = re.compile(_MODEL_WORD)
# a word argparse reads as an option, never as the value of the option before it ('expected one argument'): one that
# starts with '-' and is no negative number (argparse.py _negative_number_matcher, '^-\d+$|^-\d*\.\d+$', with a
# parser that has no option looking like one: vLLM's has none); so a switch of an older release that 0.34 dropped
# ('--enable-reasoning', _switches not knowing it) does not swallow the option after it
_OPTION_WORD = re.compile(r"-(?!\d+$|\d*\.\d+$).")


@functools.cache
def _switches() -> frozenset[str]:
    """The serve flags that take no value (catalog/vllm_flags.json switches, scripts/gen_vllm_flags.py)."""
    return frozenset(catalog.vllm_flags().switches)


def _command_model(text: str) -> str | None:
    """The model `vllm serve` (or the vllm/vllm-openai image) is given on the line `text`, as its parser reads it:
    the positional model_tag ('vllm serve [model_tag] [options]', vllm/entrypoints/cli/serve.py of the 0.34.0 sdist),
    which argparse takes from the first word that is neither an option nor an option's value. An option takes the
    word after it unless it is written '--flag=value', takes no value (_switches: store_true, BooleanOptionalAction
    and the like, read in the newest release's sources) or that word is an option (_OPTION_WORD), so 'vllm serve
    --tokenizer X M' serves M, and so does 'vllm serve --enable-reasoning --reasoning-parser R M'; underscores in an
    option's name are dashes (FlexibleArgumentParser). That word must be a model reference (_MODEL_WORD: not a shell
    variable, a placeholder or a sentence's word); None when it is not or the line names no serve command."""
    match = _SERVE_ARGS.search(text)
    if match is None:
        return None
    rest = text[match.end() :]
    try:
        words = shlex.split(rest)  # a quoted value with spaces is one word, as the shell passes it
    except ValueError:  # an unclosed quote or a continuation's '\\' at the end: the words as written
        words = rest.split()
    i = 0
    while i < len(words):
        word = words[i]
        if len(word) > 1 and word.startswith("-"):
            name = word.split("=", 1)[0]
            name = name[:2] + name[2:].replace("_", "-")
            after = words[i + 1] if i + 1 < len(words) else ""
            takes_next = "=" not in word and name not in _switches() and not _OPTION_WORD.match(after)
            i += 2 if takes_next else 1
            continue
        ref = _MODEL_REF.match(word)
        return ref.group(1) if ref else None
    return None


# A 'non-default args:' line whose dict a paste wrapped onto the lines after it (a transcription hard-wrapped at ~90
# columns: 'non-default args:' then "  {'model_tag': ..., 'model': '...'," and "   'max_model_len': 8192, ...}",
# tests/fixtures/bootlogs rtxpro4000-qwen25-7b-awq-len8192-util090-v0280-wrapped): the lines up to the one that closes
# the dict are read as one, for _LOGGED, at most _ARGS_LINES of them (a paste cut inside the dict is read no further)
_ARGS_OPEN = re.compile(r"non-default args:")
_ARGS_LINES = 12
# How far a GPU's logged total may stray from its catalog figure and still be the same card: drivers and boards move it
# (80 GB cards log 79.11 - 79.33 GiB; a Tesla T4 14.56 GiB and, on driver 11.2, 14.74 GiB: accelerators.json sources;
# the RTX 4060 of tests/fixtures/bootlogs rtx4060-qwen25-7b-util070-len4096-refused-v0 logs 8.00 GiB against 7.87,
# +1.6%), while cards of other sizes lie 10% or more apart (A100 40GB 39.49 GiB, L40 44.39 GiB)
_SAME_CARD = 0.03
# (planned chip, device name a log printed) -> the card that name means when it is another one, else None (an unmapped
# name says nothing): planner.chips.other_card, passed in by the caller (vllm/ sits below planner/)
OtherCard = Callable[[str, str], str | None]


class Platform(NamedTuple):
    """A platform vLLM runs on, as a boot log shows it (PLATFORMS)."""

    name: str  # what `onechip logs` and plan --against call it
    engine: str | None  # the engine rules (catalog/engines.json) that plan it; None: no engine rule does
    marks: str  # a pattern of the lines only a boot on it prints


# The platform a log is of, by the lines only it prints, first match in this order wins: vLLM's own 'Platform plugin %s
# is activated' for an out-of-tree plugin (the name it registers under vllm.platform_plugins) and 'Automatically
# detected platform %s.' for a built-in one (vllm/platforms/__init__.py resolve_current_platform_cls_qualname, 0.8.5 -
# 0.34.0: the corpus logs and the 0.32.0 and 0.34.0 sdists), the engine config line's 'device_config=' (the platform's
# device_type), V0's '# %s blocks' (executor_base.py, the device name), the token line's device word (from 0.30:
# kv_cache_utils.py _kv_cache_device_name, 'GPU' for cuda, else the device type upper-cased; 'GPU' before it on every
# platform, so 'GPU' tells nothing), and what a plugin prints of its own where an excerpt keeps none of those. The
# plugins first: vllm-metal and vllm-spyre report device type 'cpu' (vllm_metal/platform.py MetalPlatform @ 211a1e4,
# vllm_spyre/platform.py SpyrePlatform @ fc6b54b9), so their logs say 'device_config=cpu' and 'CPU KV cache size' as
# vLLM's CPU backend does (tests/fixtures/bootlogs mac-m4-metal-qwen3-0.6b-util030-len4096-v0300-wrapped). A plugin's
# own lines, each at the commit named:
# - vllm-metal (entry point 'metal', pyproject.toml @ 211a1e4): platform.py check_and_update_config 'Metal: chunked
#   prefill enabled (paged attention), ...' and 'Metal memory: %.1fGB total, %.1fGB available', v1/worker.py
#   init_device 'MLX device set to: ...', v1/cache_policy.py 'Paged attention: not enough Metal memory for KV cache.'
#   (mac-metal-qwen3-0.6b-frac020-len4096-v0230; vllm-project/vllm-metal#398)
# - vllm-spyre ('spyre', pyproject.toml @ fc6b54b9): platform.py '%s KV cache size: %s tokens' with 'Spyre' on the card
#   ('CPU' off it) and 'Spyre constraint: num blocks rounded ...'
# - vllm-gaudi ('hpu', setup.py @ 091bbadd; HabanaAI's earlier vllm_hpu plugin registers 'hpu' too): device_type 'hpu'
#   (vllm_gaudi/platform.py), the HPU bridge's 'HPU PT BRIDGE CONFIGURATION' table
#   (gaudi3-llama31-8b-len4096-eager-v0-hpu-plugin-v091dev); HabanaAI's V0 worker before the plugin, in its vllm-fork,
#   writes the device upper-case, '# HPU blocks: 4107, # CPU blocks: 256' (habana_executor.py / hpu_executor.py:
#   f"# HPU blocks: {num_gpu_blocks}, ...", search-index file ids 21543343658 and 6128983866) and states its HPU-graph
#   reserve, '7.13 GiB reserved for HPUGraphs (VLLM_GRAPH_RESERVED_MEM=0.1)' (habana_worker.py / hpu_worker.py;
#   gaudi2-llama31-8b-util090-habana-v0-docs)
# - vllm-ascend ('ascend', setup.py @ 182b75ea84): device_type 'npu' (vllm_ascend/platform.py; its own token line
#   'NPU KV cache size: %s tokens', ascend-qwen3-vl-8b-len16384-v0180 prints vLLM 0.18's 'GPU KV cache size'), and its
#   NPUWorker's closing line '..., 0.0 GiB for NPU graph memory. ...' (vllm_ascend/worker/worker.py, search-index file
#   ids 55862559283 and 59654600633; ascend-dsv4-flash-dp2-tp8-closing-line-excerpt, which keeps no other vLLM line)
# - tpu-inference: the built-in 'tpu' platform, its 'TPU info: ... | tpu_type=', 'Memory statistics | total_hbm_...' and
#   module names (tpu_inference, tpu_commons, tpu_platform.py: tpu-v6e1-gemma4-e2b-len32768-v0261 prints 'GPU KV cache')
PLATFORMS: dict[str, Platform] = {
    "metal": Platform(
        "Apple Metal via vllm-metal", None,
        r"Platform plugin metal is activated|\bMetal memory: [\d.]+\s*GB total|\bMetal: chunked prefill"
        r"|\bMLX device set to\b|not enough Metal memory for KV cache|\bvllm_metal\b",
    ),
    "spyre": Platform(
        "IBM Spyre via vllm-spyre", None,
        r"Platform plugin spyre is activated|\bSpyre KV cache size\b|\bSpyre constraint:|\bvllm_spyre\b",
    ),
    "hpu": Platform(
        "Intel Gaudi (HPU) via vllm-gaudi", None,
        r"Platform plugin hpu is activated|\bdevice_config=hpu\b|# (?:hpu|HPU) blocks:|\bHPU KV cache size\b"
        r"|\breserved for HPUGraphs\b"
        r"|\bvllm_(?:gaudi|hpu)\b|\bHPU PT BRIDGE CONFIGURATION\b",
    ),
    "ascend": Platform(
        "Huawei Ascend (NPU) via vllm-ascend", "vllm-ascend",
        r"Platform plugin ascend is activated|\bdevice_config=npu\b|# npu blocks:|\bNPU KV cache size\b"
        r"|\bGiB for NPU graph memory\b"
        r"|\bvllm_ascend\b",
    ),
    "tpu": Platform(
        "Google TPU via tpu-inference", "vllm-tpu",
        r"Automatically detected platform tpu\.|\bdevice_config=tpu\b|# (?:tpu|TPU) blocks:|\bTPU KV cache size\b"
        r"|\| tpu_type=|\btotal_hbm_limit_gb=|\btpu_inference\b|\btpu_commons\b|\[tpu_platform\.py:",
    ),
    "xpu": Platform(
        "Intel GPU (XPU)", "vllm-gpu",
        r"Automatically detected platform xpu\.|\bdevice_config=xpu\b|# xpu blocks:|\bXPU KV cache size\b",
    ),
    "rocm": Platform("AMD GPU (ROCm)", "vllm-gpu", r"Automatically detected platform rocm\.|# rocm blocks:"),
    "cpu": Platform(
        "vLLM's CPU backend", "vllm-cpu",
        r"Automatically detected platform cpu\.|\bdevice_config=cpu\b|\bCPU(?: \+ host)? KV cache size\b"
        r"|\b(?:Explicitly|Auto) set \([\d.]+/[\d.]+\) GiB for KV cache",
    ),
    "cuda": Platform(
        "NVIDIA GPU (CUDA)", "vllm-gpu", r"Automatically detected platform cuda\.|# (?:cuda|CUDA) blocks:"
    ),
}  # fmt: skip
_PLATFORM_MARK = re.compile("|".join(f"(?P<{key}>{platform.marks})" for key, platform in PLATFORMS.items()))
# Intel GPUs' V1 worker of 0.9 - 0.14 prints the card's memory in MiB, labelled 'MB' ('Before memory profiling run,
# total GPU memory: %.2f MB, model load takes %.2f MB, free gpu memory is %.2f MB.', total / 1024**2:
# vllm/v1/worker/xpu_worker.py of the 0.9.2, 0.11.0, 0.13.0 and 0.14.1 sdists; 0.16+ runs the CUDA worker's lines):
# logged as GiB
_XPU_TOTAL_MIB = re.compile(r"Before memory profiling run, total GPU memory: (\d+(?:\.\d+)?) MB\b")
_COMPILE = re.compile(r"\(compilation: (\d+(?:\.\d+)?) s\)|torch\.compile takes (\d+(?:\.\d+)?) s in total")
_PROGRAM_ALLOC = re.compile(r"RuntimeProgramAllocationFailure: Attempting to reserve ([\d.]+\w?)")
_PROGRAM_FREE = re.compile(r"There are ([\d.]+\w?) free")
_EXCEPTION = re.compile(r"^(?:ERROR [^\]]*\] )?([\w.]*(?:Error|Exception|Failure): .+)")
# vLLM's wrappers around a worker's exception, printed after it: the engine client's 'RuntimeError: Engine core
# initialization failed. See root cause above.' (vllm/v1/engine/utils.py) and the executor's 'Exception: WorkerProc
# initialization failed due to an exception in a background process. See stack trace for root cause.'
# (vllm/v1/executor/multiproc_executor.py); the cause is the exception before them (h100x5-qwen3-14b-tp5-refused-v0190).
# Known by their opening words too, which a paste keeps where it drops the pointer after them
# (rtx5060tix2-qwen36-27b-int4-autoround-tp2-nccl-failed-v0202: 'Exception: WorkerProc initialization failed due to an
# exception in a background process.'); 0.34's client also raises 'Frontend process failed during engine core
# initialization. See root cause above.' (vllm/v1/engine/utils.py)
_WRAPPER = re.compile(
    r"See root cause above|See stack trace for root cause|^Exception: WorkerProc initialization failed due to an "
    r"exception in a background process|^RuntimeError: (?:Engine core initialization failed|Frontend process failed "
    r"during engine core initialization)\b"
)
# What a worker raises after another process failed, never the cause where another exception names one: vLLM 0.19.0's
# worker_main (vllm/v1/executor/multiproc_executor.py, line 832) sends READY through its pipe once its model is loaded,
# and where the engine core has already exited for another rank's failure ('Parent process exited, terminating worker
# queues', monitor_death_pipe) that pipe is closed: BrokenPipeError (h100-llama31-8b-dp2-one-gpu-refused-v0190: DP rank
# 1's assertion, then DP rank 0's broken pipe 14 s later); a reset connection is the same end seen from a socket
_AFTERMATH = re.compile(r"^(?:BrokenPipeError|ConnectionResetError)\b")
# A pydantic ValidationError's own line names only the model ('1 validation error for ModelConfig'); the message is on
# the rows below it, '  Value error, <the validator's ValueError> [type=value_error, input_value=..., input_type=...]'
# ('Assertion failed, ...' for an AssertionError; pydantic-core src/errors/types.rs ErrorType::ValueError /
# AssertionError), after the field's location where there is one (h100-phi2-len8192-refused-v0190,
# h100-gemma4-e4b-unknown-model-type-refused-v0190)
_VALIDATION_ERROR = re.compile(r"ValidationError: \d+ validation errors? for ")
_VALIDATION_ROW = re.compile(r"(?:^\s*|\s)(?:Value error|Assertion failed), (.+?)(?:\s*\[type=\w+.*)?$")
_VALIDATION_ROWS = 3
# What pastes and log collectors put before vLLM's own text, stripped (any number, any order) before a line's level or
# exception is read: ANSI colours (raw, or as a terminal copy shows them, '^[[0;36m'), a docker compose service column
# ('vllm-service  | ', intel/llm-scaler#672), a Markdown or chat quote marker ('> ', '▎ ', eugr/spark-vllm-docker#396)
# or a Markdown inline-code tick ('`(EngineCore_DP0 pid=1094) ValueError: ...', vllm#34076), a `docker logs -t` /
# kubectl timestamp, a systemd journal / syslog line head for a service ('авг 18 14:15:02 llm python3[28059]: ', month
# in the host's locale, v100x4-1cat-len8192-journald), and vLLM's process tags, Ray's with their node ('(EngineCore_DP0
# pid=N) (RayWorkerWrapper pid=N, ip=A) ', MiniMax-AI/MiniMax-M2.5#30), torch.distributed's rank tag ('[rank0]: ',
# rtx5090x2-qwq32b-bnb-pp2-len60000-refused-v085), `kubectl logs --prefix`'s '[pod/NAME/CONTAINER] ' and Slurm's task
# label (`srun --label`: '0: ' before each line of task 0, its number padded to the widest). The journal head comes in
# journalctl's default 'short' form (the month in the host's locale) and its '-o short-iso' / 'short-iso-precise' forms
# ('2025-08-18T14:14:46+0300 llm python3[28147]: ', ISO 8601 with the offset written without a colon,
# systemd/systemd#26639; '+03:00' is accepted too).
# A tqdm progress bar that ends without a newline leaves the next log line glued to it (offline runs, a bar and a log
# line from two processes on one stream): tqdm's default bar '{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}
# [{elapsed}<{remaining}, {rate_fmt}{postfix}]', its form without a total '{n}it [{elapsed}, {rate}]' (the tqdm(1) man
# page: 'counting: 100%|█████████| 432/432 [00:00<00:00, 794361.83files/s]', '327it [00:00, 981773.38it/s]') and vLLM's
# weight-loading bar ('Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.90it/s]', the corpus
# logs) are stripped as a prefix; a bar redrawn after '\r' is a line of its own already (str.splitlines splits at '\r')
# Before any of that, what a copy or an export turned vLLM's text into (_plain): a terminal's 'Copy as HTML' (GNOME
# Terminal's VTE: '<pre><font color="#2AA1B3"><b>(APIServer pid=18675)</b></font> INFO ...', quotes as '&apos;', '<'
# as '&lt;'; infiniflow/ragflow#9856 and #11166), and a log export of rsyslog-escaped lines (control characters
# written as '#' and three octal digits, so ESC is '#033' and the CR that ends a line '#015') in CSV rows behind an
# epoch-milliseconds column, quoted fields doubling their '"' (SageMaker's CloudWatch rows,
# aws-samples/amazon-sagemaker-generativeai#111: '1756144011375,#033[1;36m(VllmWorker pid=96)#033[0;0m ERROR ...#015')
_ANSI = re.compile(r"(?:\x1b|\^\[|#033)\[[\d;]*m")
_MARKUP = re.compile(r"</?(?:pre|font|b|i|u|span)\b[^>]*>")
_EXPORT_ROW = re.compile(r'^\d{13},(?:"(.*)"|(.*))$')
_ESCAPED_CR = re.compile(r"(?:#015)+$")
_JOURNAL_DATE = (
    r"(?:[^\W\d_]{3,5}\.? {1,2}\d{1,2} \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d))"
)
_TQDM = (
    r"[^|\[\]]*?(?:\d+%(?:\|[^|]*\|| Completed \|) *[\d.]+\w?/[\d.?]+\w?|[\d.]+\w?it) \[[\d:]+(?:<[\d:?]+)?,[^\]]*\]"
)
# A timestamp a collector or a log viewer writes before each line: `docker logs -t` / kubectl's RFC 3339 stamp
# ('2025-08-18T14:14:46.123456789Z '), and a viewer's date-and-time column ending in ' | ' ('2026-05-01 22:44:30.255 |
# (APIServer pid=1) WARNING ...': a Docker container log view with its timestamps shown, copied as text,
# gpu-wsl-qwen36-35b-a3b-nvfp4-kvfp8-len65536-v0200-stamped); the date is ISO 8601, the time separated by 'T' or a
# space, with optional fractions and zone
_STAMP_COLUMN = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?(?:\s+\|\s?|\s+)"
# vLLM's process tag is '(NAME pid=N) ' (vllm/utils decorate_logs), and NAME may hold spaces: 0.8.x workers
# '(VllmWorker rank=1 pid=106)' (a10x4-qwen3-30b-a3b-tp4-len8192-v085), 0.10.x '(VllmWorker TP0 pid=1430)'
# (a100x2-qwen2-7b-tp2-util025-v01011), 0.11+ '(Worker_TP0 pid=N)'
_PREFIX = re.compile(
    rf"^(?:{_JOURNAL_DATE} [\w.-]+ [\w./-]+\[\d+\]:\s?|{_TQDM}|[\w.-]+\s+\|\s?|[>▎│┃`]\s?"
    rf"|{_STAMP_COLUMN}|\([\w-]+(?: [\w=-]+)* pid=\d+(?:, ip=[\w.:-]+)?\)\s*|\[rank\d+\]:\s*"
    rf"|\[pod/[\w.-]+/[\w.-]+\]\s|\d{{1,5}}: )"
)


# vLLM's JSON logging: the built-in `--logging-config.formatter json` of 0.34 (python-json-logger's JsonFormatter with
# 'asctime levelname name processName process message vllm_process_name', vllm/logging_utils/formatter.py JSON_FORMAT)
# or a VLLM_LOGGING_CONFIG_PATH / pylogging_config_file naming a JSON formatter (examples/features/
# logging_configuration.md of the 0.33.0 and 0.34.0 sdists; with no format of its own it writes 'message' only): one
# JSON object a line, behind vLLM's process tag where the version still prepends it to stdout. Read as the text line
# vLLM would print, 'LEVEL MM-DD HH:MM:SS message' (what the record has of these), then the traceback
# python-json-logger puts in 'exc_info' as lines of their own (_records)
_JSON_TIME = re.compile(r"^\d{4}-(\d\d-\d\d)[T ](\d\d:\d\d:\d\d)")


def _json_record(bare: str) -> str | None:
    """The text of a JSON log record `bare` (a bare line) as vLLM's text formatter prints it, its exc_info on the lines
    after it; None when `bare` is no JSON object with a 'message'."""
    if not (bare.startswith("{") and bare.endswith("}")):
        return None
    try:
        record = json.loads(bare)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(message := record.get("message"), str):
        return None
    head = [level] if isinstance(level := record.get("levelname"), str) else []
    if isinstance(when := record.get("asctime"), str) and (match := _JSON_TIME.match(when)):
        head.append(f"{match.group(1)} {match.group(2)}")
    exc = record.get("exc_info")
    return " ".join([*head, message]) + (f"\n{exc}" if isinstance(exc, str) else "")


# A log hard-wrapped at a terminal's width (a console that copies each screen row as a line, a paste re-wrapped at 80 or
# 120 columns, the published dennislee22/vLLM-benchmarking logs at 147): every row of a wrapped line but its last is
# exactly the width long (in columns: colour codes aside), and no other line is longer. The width is told by the
# longest length being held by at least _WRAPPED_ROWS lines of _WRAP_MIN or more characters (one line wrapped once
# gives two; of the corpus's unwrapped logs one has its longest length on two lines, each followed by a log line of
# its own, none on more); a row of that length is joined with the next unless the next starts a log line of its own
# (vLLM's process tag or level); a Markdown quote's marker, which a quoted wrapped paste repeats on every row, is
# dropped from the row joined (_unwrapped)
# A log word-wrapped at that width (`fold -s -w 80`, a mail or chat box breaking at spaces) breaks a line at its last
# space that fits instead: fold keeps the space at the row's end, a chat box drops it. A greedy wrap breaks a row only
# where the next word would not fit, so a row is a wrap's when it and the next row's first word exceed the width
# (_soft_break); such a row is joined with the next unless the next is a line of its own, and only on a line vLLM's
# logger starts (each of its records opens with its process tag or 'LEVEL MM-DD HH:MM:SS', _HEAD), a serve command or
# a paragraph of the user's own words (_opens_record): a log's other lines without a head (tracebacks, tqdm bars, a
# pasted excerpt's bare lines) are no record a wrap broke. The rows so read must be at least _WRAPPED_ROWS, as a hard
# wrap's: one long line before a line of no head in a plain log is none
# A log that does not end in a newline may end inside a line: one still being written (`onechip up` and `status` read
# the engine's log while it boots; a line longer than the writer's buffer goes out in pieces), a paste cut at a size
# limit. A word with a digit it ends in may be the start of a longer one ("'max_model_len': 81" of 8192, 'version 0.1'
# or '0.6.4.post' of 0.6.4.post2, 'num_gpu_blocks is: 297' of 29751), so it is not read unless a unit or a closing
# mark ends it ('58.11x', '23.84GiB', '8192,'); every figure vLLM prints last on its line is whole once the newline
# follows (read_log_text keeps a file's last newline)
_CUT_NUMBER = re.compile(r"(?<!\S)(?!\S*(?:[x)%,;\]}'\"]|GiB|GB|MiB|MB|s)$)\S*\d\S*$")
_WRAPPED_ROWS = 2
# vLLM's level and what its logger prints after it (vllm/logger.py _FORMAT, 0.2 - 0.34: '%(levelname)s %(asctime)s
# [%(filename)s:%(lineno)d] %(message)s', asctime as '%m-%d %H:%M:%S'; 0.2 - 0.4 wrote 'utils.py:287]' without the
# '[', and plugins their name before it: vllm-mindspore's 'vllm-mindspore[...]', omni-npu's 'omni-npu[...]'); the same
# level with its date left out ('INFO [utils.py:287] ...': a logging config whose format has no asctime, a collector
# that moved the time to a field of its own) still opens a record: the level then the file and line
_LEVEL_HEAD = r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (?:\d\d-\d\d \d\d:|(?:[\w-]*\[)?[\w./-]+\.py:\d+\] )"
# A table's row, border to border (nvidia-smi's '| ... |' and '+---+', printed beside vLLM's lines): its rows share
# one width, the widest of a short excerpt, and are no terminal's wrap (tests/fixtures/bootlogs
# a100-qwen25-vl-7b-util022-len128000-refused-v0230 prints one; its card row lost its name when joined)
_TABLE_ROW = re.compile(r"^\s*[|+].*[|+]\s*$")
_FILE_LINE = re.compile(r"(?:[\w-]*\[)[\w./-]+\.py:\d+\] ")  # '[%(filename)s:%(lineno)d] ' (_LEVEL_HEAD)
_WRAP_MIN = 60
# A line that opens a line of its own, never the rest of one a wrap broke: vLLM's process tag or level and stamp, and
# the two lines Python's traceback module starts on a line of their own: the header (traceback.format_exception's first
# line; a plain log's ERROR record as long as its longest line, the header after it, read as a wrap's row before) and
# the exception's 'Type: message' (format_exception_only: the type's qualified name, 'module.Name' outside builtins,
# then ': '), the type a CamelCase name of two capitals at least (RuntimeError, OSError, torch.OutOfMemoryError). A
# process's stderr print of one (the seed's v5e 'RuntimeProgramAllocationFailure: Attempting to reserve 384.11M ...',
# tests/data/vllm_tpu_seed_095_failure.log) after a shorter INFO record was joined to it as its wrapped tail, and the
# boot's cause was lost
_OWN_LINE = re.compile(
    rf"^(?:\(\S[^)]*pid=\d+|{_LEVEL_HEAD}|Traceback \(most recent call last\):"
    r"|(?:[A-Za-z_]\w*\.)*[A-Z][a-z0-9]*[A-Z]\w*:(?:\s|$))"
)
_QUOTE = re.compile(r"^(?:[>▎│┃] ?)+")


def _own_line(row: str) -> bool:
    """Whether `row` opens a line of its own (_OWN_LINE: vLLM's process tag or level and stamp, a traceback's header),
    before or after the prefixes a paste or collector puts first (_PREFIX), or a table's row."""
    plain = _plain(row).strip()
    return bool(_OWN_LINE.match(plain) or _OWN_LINE.match(_unprefixed(plain)) or _TABLE_ROW.match(row))


_WORD = re.compile(r"\S+\s?")
# A chat box breaks at the last blank that fits and drops it: inside a run of two blanks (vLLM's logo pads its version
# with two, '█  version 0.22.1') that blank is the run's first only where the second is past the box's width, so the
# row is the box's width less one and the next opens with the run's one blank left
_CHAT_RUN = re.compile(r" \S")
_DIGITS = re.compile(r"\d+")
_BLANK_INSIDE = re.compile(r"\S\s+\S")


def wrap_row(before: str, row: str) -> bool:
    """Whether `row` may be a row a word wrap broke off the line `before` it (_unwrapped): it is not blank, starts with
    no space (a word wrap leaves its spaces on the row before; only where `before` ends in one may `row` open with the
    rest of a run of blanks the wrap broke inside, _soft_break), opens no line of its own, and its first word is not
    of the shape `before`'s is, digits aside (a collector's prefix put before every row, a `kubectl logs --timestamps`
    stamp or journalctl's '-o short-unix' head, was put after any wrap: '2026-01-01T10:00:00.123Z 25809' is no rest of
    '... num_gpu_blocks is:'). A quote's marker both rows open with is put after the wrap too (a reply quoting a
    wrapped paste, _QUOTE) and is read past, and so are the spaces of a hanging indent (_hanging). What a reader of a
    log line by line (log_summary) holds `before` for, where it holds `row`."""
    before, row = _unquoted(before, before), _unquoted(before, row)
    row = row[_hanging(before, row) :]
    if before[-1:].isspace() or _CHAT_RUN.match(row):
        row = row.lstrip(" ")
    if not row[:1].strip() or _own_line(row):
        return False
    return _DIGITS.sub("0", row.split(None, 1)[0]) != _DIGITS.sub("0", (before.split(None, 1) or [""])[0])


def _unquoted(before: str, row: str) -> str:
    """`row` without the Markdown or chat quote's marker that `before` opens with (_QUOTE), where it opens with the
    same: a reply quoting a paste puts it before every row the paste's wrap made (mail's '> ', GitHub's 'Quote
    reply'), so the row's own text, the rest of a broken line, starts after it."""
    quote = _QUOTE.match(before)
    return row[quote.end() :] if quote and row.startswith(quote.group()) else row


def _soft_break(row: str, columns: int, after: str, width: int) -> bool:
    """Whether a greedy word wrap at `width` columns broke a line between `row` (`columns` wide) and `after`: the
    first word of `after`, with the blank after it, did not fit on `row` after the blank before it (kept at `row`'s end
    by `fold -s`, dropped by a chat box). GNU fold -s breaks before a word that ends at the width where a blank
    follows it ('aaaa bbbb cccc' at 9 columns: 'aaaa ' then 'bbbb cccc'), and past the width it breaks inside a run
    of blanks: the row keeps those of its first `width` columns and the next opens with the rest (fold.c; vLLM's logo
    line '█  version 0.22.1'), so a row opening with a blank is a wrap's only after a row of the width ending in one,
    or (a chat box) one blank then a word after a row of the width or one less not ending in one (_CHAT_RUN)."""
    if after[:1] == " ":
        if not row[-1:].isspace():  # a chat box's break in a run of blanks: _CHAT_RUN
            return columns >= width - 1 and bool(_CHAT_RUN.match(after))
        return columns == width and bool(after.strip())
    if not (word := _WORD.match(after)):
        return False
    return columns + (0 if row[-1:].isspace() else 1) + len(word.group()) > width


def _opens_record(lines: list[str], i: int, paragraph: bool = True) -> bool:
    """Whether `lines[i]` opens a record a word wrap may break: a line of vLLM's logger (_HEAD), a serve command, or
    (`paragraph`) a paragraph of the paste's own text (its first line or one after a blank line, not indented: a
    user's words before the log, 'On 2x DGX Spark (TP=2, ..., vLLM 0.29.1rc1...)')."""
    line = lines[i]
    if paragraph and (i == 0 or not lines[i - 1].strip()) and line[:1].strip():
        return True
    plain = _plain(line)
    return bool(_HEAD.search(plain, 0, _HEAD_AFTER) or _SERVE_ARGS.search(plain))


def _opens_message(row: str) -> bool:
    """Whether `row` opens a message the grammar reads (_MESSAGES: one of its patterns matches where the row's text
    starts, behind what a paste or collector put first) or a record of its own: vLLM's '[file.py:N] ' with the level
    and date cut off (_LEVEL_HEAD's file and line), a log export's row (_EXPORT_ROW: its time in ms, then the line). A
    pasted excerpt of bare messages (no head, no stamp) is told from its rows a wrap broke by this alone. A sentence's
    start is none: vLLM's refusals are messages of several sentences on one line ('... memory (5.59 GiB). Based on the
    available memory, the estimated maximum model length is 122080. ...', gpu-kvfp8-len221000-refused-issue25350)."""
    if _EXPORT_ROW.match(row):
        return True
    bare = _unprefixed(_plain(row))
    return bool(_FILE_LINE.match(bare)) or any(pattern.match(bare) for pattern in _MESSAGES)


def _kept_blanks(lines: list[str], columns: list[int], width: int) -> bool:
    """Whether the rows of the width among `lines` (`columns` wide, the widest `width`) are `fold -s` rows, not a
    terminal's: none is cut inside a word (each that the next row continues, wrap_row, ends in the blank fold keeps,
    or the next row opens a message of its own, _opens_message), and at least _WRAPPED_ROWS rows end in that blank
    before a row whose first word did not fit (_soft_break), one of them short of the width, which a terminal's rows
    never are. A word-wrapped bare excerpt whose rows fill the width twice was read as a hard wrap
    (rtx3090-llama31-8b-len29000-refused-v0 at 109 columns: the profiler line's last row is 109 wide, '# GPU blocks:
    1478' was joined onto it, and the refusal's rows were not joined). A vLLM warning printed over lines of its own,
    each ending in a blank (Ray's 'which can degrade the ' then 'performance unless ...',
    a100x2-40gb-qwen2-7b-tp2-ray-2nodes-util050-v01011), hard-wrapped, still has rows of the width cut in a word."""
    kept, short = 0, False
    for i, line in enumerate(lines[:-1]):
        blank = line[-1:] == " " and bool(line.strip())
        if not (blank or columns[i] == width) or not wrap_row(line, lines[i + 1]):
            continue
        blank = blank and _soft_break(line, columns[i], _unquoted(line, lines[i + 1]), width)
        if columns[i] == width and not blank and not _opens_message(lines[i + 1]):
            return False
        kept += blank
        short = short or (blank and columns[i] < width)
    return kept >= _WRAPPED_ROWS and short


# A comma-grouped figure ('{:,}': vLLM's token line '321,280 tokens', 'for 8,192 tokens') cut inside a group: a row ends
# in a group of fewer than three digits that the next row's digits complete
_CUT_GROUP = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})*,\d{0,2}$")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+")


def _broken_once(lines: list[str], columns: list[int], width: int) -> list[str]:
    """`lines` with the one row of the widest length (`width`) joined to the next where only a wrap explains its end:
    the blank `fold -s` keeps before a word that did not fit (_soft_break), or a comma-grouped figure cut inside a group
    that the next row's digits make whole (_CUT_GROUP); the next row continues it (wrap_row) and opens no message of
    its own (_opens_message). A paste wrapped once has one such row, and the width rule needs two (v100-qwen25-7b-
    fp16-v085 folded at 127 - 160: 'the ' then 'rest of the memory reserved for KV Cache is 9.88GiB.'). Its risk: a log
    whose longest line ends in a blank and is followed by a line of no head that no message of the grammar starts is
    read as one line (a warning vLLM prints over lines of its own, each ending in a blank, is one message anyway)."""
    if columns.count(width) != 1 or (i := columns.index(width)) + 1 == len(lines):
        return lines
    row, after = lines[i], _unquoted(lines[i], lines[i + 1])
    if not wrap_row(row, lines[i + 1]) or _opens_message(lines[i + 1]):
        return lines
    kept = row[-1:] == " " and row.strip() != "" and _soft_break(row, width, after, width)
    cut = _CUT_GROUP.search(row)
    if not kept and not (
        cut and after[:1].strip() and _GROUPED.fullmatch(cut.group() + after.split(None, 1)[0].rstrip(",.;:"))
    ):
        return lines
    return [*lines[:i], row + after, *lines[i + 2 :]]


# A hanging indent: a wrap that opens each row after a line's first with the same few spaces (Python's textwrap.fill
# with subsequent_indent, counted in the width; a chat client's wrap; a log quoted inside a Markdown list item, whose
# rows CommonMark indents by the item's marker and the blanks after it, '- ' to '10.    ': 2 - 8 columns). Such a row
# is a wrap's only where the row before is a line's first row (or a row so continued) broken by the wrap (_soft_break,
# on the row without its indent), and it is none of what a log indents of its own: a traceback's frame or caret line
# (traceback.format_list: '  File "...", line N, in f' and the source line under it at four; Python 3.11+ carets
# '    ^^^^'), a Python repr that pprint continued under its opening bracket (pprint.pformat indents a container's next
# items to the column after its '{', '[' or '('), a YAML or JSON block's line ('  key: value', '  - item',
# '  "key": 1,', a closing bracket) after a line that opens one
_HANGING = re.compile(r"^ {2,8}(?=\S)")
_FRAME_ROW = re.compile(r'^\s*(?:File "[^"]*", line \d+|[~^]+\s*$)')
_BLOCK_ROW = re.compile(r'^\s*(?:- |"[^"]*"\s*:|[\w.-]+:(?:\s|$)|[\]})],?\s*$)')
_OPENS_BLOCK = re.compile(r"[:{\[(,]\s*$")


def _hanging(before: str, row: str) -> int:
    """The indent (spaces) a hanging-indent wrap put before `row` where `row` may be the rest of `before` (_HANGING);
    0 where it is indented as no such wrap indents: a traceback's frame or caret line, a repr continued under the
    bracket `before` opens at the column before the indent, a YAML or JSON block's line after a line that opens one."""
    if not (match := _HANGING.match(row)) or _FRAME_ROW.match(row) or _FRAME_ROW.match(before):
        return 0
    indent = match.end()
    if before[indent - 1 : indent] in ("{", "[", "(") or (_BLOCK_ROW.match(row) and _OPENS_BLOCK.search(before)):
        return 0
    return indent


def _hung(lines: list[str], columns: list[int], width: int) -> dict[int, int]:
    """The rows of `lines` (`columns` wide, the widest `width`) that a hanging-indent wrap indented, each with its
    indent: the one indent that at least _WRAPPED_ROWS rows open with after a line's first row, or a row of that
    indent, broken by the wrap (_soft_break on the row without it), and each row of that indent after a line's first
    row or one so continued. Empty where no wrap indented rows."""
    indents: collections.Counter[int] = collections.Counter()
    for i in range(len(lines) - 1):
        row = lines[i]
        if (indent := _hanging(row, lines[i + 1])) and (row[:1].strip() or len(row) - len(row.lstrip(" ")) == indent):
            indents[indent] += _soft_break(row, columns[i], lines[i + 1][indent:], width)
    indent, count = max(indents.items(), key=lambda item: (item[1], -item[0]), default=(0, 0))
    if count < _WRAPPED_ROWS:
        return {}
    hung: dict[int, int] = {}
    for i in range(1, len(lines)):
        first = not lines[i - 1][:1].isspace() or i - 1 in hung
        if first and _hanging(lines[i - 1], lines[i]) == indent:
            hung[i] = indent
    return hung


def _unwrapped(lines: list[str]) -> list[str]:
    """`lines` with the rows of a line a terminal hard-wrapped or a paste word-wrapped joined back (_WRAPPED_ROWS);
    unchanged when no width is told."""
    # as the terminal shows it, without its colour codes and a byte-order mark (no width: a BOM a Windows editor wrote
    # first made a log's first line one column wider); a table's row (nvidia-smi's, all of one width) is no wrap
    columns = [0 if _TABLE_ROW.match(line) else len(_ANSI.sub("", line).lstrip("\ufeff")) for line in lines]
    width = max(columns, default=0)
    if width < _WRAP_MIN:
        return lines
    hard = columns.count(width) >= _WRAPPED_ROWS
    # rows of the width `fold -s` made: only one with no blank inside is a cut (a word as long as the width), the rest
    # are joined as a word wrap's rows are, and a bare message's rows are read as where no hard wrap is told
    folded = hard and _kept_blanks(lines, columns, width)
    # each row as a word wrap continues the row before with it: a hanging indent's spaces left out (_hung)
    hung = _hung(lines, columns, width)
    rows = [line[hung.get(i, 0) :] for i, line in enumerate(lines)]
    soft: set[int] = set()  # the rows a word wrap broke: of a record, or of a bare message the next row is no start of
    record = False  # lines[i - 1] is (a row of) a record whose rows a word wrap may have broken
    logged = False  # that record is a line of vLLM's logger or a serve command, whose rows may open with a message
    for i, (line, length) in enumerate(zip(lines[:-1], columns, strict=False)):
        if not (breaks := _soft_break(line, length, _unquoted(line, rows[i + 1]), width)) and length < width:
            continue  # a row the next does not continue: whether it is a record's is not asked (most are not)
        broken = i - 1 in soft or (i > 0 and columns[i - 1] == width)  # lines[i] continues the row before it
        record = (record and broken) or _opens_record(lines, i)
        logged = (logged and broken) or _opens_record(lines, i, paragraph=False)
        # elsewhere (a paragraph, a pasted excerpt of bare messages) a row opening a message the grammar knows is one
        # of its own; a message of no head is read so only where no terminal's hard wrap is told (rows of the width)
        message = (record or not hard or folded) and not _opens_message(rows[i + 1])
        if breaks and (logged or message) and wrap_row(line, rows[i + 1]):
            soft.add(i)
    # rows short of the width that a word wrap broke tell it from a terminal's wrap, which breaks rows at the width only
    soft_before = sum(columns[i] < width for i in soft) >= _WRAPPED_ROWS
    if len(soft) < _WRAPPED_ROWS:
        soft.clear()
        if not hard:
            return _broken_once(lines, columns, width)
    out: list[str] = []
    joining: str | None = None  # what joins a row continuing the last line of `out` to it (a chat box's dropped space)
    for i, line in enumerate(lines):
        quote = _QUOTE.match(out[-1]) if joining is not None else None
        row = line[quote.end() :] if quote and line.startswith(quote.group()) else rows[i] if i - 1 in soft else line
        if joining is not None and row and not _own_line(row):
            out[-1] += joining + row
        else:
            out.append(line)
        joining = None
        # a row of the width with a blank inside is a chat box's (fold -s breaks at that blank), as it is where no
        # terminal's wrap is told (fewer than _WRAPPED_ROWS rows of the width: h20-qwen35-27b-len32768-dummy-v0190 in a
        # chat box at 80 read 'tokens perrequest: 33.04x')
        if i in soft:
            word_cut = columns[i] == width and not ((soft_before or not hard) and _BLANK_INSIDE.search(line))
            joining = "" if line[-1:].isspace() or word_cut else " "
        elif hard and columns[i] == width and not (folded and _BLANK_INSIDE.search(line.strip())):
            joining = ""
    return out


def _without(prefix: re.Pattern[str], line: str) -> str:
    """`line` without a `prefix` (_learned_prefix) before its own text, where no vLLM head follows it (_HEAD does
    those)."""
    known = _known_unprefixed(_plain(line))
    if (match := prefix.match(known)) and not _HEAD.match(known[match.end() :]):
        return known[match.end() :]
    return line


def _records(text: str) -> list[str]:
    """The lines of a log `text`, rows a terminal wrapped joined (_unwrapped), a learned collector's prefix removed
    (_learned_prefix), a JSON log record's (_json_record) as the text lines vLLM prints for it, an exception's message
    a paste broke across lines joined (_exception_rows)."""
    out: list[str] = []
    lines = _unwrapped(text.splitlines())
    if learned := _learned_prefix(lines):
        lines = [_without(learned, line) for line in lines]
    for line in lines:
        record = _json_record(_unprefixed(_plain(line))) if "{" in line else None
        out.extend(line.splitlines() if record is None else record.splitlines())
    return _exception_rows(out)


# An exception's message a paste broke across lines at a word ('... (4.38 GiB KV cache is needed, which is' then
# 'larger than the available KV cache memory (4.00 GiB). ...', vllm#53961; vLLM prints the message on one line): a row
# that ends inside a sentence (_OPEN_END) is followed by the rest of its message, a line that is no line of its own
# (no vLLM head, no traceback frame or caret line, no other exception, not blank), at most _EXCEPTION_ROWS rows
_OPEN_END = re.compile(r"[\w,(]$")
_EXCEPTION_ROWS = 6
_NAMES_EXCEPTION = re.compile(r"(?:Error|Exception|Failure): ")


def _rest_of_message(line: str, bare: str) -> bool:
    """Whether `line` (`bare`: its bare_line) may be the rest of a message broken before it: no line of its own."""
    own = _OWN_LINE.match(bare) or _HEAD.search(line, 0, _HEAD_AFTER) or _EXCEPTION.match(bare)
    return bool(bare) and not line[:1].isspace() and not own and not bare.startswith("Traceback")


def _exception_rows(lines: list[str]) -> list[str]:
    """`lines` with the rows of an exception's message a paste broke joined back onto its exception line, a space
    between them (_OPEN_END), a hanging indent before them read past (_hanging); other lines unchanged."""
    out: list[str] = []
    rows = -1  # rows joined onto out[-1], an exception line; -1: out[-1] is none (or there is none yet)
    for line in lines:
        if rows < 0 and not _NAMES_EXCEPTION.search(line):  # bare_line costs; most lines name no exception
            out.append(line)
            continue
        row = line[_hanging(out[-1], line) :] if rows >= 0 else line  # a hanging indent's row read past it (_hung)
        bare = bare_line(row)
        if 0 <= rows < _EXCEPTION_ROWS and _OPEN_END.search(bare_line(out[-1])) and _rest_of_message(row, bare):
            out[-1] = f"{out[-1].rstrip()} {bare}"
            rows += 1
            continue
        out.append(line)
        rows = 0 if _EXCEPTION.match(bare) else -1
    return out


def _plain(line: str) -> str:
    """`line` as vLLM wrote it, from a copy or an export of it: a byte-order mark, the export row's column and CSV
    quoting, HTML markup and entities, ANSI colours (raw, '^[[', '#033[') and an escaped CR at its end removed."""
    line = line.lstrip("\ufeff")  # a byte-order mark a Windows editor or a PowerShell redirect wrote first
    if match := _EXPORT_ROW.match(line):
        line = match.group(2) if match.group(1) is None else match.group(1).replace('""', '"')
    line = html.unescape(_MARKUP.sub("", line))
    return _ESCAPED_CR.sub("", _ANSI.sub("", line))


def bare_line(line: str) -> str:
    """`line` without the prefixes a paste or a log collector put before vLLM's own text (_plain, then _PREFIX), a JSON
    log record as its text line (_json_record): what a line's level or exception is read from, here and in
    log_summary."""
    bare = _unprefixed(_plain(line))
    return (_json_record(bare) if "{" in bare else None) or bare


# vLLM's own line head: its process tag, or its level and stamp ('WARNING 12-05 10:00:00 '). A head after other text
# (at most _HEAD_AFTER characters) is where vLLM's text starts behind a prefix of a collector not named in _PREFIX:
# stern's '<pod> <container> ', journalctl's '-o short-precise' / 'short-full' / 'short-unix' heads, pdsh's 'host: '
_HEAD = re.compile(
    rf"(?<!\S)(?:\([\w-]+(?: [\w=-]+)* pid=\d+(?:, ip=[\w.:-]+)?\)"
    rf"|{_LEVEL_HEAD})"
)
_HEAD_AFTER = 100


def _unprefixed(plain: str) -> str:
    """`plain` (a _plain line) without the prefixes before vLLM's own text (_PREFIX), and without another collector's
    before a vLLM line head (_HEAD)."""
    line = _known_unprefixed(plain)
    if (head := _HEAD.search(line, 1, _HEAD_AFTER + 1)) and not _HEAD.match(line):
        return _unprefixed(line[head.start() :])
    return line


def _known_unprefixed(plain: str) -> str:
    """`plain` without the prefixes _PREFIX names."""
    line = plain.strip()
    while match := _PREFIX.match(line):
        line = line[match.end() :].lstrip()
    return line


def _learned_prefix(lines: list[str]) -> re.Pattern[str] | None:
    """The prefixes of a collector not named in _PREFIX, as the lines with a vLLM head after them show them (_HEAD),
    digits read as any number ('Dec 05 10:00:00.123456 host vllm[123]: '): at most four, each on two lines or more;
    None where there are none. A line without a head behind one (a raw traceback's exception, nvidia-smi's table, a
    versions table) is read without it too (_records)."""
    shapes: collections.Counter[str] = collections.Counter()
    for line in lines:
        known = _known_unprefixed(_plain(line))
        if not _HEAD.match(known) and (head := _HEAD.search(known, 1, _HEAD_AFTER + 1)):
            shapes[re.sub(r"\d+", r"\\d+", re.escape(known[: head.start()]))] += 1
    common = [shape for shape, count in shapes.most_common(4) if count >= 2]
    return re.compile(f"^(?:{'|'.join(common)})") if common else None


# The head counts whose divisors a head-count verdict lists: far above any model's (DeepSeek-V3 and Llama-3.1-405B: 128)
# and 1,024 trial divisions at most; a larger count is no config's (a mangled paste) and its divisors are not listed
MAX_LISTED_HEADS = 1 << 20


def _free_memory_cause(match: re.Match[str]) -> str:
    """The verdict of vLLM's free-memory check at start (vllm/v1/worker/utils.py request_memory, 0.11 - 0.34; the CPU
    worker's on a NUMA node): it raises where free < ceil(total x utilization), so the highest utilization the memory
    free at start covers is free / total, rounded down to the flag's two decimals.
    A total of 0 GiB (a mangled paste; no card reports it) leaves no utilization to give."""
    free, total, kind, utilization, requested = match.groups()
    where = "device" if kind == "G" else "node"
    lower = "lower --gpu-memory-utilization"
    if float(total) > 0:
        lower += f" to at most {math.floor(float(free) / float(total) * 100) / 100:g}"
    return (
        f"{free} of {total} GiB free at start, less than --gpu-memory-utilization {utilization} asks ({requested} "
        f"GiB): other processes hold memory on the {where} (another engine, or one not yet gone): free it, or {lower}"
    )


def _heads_cause(match: re.Match[str]) -> str:
    """The verdict of vLLM's head-count check (vllm/config/model.py verify_with_parallel_config): the tensor-parallel
    sizes that pass are the divisors of the model's attention heads, listed up to MAX_LISTED_HEADS heads (found by
    trial up to the square root)."""
    heads, size = int(match.group(1)), match.group(2)
    said = f"--tensor-parallel-size {size} does not divide the model's {heads} attention heads"
    if not 0 < heads <= MAX_LISTED_HEADS:  # no divisor to list (0), or not a model's count (a mangled paste)
        return f"{said}: use a tensor-parallel size that divides {heads}"
    small = [n for n in range(1, math.isqrt(heads) + 1) if heads % n == 0]
    sizes = [str(n) for n in sorted(set(small + [heads // n for n in small]))]
    listed = f"{', '.join(sizes[:-1])} or {sizes[-1]}" if len(sizes) > 1 else sizes[0]
    return f"{said}: use {listed} (more GPUs than a divisor can serve with --pipeline-parallel-size)"


# NCCL's failures as vLLM raises them (vllm/distributed/device_communicators/pynccl_wrapper.py NCCL_CHECK:
# 'RuntimeError: NCCL error: {ncclGetErrorString}') and as torch's ProcessGroupNCCL does ('NCCL error in:
# .../ProcessGroupNCCL.cpp:518, unhandled system error, NCCL version 2.4.8'), with what each result means in NCCL's
# user guide (api/types.html, ncclResult_t; 'NCCL should print a more detailed message when the environment variable
# NCCL_DEBUG is set to "WARN"'): communication between the engine's GPU ranks (TP, PP), no memory shortfall
_NCCL_RESULTS = {
    "unhandled cuda error": "a call to a CUDA function failed",
    "unhandled system error": "a call to the system failed",
    "internal error": "an internal check failed, a bug in NCCL or memory corruption",
    "invalid argument": "an argument has an invalid value",
    "invalid usage": "the call to NCCL is incorrect",
    "remote process exited or there was a network error": "a network error or a remote process exiting prematurely",
}
_NCCL_ERROR = re.compile(rf"NCCL error(?: in: \S+)?:? ({'|'.join(_NCCL_RESULTS)})")


def _nccl_cause(result: str) -> str:
    """The cause of a boot NCCL failed: its result string and what NCCL's docs say it means (_NCCL_RESULTS)."""
    return (
        f"NCCL failed between the engine's GPU ranks ({result}: {_NCCL_RESULTS[result]}): a communication fault, not "
        "a memory shortfall; set NCCL_DEBUG=WARN (or INFO) for NCCL's own message naming the call that failed"
    )


# oneCCL's exceptions, the XPU's counterpart of NCCL (vLLM's XPU platform sets torch.distributed's 'xccl' backend,
# vllm/platforms/xpu.py dist_backend), as oneCCL raises them: 'oneCCL: <file>:<line> <function>: EXCEPTION: <message>'
# ('RuntimeError: oneCCL: comm_selector.cpp:57 create_comm_impl: EXCEPTION: ze_data was not initialized' at TP 1,
# xpu-e211-qwen3-0.6b-len40960-oneccl-failed-v0101dev; 'exec.cpp:122 start_workers: EXCEPTION: failed to start worker
# # 0', vllm#10109; 'atl_ofi_comm.cpp:232 init_transport: EXCEPTION: failed to initialize ATL', llm-d/llm-d#2270). The
# XPU worker's init_device runs a oneCCL all-reduce warm-up at every world size up to 0.28.0's source (vllm/v1/worker/
# xpu_worker.py) and at world size > 1 only in 0.32.0's (vllm#52386: 'XPU worker fails to start with world_size=1
# when oneCCL cannot initialize'); oneCCL prints its own messages at CCL_LOG_LEVEL=info
_ONECCL_ERROR = re.compile(r"oneCCL: (\S+ \w+): EXCEPTION: (.+?)\s*$")


def _oneccl_cause(match: re.Match[str]) -> str:
    """The cause of a boot oneCCL failed: where oneCCL raised and its message (_ONECCL_ERROR)."""
    return (
        f"oneCCL failed setting up the XPU worker's communicator ({match.group(1)}: {match.group(2)}): a "
        "communication library fault, not a memory shortfall; the XPU worker runs oneCCL's warm-up all-reduce even at "
        "--tensor-parallel-size 1 up to vLLM 0.28 at least (not in 0.32); set CCL_LOG_LEVEL=info for oneCCL's own "
        "messages"
    )


# Known boot failures: (pattern, one-line cause, or a function of the match giving it). The first that matches wins.
# vLLM 0.34's extensible KV cache (the default on CUDA and ROCm) takes the memory left after warmup at
# --gpu-memory-utilization 1.0 unless one is given, and at 1.0 both start-up refusals of the pool say so in place of
# 'Try increasing `gpu_memory_utilization`': 'The extensible KV cache already takes all device memory left after ...;
# decrease `max_model_len` or `max_num_seqs`, or the model needs a device with more memory.' (vllm/v1/core/
# kv_cache_planning.py _more_kv_cache_memory_hint and _check_enough_kv_cache_memory, 0.34.0 sdist); below 1.0 its hint
# still says to raise the utilization
_EXTENSIBLE_AT_FULL = re.compile(r"The extensible KV cache already takes all device memory")


def _more_kv_memory(line: str, usual: str) -> str:
    """What a KV refusal `line` suggests beside a shorter --max-model-len: `usual` (a higher utilization), or where
    the engine says its extensible KV cache already takes all device memory, what vLLM's hint names there: fewer
    sequences, or more memory (GPUs or a larger card), since no higher utilization exists."""
    if _EXTENSIBLE_AT_FULL.search(line):
        return (
            "or lower --max-num-seqs; vLLM's extensible KV cache already takes all the device memory left (at "
            "--gpu-memory-utilization 1.0), so more needs more GPUs (--tensor-parallel-size) or a larger card"
        )
    return usual


_OUT_OF_MEMORY = "the accelerator ran out of memory: lower --gpu-memory-utilization or --max-model-len, or re-plan"
# torch's out-of-memory message (c10/cuda/CUDACachingAllocator.cpp, HIP's the same: 'Tried to allocate 256.00 GiB. GPU 0
# has a total capacity of 80.00 GiB of which 25.38 GiB is free.'); format_size prints MiB below 1 GiB. torch 2.0 and
# before, which V0 vLLM ran on, wrote the same figures 'Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total capacity;
# ...' (a real message quoted in inha15/Camera_YOLOv5-HJ E2E_Camera/scripts/clean_cache.py)
_TORCH_OOM_SIZES = re.compile(
    r"Tried to allocate (\d+(?:\.\d+)?) (GiB|MiB)(?:\. GPU \d+ has a total capacity of | \(GPU \d+; )"
    r"(\d+(?:\.\d+)?) (GiB|MiB)"
)


def _torch_oom_cause(match: re.Match[str]) -> str:
    """torch's OOM: where the one allocation is larger than the whole card, no --gpu-memory-utilization makes room for
    it (the tensor is sized by the deployment: rocm80gib-qwen38-27b-len262144-mmprofile-oom-v01dev, vLLM's multimodal
    encoder profiling batch at --max-model-len 262144 asked 256 GiB of an 80 GiB card); else the usual advice."""

    def gib(figure: str, unit: str) -> float:
        return float(figure) / (1024 if unit == "MiB" else 1)

    wanted, total = gib(match.group(1), match.group(2)), gib(match.group(3), match.group(4))
    if wanted <= total:
        return _OUT_OF_MEMORY
    return (
        f"one allocation of {match.group(1)} {match.group(2)} is larger than the whole card "
        f"({match.group(3)} {match.group(4)}), so no --gpu-memory-utilization fits it: the tensor is sized by the "
        "deployment (--max-model-len, --max-num-batched-tokens, --max-num-seqs, or vLLM's multimodal profiling batch: "
        "--limit-mm-per-prompt, --skip-mm-profiling); lower what sizes it, or re-plan"
    )


# vllm/v1/worker/gpu_model_runner.py load_model (0.19.0) wraps an OOM raised while the model's parameters are built on
# the GPU; the cause _CAUSES gives it, which the summary's trap for the same line says too (log_summary.TRAPS)
LOAD_OOM = re.compile(r"Failed to load model - not enough GPU memory")
LOAD_OOM_CAUSE = (
    "the accelerator ran out of memory loading the weights: they do not fit on the card (--max-model-len and "
    "--gpu-memory-utilization do not size them): raise --tensor-parallel-size, serve a quantized checkpoint or use "
    "a larger card, or free the card if another process holds it; re-plan"
)

_CAUSES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (
        re.compile(r"Chunked MM input disabled but max_tokens_per_mm_item \((\d+)\)"),
        "max-num-batched-tokens is below one multimodal item ({0} tokens) with --disable-chunked-mm-input: "
        "raise it to the next power of two (seed article: floor 2496 -> 4096)",
    ),
    (
        re.compile(r"invalid choice: '([^']+)'"),
        "the engine's CLI rejected the value '{0}' before starting (--kv-cache-dtype int8 is not in its enum)",
    ),
    (re.compile(r"Address already in use"), "the engine port is in use on its host; pick another --port"),
    # a --quantization the checkpoint was not made for: get_quant_config (vllm/model_executor/model_loader/
    # weight_utils.py, 0.10 - 0.34 sdists) reads it from config.json's quantization_config, else from a file the
    # method names (AWQ's quant_config.json, GPTQ's quantize_config.json), and raises 'Cannot find the config file for
    # <method>' where neither is there; 0.23 prints it inside a pydantic ValidationError for VllmConfig
    # (gpu-qwen3-coder-next-awq-marlin-kvfp8-len32768-util064-refused-v0230)
    (
        re.compile(r"Cannot find the config file for (\S+)"),
        "--quantization {0} names a method the checkpoint was not quantized with: its config.json has no "
        "quantization_config and its folder no {0} config file; serve a checkpoint quantized for {0}, or drop "
        "--quantization to let vLLM read the checkpoint's own method",
    ),
    # the start-up checks before anything loads: the memory free at start against the utilization's share of the
    # total ('Free memory on device cuda:0 (48.48/178.35 GiB) on startup is less than desired GPU memory utilization
    # (0.7, 124.85 GiB)', b200-qwen3-4b-instruct-2507-util070-free-memory-refused-v0191; the CPU worker's 'Available
    # memory on node 0 (...)' and 'CPU memory utilization'), and the attention heads against the TP size
    (
        re.compile(
            r"(?:Free|Available) memory on (?:device|node)[^(]*\((\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) GiB\) on startup "
            r"is less than desired ([GC])PU memory utilization \((\d+(?:\.\d+)?), (\d+(?:\.\d+)?) GiB\)"
        ),
        _free_memory_cause,
    ),
    (
        re.compile(r"Total number of attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)"),
        _heads_cause,
    ),
    # the length check of the model config (vllm/config ModelConfig _get_and_verify_max_len: 'User-specified
    # max_model_len (8192) is greater than the derived max_model_len (max_position_embeddings=2048.0 or
    # model_max_length=None in model's config.json)', in a pydantic ValidationError: h100-phi2-len8192-refused-v0190)
    (
        re.compile(r"User-specified max_model_len \((\d+)\) is greater than the derived max_model_len \((\w+)=(\d+)"),
        "--max-model-len {0} is above the {2} positions the model's config allows ({1}): lower it (vLLM refuses it "
        "unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, which is only right where the model's RoPE scaling reaches that far)",
    ),
    # vLLM's own start-up checks of the KV pool (vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory, 0.10 -
    # 0.33; kv_cache_planning.py 0.34): a pool short of one request (with the length the engine estimates fits, where
    # it prints one: 'Based on the available memory, the estimated maximum model length is N.', only when N > 0), then a
    # pool of nothing
    (
        re.compile(
            r"larger than the available KV cache memory \((-?\d+(?:\.\d+)?) GiB\)"
            r".*?estimated maximum model length is (\d+)"
        ),
        lambda match: (
            f"the KV pool ({match.group(1)} GiB) holds less than one --max-model-len request: lower --max-model-len to "
            f"at most {match.group(2)} (the engine's estimate of what fits) "
            + _more_kv_memory(match.string, "or raise --gpu-memory-utilization")
        ),
    ),
    (
        re.compile(r"larger than the available KV cache memory \((-?\d+(?:\.\d+)?) GiB\)"),
        lambda match: (
            f"the KV pool ({match.group(1)} GiB) holds less than one --max-model-len request: lower --max-model-len "
            + _more_kv_memory(match.string, "or raise --gpu-memory-utilization")
        ),
    ),
    (  # V0 (vllm/worker/worker.py raise_if_cache_size_invalid) and V1 before 0.10
        re.compile(r"larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)"),
        "the KV pool ({0} tokens) holds less than one --max-model-len request: lower --max-model-len or raise "
        "--gpu-memory-utilization",
    ),
    (  # the V1 refusal cut before its figures (the stored vllm#53961 paste ends at 'which is larger t'): its opening
        # words name the check, which _check_enough_kv_cache_memory raises only for a pool short of one request (some
        # releases print "the models's": vllm#25350)
        re.compile(r"To serve at least one request with the models?'s max seq len \((\d+)\)"),
        "the KV pool holds less than one --max-model-len request ({0} tokens; the paste is cut before the pool's "
        "figure): lower --max-model-len or raise --gpu-memory-utilization",
    ),
    (  # the error itself, or the pool it follows from when a paste stops before it: V0 prints a pool of 0 blocks
        # and its negative 'reserved for KV Cache' (vllm/worker/worker.py; raise_if_cache_size_invalid raises on
        # num_gpu_blocks <= 0: rtx4060-qwen25-7b-util070-len4096-refused-v0), V1 a negative 'Available KV cache
        # memory' (gpu_worker.py; kv_cache_utils.py raises on available_memory <= 0), tpu-inference a negative
        # 'total_hbm_avail_gb' (its worker raises on total_hbm_avail <= 0, _MEMSTAT)
        re.compile(
            r"No available memory for the cache blocks|reserved for KV Cache is -|Available KV cache memory: -"
            r"|total_hbm_avail_gb=-"
            rf"|{V0_BLOCKS}0\b"
        ),
        lambda match: (
            "weights and the profiling peak fill the memory cap, leaving nothing for the KV cache: "
            + _more_kv_memory(
                match.string,
                "raise --gpu-memory-utilization, add GPUs (--tensor-parallel-size) or serve a smaller checkpoint",
            ).removeprefix("or ")
        ),
    ),
    (  # Triton's refusal to compile an FP8 E4M3 kernel below compute capability 8.9 (vllm#26431 on an RTX 3090,
        # vllm#26646 with --kv-cache-dtype fp8_e5m2 too): the card has no native FP8, and a Triton kernel in e4m3
        # cannot run on it
        re.compile(r"type fp8e4nv not supported in this architecture"),
        "this GPU has no FP8 E4M3 (compute capability below 8.9): a Triton kernel vLLM compiles in fp8e4nv, for FP8 "
        "block-quantized weights or an FP8 KV cache, cannot run on it: serve without --kv-cache-dtype fp8* and with a "
        "checkpoint that is not FP8 block-quantized",
    ),
    (
        _OOM_KILLED,
        "the container was killed at its memory limit (OOMKilled, exit 137): that limit is host RAM, not GPU memory; "
        "raise the container's memory limit, or lower what the engine holds in host RAM (torch.compile and kernel JIT "
        "workers, tokenizer and multimodal processor workers)",
    ),
    (
        _SIGKILLED,
        "the process was killed (SIGKILL), most often by the host's out-of-memory killer: host RAM ran out (on a "
        "unified-memory board such as a Jetson or a GB10 the GPU pool is taken from that RAM too): lower "
        "--gpu-memory-utilization, and on V0 --swap-space (CPU KV blocks are host RAM)",
    ),
    (
        GPU_FAULT,
        lambda match: (
            f"GPU memory access fault on GPU node-{match.group(1)} (Reason: {match.group(2) or 'not printed'}): the "
            "ROCm runtime aborts the process on it: a kernel, driver or firmware fault, not a memory shortfall"
        ),
    ),
    (  # vllm/v1/attention/backends/flash_attn.py FlashAttentionMetadataBuilder of the 0.9.2 sdist: full CUDA graphs
        # need FA3's ahead-of-time scheduler (aot_schedule = get_flash_attn_version() == 3), and vllm/attention/utils/
        # fa_utils.py picks FA3 on compute capability 9.x only (rtx4090d-qwen25-vl-3b-bnb-len16384-util0786-aot-failed-
        # v092: Unsloth set full_cuda_graph on an RTX 4090 D, 8.9, after the pool was sized)
        re.compile(r"AoT scheduling is required for full cuda graph"),
        "full CUDA graphs (compilation_config full_cuda_graph) need FlashAttention 3's ahead-of-time scheduling, "
        "which vLLM runs on Hopper (compute capability 9.x) only; this GPU runs FlashAttention 2: turn full_cuda_graph "
        "off (piecewise CUDA graphs) or serve on a Hopper card. The boot stopped at the attention backend, not a "
        "memory shortfall",
    ),
    # a model type the engine's transformers has no config class for: AutoConfig.from_pretrained (transformers/models/
    # auto/configuration_auto.py, 4.57 - 5.19) raises it, vLLM's ModelConfig prints it inside a pydantic ValidationError
    # (h100-gemma4-e4b-unknown-model-type-refused-v0190: gemma4 on the vllm/vllm-openai:v0.19.0 image)
    (
        re.compile(r"has model type `([^`]+)` but Transformers does not recognize this architecture"),
        "the engine's transformers does not know model type '{0}' (the checkpoint is newer than that transformers): "
        "serve it with a vLLM release (image) whose transformers has {0}, or upgrade transformers beside this one",
    ),
    # data parallel on more GPUs than the engine sees: vllm/v1/worker/gpu_worker.py init_device (0.19.0, line 241) puts
    # DP rank r's worker on GPU r x PP x TP + its TP rank and asserts it is below torch.accelerator.device_count()
    # (h100-llama31-8b-dp2-one-gpu-refused-v0190: --data-parallel-size 2 in a pod with one H100)
    (
        re.compile(r"DP adjusted local rank (\d+) is out of bounds"),
        "data parallel needs --data-parallel-size x --tensor-parallel-size x --pipeline-parallel-size GPUs on the host "
        "and the engine sees fewer (a rank was given GPU index {0}): give it that many GPUs (the container's or pod's "
        "GPU count, CUDA_VISIBLE_DEVICES) or lower --data-parallel-size",
    ),
    # LOAD_OOM (tests/fixtures/bootlogs r9700x2-llama-pllum-70b-*-bf16-tp2-len8192-eager-load-oom-v0190-rocm: 65.7 GiB
    # of bf16 weights a rank on 31.86 GiB cards): vLLM's own advice to lower the utilization helps only where something
    # else holds the card, as the load is not bounded by it
    (LOAD_OOM, LOAD_OOM_CAUSE),
    (_TORCH_OOM_SIZES, _torch_oom_cause),
    (re.compile(r"CUDA out of memory|OutOfMemoryError"), _OUT_OF_MEMORY),
    (_NCCL_ERROR, lambda match: _nccl_cause(match.group(1))),
    (_ONECCL_ERROR, _oneccl_cause),
]

# The host-memory kills of _CAUSES as a log of vLLM's CPU backend (PLATFORMS 'cpu': its token line 'CPU KV cache size:
# N tokens' or its worker's pool line 'Explicitly set (1.0/15.84) GiB for KV cache on node 0', vllm/v1/worker/
# cpu_worker.py; not a plugin's that reports device type 'cpu' too) meets them: there the weights and the KV cache are
# host RAM, the KV space VLLM_CPU_KVCACHE_SPACE (GiB) or --kv-cache-memory-bytes (cpu_worker.py; vllm/platforms/cpu.py
# maps the first onto the second), so the space is what to lower (tests/fixtures/bootlogs
# cpu-qwen25-0.5b-kvspace1g-len4096-eager-oomkilled-v0300: a 1 GiB space OOM-killed in a 4 GiB pod, three processes
# importing torch beside it; 256 MiB served, cpu-qwen25-0.5b-kvmem256mib-len2048-eager-v0300)
_CPU_HOST_RAM = (
    "on vLLM's CPU backend the weights and the KV cache are that memory: lower the KV space (VLLM_CPU_KVCACHE_SPACE, "
    "GiB, or --kv-cache-memory-bytes), --max-num-seqs and --max-num-batched-tokens, or give the engine more memory"
)
_HOST_RAM_KILLS: dict[re.Pattern[str], str] = {
    _OOM_KILLED: f"the container was killed at its memory limit (OOMKilled, exit 137): {_CPU_HOST_RAM}",
    _SIGKILLED: f"the process was killed (SIGKILL), most often by the host's out-of-memory killer: {_CPU_HOST_RAM}",
}

# (event name, pattern) in boot order; the first line matching each pattern marks the event.
_EVENTS = [
    ("engine_init", re.compile(r"Initializing a V[01] LLM engine")),
    # the V1 runner's 'Starting to load model %s...' (gpu_model_runner.py, gone with it in 0.34) or 'Loading model from
    # scratch...', which V1 0.11 prints instead where it loads afresh (gpu2-qwen3-next-80b-a3b-thinking-fp8-mtp2-tp2-
    # len131072-v0110-html) and the V2 runner (vllm/v1/worker/gpu/model_runner.py load_model, 0.31.0 - 0.34.0) always
    ("weights_loading", re.compile(r"Starting to load model|Loading model from scratch\.\.\.")),
    ("weights_downloaded", re.compile(r"Time spent downloading weights for")),
    ("weights_loaded", _WEIGHT_LOAD),
    ("compiled", re.compile(r"Compiling a graph for compile range|Graph capturing finished")),
    ("memory_profiled", re.compile(r"Memory statistics \|")),
    ("kv_cache_init", re.compile(_KV_TOKENS.pattern + r"|Init kv-cache\b")),
    ("engine_ready", re.compile(r"init engine \(profile, create kv cache, warmup model\) took")),
    ("server_listening", re.compile(r"Starting vLLM server on|Uvicorn running on")),
    ("startup_complete", re.compile(r"Application startup complete")),
]


def failure_cause(text: str) -> str | None:
    """One line saying why a boot failed, from the log `text`; None when no failure is in it.

    The v5e program-load failure (seed article: 0.95 utilization, 691 s in) reads
    'XLA could not load a compiled program: needed 384.11M, 347.33M free ...'.
    """
    return _failure_cause(_records(text), not text.endswith(("\n", "\r")))


def _failure_cause(lines: list[str], cut_short: bool) -> str | None:
    """failure_cause of a log's `lines` as _records gives them (read as records once: a second reading of joined lines
    may find a terminal's width in them that the log does not have, and join lines it should not); `cut_short`: the
    last line may be cut short (no line end after it: _CUT_NUMBER)."""
    for i, line in enumerate(lines):
        if match := _PROGRAM_ALLOC.search(line):
            free = next((m.group(1) for later in lines[i : i + 3] if (m := _PROGRAM_FREE.search(later))), "?")
            return (
                f"XLA could not load a compiled program: needed {match.group(1)}, {free} free. Compiled "
                "programs live outside --gpu-memory-utilization's cap: lower it (the seed measured 0.92 "
                "booting and 0.95 failing on v5e-1)"
            )
    bare = [bare_line(line) for line in lines]
    for pattern, cause in _CAUSES:
        for line in bare:
            if match := pattern.search(line):
                if pattern in _HOST_RAM_KILLS and platform_of(bare) == "cpu":
                    return _HOST_RAM_KILLS[pattern]
                return cause(match) if callable(cause) else cause.format(*match.groups())
    exceptions = [(i, m.group(1)) for i, line in enumerate(bare) if (m := _EXCEPTION.match(line))]
    # an exception on a last line cut short may be a wrapper cut before the words that name it ('RuntimeError: Engine
    # core initializati', _WRAPPER): it is the cause only where no whole line names one
    if cut_short and len(exceptions) > 1 and _EXCEPTION.match(bare[-1]):
        exceptions.pop()
    if exceptions:
        causes = (
            [e for e in exceptions if not _WRAPPER.search(e[1]) and not _AFTERMATH.match(e[1])]
            or [e for e in exceptions if not _WRAPPER.search(e[1])]
            or exceptions
        )
        i, cause = causes[-1]
        return _hub_refusal(bare, i, cause) or redact(_validation_message(bare, i) or cause)[:300]
    return _cut_traceback(bare)


def _validation_message(bare: list[str], i: int) -> str | None:
    """The message of the pydantic ValidationError on `bare[i]`, from its rows below (_VALIDATION_ROW); None when the
    line is no ValidationError or its rows are not in the log."""
    if not _VALIDATION_ERROR.search(bare[i]):
        return None
    # the rows, or the exception's line where _records joined them to it (_rest_of_message)
    rows = (_VALIDATION_ROW.search(row) for row in bare[i : i + 1 + _VALIDATION_ROWS])
    return next((row.group(1) for row in rows if row), None)


# huggingface_hub 0.36 (file_download.py _get_metadata_or_catch_error) takes any HTTP error on a file's metadata but
# 'revision' or 'entry not found' (a private or gated repository, a token without the permission, the Hub down) as a
# reason to look in the local cache, and where the file is not there raises LocalEntryNotFoundError 'An error happened
# while trying to locate the file on the Hub ... Please check your connection' (_raise_on_head_call_error; 1.x and 2.x
# the same), which transformers' cached_files (utils/hub.py) re-raises as "OSError: We couldn't connect to
# 'https://huggingface.co' to load the files". The network was up: the HTTP error chained above it is the cause, in
# requests' words (huggingface_hub < 1.0: '403 Client Error: Forbidden for url: URL', requests/models.py
# raise_for_status) or httpx's (1.x: "Client error '403 Forbidden' for url 'URL'", httpx/_models.py), the Hub's reason
# on the HfHubHTTPError's row '403 Forbidden: <X-Error-Message>.' (utils/_http.py hf_raise_for_status)
# (h100-gemma2-2b-hub-403-refused-v0190 and its five siblings: a fine-grained token without gated-repository access)
_CACHE_FALLBACK = re.compile(r"couldn't connect to '[^']*' to load|error happened while trying to locate the file on")
_HTTP_STATUS = re.compile(
    r"^(?:ERROR [^\]]*\] )?[\w.]*(?:Error|Exception): (?:(\d{3}) (?:Client|Server) Error: (.+?) for url: (\S+)"
    r"|(?:Client|Server) error '(\d{3}) ([^']+)' for url '([^']+)')"
)
_HUB_REASON = re.compile(r"^\d{3} [\w ]+: (.+?)\.*$")
_HUB_ADVICE = {
    "4": "the engine's Hub token (HF_TOKEN) may not read this repository: accept the model's terms on its Hub page "
    "with the token's account and give the token read access to it (a fine-grained token needs access to public "
    "gated repositories), or serve a local copy",
    "5": "the Hub failed to answer: retry, or serve a local copy",
}


def _hub_refusal(bare: list[str], i: int, cause: str) -> str | None:
    """Where the boot's exception `cause` (on `bare[i]`) is the cache fallback of a refused Hub request
    (_CACHE_FALLBACK), the refusal: its status, URL and the Hub's reason; None otherwise."""
    if not _CACHE_FALLBACK.search(cause):
        return None
    refusals = [(j, m) for j, line in enumerate(bare[:i]) if (m := _HTTP_STATUS.match(line))]
    if not refusals:
        return None
    j, refusal = refusals[-1]
    status, reason, url = (g for g in refusal.groups() if g is not None)
    said = next(
        (m.group(1) for row in bare[j + 1 : i] if row.startswith(status) and (m := _HUB_REASON.match(row))), None
    )
    advice = "the Hub rate-limited the requests: retry later, or log in (HF_TOKEN)" if status == "429" else None
    return redact(
        f"the Hub refused {url}: HTTP {status} {reason}"
        + (f" ('{said}')" if said else "")
        + "; the connection error reported after it is huggingface_hub's fall-back to a cache that does not hold the "
        "file, not the network: "
        + (advice or _HUB_ADVICE.get(status[0], "check the repository id, revision and token, or serve a local copy"))
    )


# an ERROR-level line's own text, after vLLM's 'ERROR MM-DD HH:MM:SS [file.py:N] ' head (a JSON record's has no file)
_ERROR_TEXT = re.compile(r"^(?:ERROR|CRITICAL) \d\d-\d\d [\d:]+ (?:\[[^\]]*\] )?(.*\S)")


def _cut_traceback(bare: list[str]) -> str | None:
    """The cause of a log that ends inside the traceback vLLM logs at ERROR level, before its exception line (a paste
    cut short: a10x4-qwen3-30b-a3b-tp4-len8192-v085 ends at 'self.model_runner.capture_model()' under 'WorkerProc hit
    an exception.', h100-gpt-oss-120b-util095-refused-v011 under 'EngineCore failed to start.'): the first ERROR line's
    text and the last frame's, or that the paste is cut before the first frame. None when the log goes on past its
    ERROR lines (an ERROR a started engine logs and survives is no failure)."""
    lines = [line for line in bare if line]
    texts = [m.group(1) for line in lines if (m := _ERROR_TEXT.match(line))]
    if not texts or not _ERROR_TEXT.match(lines[-1]) or not any("Traceback" in text for text in texts):
        return None
    last = texts[-1].strip()
    # a paste cut at the traceback's own first line holds no frame (gemma4-kv-memory-bytes-49gib-failed-v026)
    where = "cut before its first frame" if last.startswith("Traceback") else f"last frame: {last}"
    return redact(f"the log ends inside a traceback, before its exception: {texts[0]} ({where})")[:300]


def stage_durations(record: BootRecord) -> list[tuple[str, float]]:
    """(event, seconds since the previous stamped event) along the boot timeline, e.g. the compile wait
    shows up as the gap before 'engine_ready'."""
    out: list[tuple[str, float]] = []
    previous = 0.0
    for event in record.events:
        if event.t_s is None:
            continue
        out.append((event.name, round(event.t_s - previous, 2)))
        previous = event.t_s
    return out


def _first(match: re.Match[str]) -> str:
    """The first group that matched, of a pattern with one alternative per line format."""
    return next(g for g in match.groups() if g is not None)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _stamp(line: str, year: int) -> datetime | None:
    """The time a line is stamped with in `year`; None where it has no stamp or none that is a time of that year (a
    stamp has no year: a pasted, edited or garbled 'INFO 13-45 25:61:99')."""
    match = _STAMP.search(line)
    if not match:
        return None
    month, day, hour, minute, second = (int(g) for g in match.groups())
    try:
        return datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None


# A stamp this far before the start is of the next year: a log's stamps go forward, and they print no year
_NEW_YEAR = timedelta(days=183)


def _stamp_year(text: str, started: datetime | None) -> int:
    """The year a log's stamps are read in: `started`'s, else this year; the last leap year before it where a stamp
    says 29 February (vLLM's stamps print no year: a boot of 2024-02-29 read in 2026 is not 2026-02-29)."""
    year = (started or datetime.now()).year
    if started is None and any(m.groups()[:2] == ("02", "29") for m in _STAMP.finditer(text)):
        while not calendar.isleap(year):
            year -= 1
    return year


def _read_facts(out: BootRecord, line: str, kept: set[str]) -> None:
    """Update `out` with the allocation facts on one log line; the last occurrence of each wins (a restart
    inside one log file reports again), except the version, which is the first one printed, and the _FIRST_OF_BOOT keys
    in `kept` (_read_logged)."""
    if out.engine_version is None:
        for pattern in _VERSION:
            if match := pattern.search(line):
                out.engine_version = match.group(1)
                break
    if match := _WEIGHT_LOAD.search(line):
        out.weight_load_s = float(match.group(1))
    if match := _WEIGHTS_GIB.search(line):
        out.weights_gib = float(_first(match))
    elif out.weights_gib is None and (match := _CLOSING_WEIGHTS_GIB.search(line)):
        out.weights_gib = float(match.group(1))
    if match := _KV_TOKENS.search(line):
        out.kv_cache_tokens = int(_number(_first(match)))
    if match := _KV_GIB.search(line):
        out.kv_cache_gib = float(_first(match))
    if match := _KV_NEEDED.search(line):
        out.kv_cache_needed_gib = float(match.group(1))
    if match := _ESTIMATED_LEN.search(line):
        out.estimated_max_model_len = int(match.group(1))
    if match := _GPU_BLOCKS.search(line):
        out.kv_cache_num_blocks = int(_first(match))
    for kind, value in _MEMSTAT.findall(line):
        out.hbm_gib[kind] = float(value)
    if "used" in out.hbm_gib and _MEMSTAT.search(line):
        out.weights_gib = out.hbm_gib["used"]  # TPU: HBM used before the KV cache = resident weights
    if "avail" in out.hbm_gib and _MEMSTAT.search(line):
        out.kv_cache_gib = out.hbm_gib["avail"]  # TPU: what the KV cache is given
    if m := _KV_SHAPE.search(line):
        out.kv_cache_shape = [int(g) for g in m.groups()]
    if _INIT_KV.search(line):
        if m := _KV_BLOCKS.search(line):
            out.kv_cache_num_blocks = int(m.group(1))
        if m := _KV_DTYPE.search(line):
            out.kv_cache_dtype = m.group(1)
    if m := _GROUPS.search(line):
        out.kv_cache_groups = int(m.group(1))
    if m := _FP8.search(line):
        out.fp8_kv_cache_dtype = _first(m)
    if match := _CUDA_GRAPH_ESTIMATE.search(line):
        out.cuda_graph_estimated_gib = float(_first(match))
    if match := _CUDA_GRAPH_CAPTURE.search(line):
        out.cuda_graph_capture_gib = float(match.group(1))
    if match := _COMPILE.search(line):
        out.compile_s = float(match.group(1) or match.group(2))
    if match := _CONCURRENCY.search(line):
        out.max_concurrency_context = int(_number(match.group(1)))
        out.max_concurrency = float(match.group(2))
    _read_logged(out, line, kept)
    if match := _XPU_TOTAL_MIB.search(line):
        out.logged["total_memory_gib"] = str(float(match.group(1)) / 1024)


# A dict inside the 'non-default args' dict (its innermost first): its keys are not the deployment's. A draft model's
# speculative_config names the draft ("'speculative_config': {'model': 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', 'method':
# 'eagle3', ...}", vllm/config/speculative.py; 'max_model_len' among its keys too), and the patterns, which take the
# last key of that name on the line, read the draft as the served model
_NESTED_ARGS = re.compile(r"\{[^{}]*\}")


def _top_level_args(text: str) -> str:
    """`text` with the dicts inside its 'non-default args' dict taken out, so only that dict's own keys are read."""
    if (match := _ARGS_OPEN.search(text)) is None or (brace := text.find("{", match.end())) < 0:
        return text
    head, inner = text[: brace + 1], text[brace + 1 :]
    while (emptied := _NESTED_ARGS.sub("", inner)) != inner:
        inner = emptied
    return head + inner


# Logged keys whose first line in a boot's configuration is the served model's: a speculative config's draft model
# resolves its own architecture after the target's ('Resolved architecture: Qwen3_5MoeForConditionalGeneration', then
# '... Qwen3_5MoeMTP': vllm/engine/arg_utils.py create_engine_config builds the model config before
# create_speculative_config builds the draft's, 0.8 - 0.34 sources; gpu-qwen36-35b-a3b-prismaquant-mtp3-len200000-
# util085-v0220). A configuration is built after the lines _config_starts names, so the first after the last of them
# is the one kept: a second run in one log that _last_boot leaves joined to the first takes its own
_FIRST_OF_BOOT = frozenset({"architecture"})


def _config_starts(bare: str) -> bool:
    """Whether `bare` (a bare_line) comes before vLLM builds an engine's configuration: the API server's banner
    (_BOOT_START's first group) or 'non-default args' (_ARGS_OPEN), which vllm/entrypoints/utils.py logs before
    create_engine_config, the offline LLM's too (log_non_default_args, 0.10 - 0.34 sources)."""
    return bool(_ARGS_OPEN.search(bare)) or ((match := _BOOT_START.search(bare)) is not None and bool(match.group(1)))


def _read_logged(out: BootRecord, text: str, kept: set[str]) -> None:
    """Update `out.logged` with what deployment `text` (one line, or a wrapped 'non-default args' dict joined) names;
    `kept` holds the _FIRST_OF_BOOT keys read since the configuration's build started (_config_starts), left as read."""
    text = _top_level_args(text)
    for key, pattern in _LOGGED.items():
        if key in kept:
            continue
        if match := pattern.search(text):
            out.logged[key] = _first(match)
            if key == "model" and (match.group(1) or match.group(2)) is not None:
                out.logged[key] = _repr_text(out.logged[key])
            if key in _FIRST_OF_BOOT:
                kept.add(key)


def _human_readable_int(value: str) -> int | None:
    """A number as vLLM's human_readable_int reads it (vllm/utils/argparse_utils.py of the 0.34.0 sdist, the type of
    --max-model-len): digits, or a number with a decimal multiplier (k, m, g, t: powers of 1,000; '25.6k' is 25,600)
    or a whole number with a binary one (K, M, G, T: powers of 1,024); None for a decimal with a binary multiplier,
    which it refuses."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT]?)", value)
    if match is None:
        return None
    number, suffix = match.groups()
    if not suffix:
        return int(number) if number.isdigit() else None
    if suffix.islower():
        return int(float(number) * 1000 ** ("kmgt".index(suffix) + 1))
    return int(number) * 1024 ** ("KMGT".index(suffix) + 1) if number.isdigit() else None


def _read_command(commanded: dict[str, str], text: str, command: str) -> None:
    """Update `commanded` with what the command line `text` gives (_COMMAND) and the model of the shell command it
    belongs to, `command` (_command_model; _continued); the last line wins."""
    for key, pattern in _COMMAND.items():
        if (match := pattern.search(text)) is None:
            continue
        value = _first(match)
        if key == "max_model_len":  # '32k' is 32,000 tokens; one vLLM refuses gives none
            tokens = _human_readable_int(value)
            if tokens is None:
                continue
            value = str(tokens)
        commanded[key] = value
    if (model := _command_model(command)) is not None:
        commanded["model"] = model


def _continued(command: str, previous: str, text: str) -> str:
    """The shell command the line `text` belongs to: `command`, the one so far, joined with it where the line before,
    `previous`, ends in a backslash (the shell's line continuation: it removes the backslash and the newline, POSIX
    'Escape Character (Backslash)'), so `vllm serve \\` with the model on a later line serves that model; else the
    line alone."""
    if previous.rstrip().endswith("\\"):
        return command.rstrip().removesuffix("\\") + " " + text
    return text


def _client_line(lines: list[str], i: int, client: bool) -> bool:
    """Whether line `i` is a serving client's command (_CLIENT_COMMAND) or carries one on (`client`: the line before
    was one, and ends in the shell's continuation '\\'): none of it is the deployment's."""
    return bool(_CLIENT_COMMAND.search(lines[i])) or (client and i > 0 and lines[i - 1].rstrip().endswith("\\"))


def _typed_before(lines: list[str], first: int) -> int:
    """The index of the first of the lines before `first`, the last boot's start (_last_boot), that are no log
    record (no vLLM stamp, no level word leading the bare line): what a paste typed to start that boot (its command,
    a prompt), after the earlier boot's last record; `first` where there are none."""
    start = first
    while start > 0:
        line = lines[start - 1].rstrip()
        if _STAMP.search(line) or _LOG_LEVEL.match(_unprefixed(_plain(line))):
            break
        start -= 1
    return start


def _repr_text(text: str) -> str:
    """The string whose Python repr, inside its quotes, is `text`: the config line's model=%r (vllm/config/vllm.py of
    the 0.34.0 sdist) and the 'non-default args' dict's str write a Windows path's backslash twice ('C:\\\\models\\\\m'
    is C:\\models\\m); `text` as it is where it holds no escape that repr writes."""
    try:
        value = ast.literal_eval(f"'{text}'")
    except (SyntaxError, ValueError):
        return text
    return value if isinstance(value, str) else text


def _open_args(text: str) -> bool:
    """Whether `text` holds a 'non-default args:' dict that does not close on it (a paste wrapped it)."""
    if (match := _ARGS_OPEN.search(text)) is None:
        return False
    rest = text[match.end() :]
    return "{" not in rest or rest.count("{") > rest.count("}")


def parse_boot_log(text: str, record: BootRecord, started: datetime | None = None) -> BootRecord:
    """Fill a copy of `record` with what the log `text` says.

    `started` (naive local wall time of the process start, as the log prints it) anchors the timeline;
    without it the first timestamped line is t=0. Event times have 1 s resolution (the log's).
    Never raises on odd lines; secrets are redacted from kept lines.
    """
    out = record.model_copy(deep=True)
    out.events, out.warnings, out.errors = [], [], []
    seen: set[str] = set()
    t0 = started
    year = _stamp_year(text, started)
    rank_pool_gib: float | None = None  # the smallest per-rank pool of this round (_RANK_POOL)
    carved = False  # a rank printed its pool with the multimodal carve-out taken (_RANK_POOL 'reduced to')
    committed_gib: float | None = None  # the smallest per-rank pool measured after warmup this round (_COMMITTED_POOL)
    wrapped: list[str] | None = None  # the lines so far of a 'non-default args' dict a paste wrapped (_ARGS_OPEN)
    kept: set[str] = set()  # the _FIRST_OF_BOOT keys read since the configuration's build started (_config_starts)
    lines = _records(text)
    hidden = _InOrder(lines)  # every line read in order, kept or not: a PEM body line kept is told by its BEGIN line
    cut = len(lines) - 1 if not text.endswith(("\n", "\r")) else -1  # a last line that may be cut short (_CUT_NUMBER)
    starts = _boot_starts(lines)
    first = starts[-1]  # a log of a restart is read from its last boot on
    out.boots_in_log = len(starts)
    client = False  # the line is a serving client's command, or one of its shell continuations (_CLIENT_COMMAND)
    commanded: dict[str, str] = {}  # what the command lines give (_COMMAND): a key vLLM's own lines give wins over it
    command = ""  # the shell command the line belongs to, joined over its continuations (_continued)
    for i in range(_typed_before(lines, first), first):  # the command typed for the last boot, before its start
        client = _client_line(lines, i, client)
        line = "" if client else _unprefixed(_plain(lines[i].rstrip()))
        command = _continued(command, lines[i - 1] if i else "", line)
        _read_command(commanded, line, command)
    for i, raw in enumerate(lines[first:], start=first):
        line = raw.rstrip()
        client = _client_line(lines, i, client)
        plain = _plain(line)
        bare = _unprefixed(plain)
        stamp = _stamp(line, year)
        if stamp is not None and t0 is not None and t0 - stamp > _NEW_YEAR:  # '12-31 23:59:50' then '01-01 00:00:10'
            year += 1
            stamp = _stamp(line, year)
        if t0 is None and stamp is not None:
            t0 = stamp
        level = _LEVEL.match(bare)
        if level and level.group(1) == "WARNING":
            out.warnings.append(hidden(i))
        elif (level and level.group(1) in ("ERROR", "CRITICAL")) or _FAILURE.search(bare) or _OOM_KILLED.search(bare):
            out.errors.append(hidden(i))
        # on the bare line: the patterns anchored at a line's start (nvidia-smi's rows, 'GPU device name:', a versions
        # table's 'vllm 0.28.0 /') read behind a process tag or a collector's prefix as they do on the clean log
        facts = "" if client else _CUT_NUMBER.sub("", bare) if i == cut else bare
        if _config_starts(facts):
            kept.clear()
        _read_facts(out, facts, kept)
        # whose cache the figures are (the last KV line's core, as the last figures win): one DP rank's of several. Not
        # DP0: 0.10 - 0.17 tag every core 'EngineCore_DP{i}', DP 1's too (vllm/v1/engine/utils.py), so it says nothing
        # a log's data_parallel_size does not
        if (_KV_TOKENS.search(facts) or _CONCURRENCY.search(facts)) and (match := _CORE_RANK.search(plain)):
            if int(match.group(1)):
                out.logged["data_parallel_rank"] = match.group(1)
            else:
                out.logged.pop("data_parallel_rank", None)
        command = _continued(command, lines[i - 1] if i else "", facts)
        _read_command(commanded, facts, command)
        if facts is not bare and (match := _LOGGED["device_name"].search(bare)):  # a card's name, whole or cut short,
            out.logged["device_name"] = _first(match)  # is its words, not a figure (a name cut short maps to no card)
        if wrapped is not None:  # a 'non-default args' dict a paste wrapped: read once it closes (_ARGS_OPEN)
            wrapped.append(facts)
            joined = " ".join(wrapped)
            if joined.count("{") and joined.count("{") <= joined.count("}"):
                _read_logged(out, joined, kept)
                wrapped = None
            elif len(wrapped) >= _ARGS_LINES:
                wrapped = None
        elif _open_args(facts):
            wrapped = [facts]
        if _POOL_ROUND_END.search(plain):
            rank_pool_gib = committed_gib = None
        elif (match := _RANK_POOL.search(plain)) and not (carved and (match.group(2) or match.group(3)) is not None):
            carved = carved or match.group(4) is not None
            pool_gib = float(_first(match)) if match.group(3) is None else round(int(match.group(3)) / GIB, 2)
            rank_pool_gib = pool_gib if rank_pool_gib is None else min(rank_pool_gib, pool_gib)
            out.kv_cache_gib = rank_pool_gib
        elif match := _COMMITTED_POOL.search(plain):
            pool_gib = float(match.group(1))
            committed_gib = pool_gib if committed_gib is None else min(committed_gib, pool_gib)
            out.kv_cache_gib = committed_gib
        for name, pattern in _EVENTS:
            if name not in seen and pattern.search(line):
                seen.add(name)
                t_s = (stamp - t0).total_seconds() if (stamp and t0) else None
                out.events.append(BootEvent(name=name, t_s=t_s, line=hidden(i)[:300]))
    for key, value in commanded.items():
        out.logged.setdefault(key, value)
    if "device_name" not in out.logged:  # a card printed before an earlier boot (nvidia-smi's table): the same host
        card = _LOGGED["device_name"]
        names = [_first(match) for line in lines[:first] if (match := card.search(_unprefixed(_plain(line))))]
        if names:
            out.logged["device_name"] = names[-1]
    if (
        platform := platform_of(_unprefixed(_plain(line)) for line in lines)
    ) is not None:  # earlier boots too: one host
        out.logged["platform"] = platform
    if out.errors:
        out.failure_cause = _failure_cause(lines[first:], cut >= 0)
    return out


def _last_boot(lines: list[str]) -> int:
    """The index of the line the last boot of a log's `lines` starts at (0 for a log of one boot): _boot_starts."""
    return _boot_starts(lines)[-1]


def _boot_starts(lines: list[str]) -> list[int]:
    """The index of the line each boot of a log's `lines` starts at, in order ([0] for a log of one boot): a boot start
    (_BOOT_START) after a boot came up; the banner after an earlier boot's start, events or errors; an engine start
    after a boot that failed and has an engine start of its own (or whose start the paste cut); any start after a boot
    logged its KV cache (_KV_TOKENS, _GPU_BLOCKS), unless an engine start under another DP rank's tag than the
    boot's own starts (_CORE_RANK: each core of a data-parallel boot logs its own start and KV line), and not
    stamped before that line (a paste of a boot's end, then its start), from that boot's 'non-default args' where it
    logged them after the KV line (two pasted logs, the first an excerpt that stops at its KV cache: its KV line was
    read with the second's config; a stamp that crossed a new year reads as earlier). A boot that
    failed ends at its last error line, and the lines after it (the next boot's first warnings, the 'non-default args'
    before V0's engine start) are the next boot's; after a boot that came up, the next starts at its own line (what the
    server logged while it ran is no start-up line)."""
    first = tail = 0  # the current boot's first line; the line after its last error line
    boot_seen = engine_started = came_up = said = False  # said: a boot's event read (_EVENTS), its start cut or not
    allocated: tuple[str, ...] | None = None  # the stamp ('MM', 'DD', ...; () where none) of the boot's KV cache line
    opened: int | None = None  # the first line after that that starts a configuration's build (_config_starts)
    ranks: set[str] = set()  # the DP ranks of the boot's engine starts (_CORE_RANK; '' for a start with none)
    cores: dict[str, str] = {}  # the engine cores (tag -> pid, _CORE) whose KV lines the boot logged
    allocated_at = 0  # the line of the boot's first KV line
    starts = [first]
    for i, raw in enumerate(lines):
        bare = _unprefixed(_plain(raw.rstrip()))
        level = _LEVEL.match(bare)
        if (level and level.group(1) != "WARNING") or _FAILURE.search(bare):  # not a platform's OOM-kill report,
            tail = i + 1  # which may come before the container's log (gpu16g-sm90-...-container-oom): it is the run's
        elif _BOOT_READY.search(bare):
            came_up = True
        elif match := _BOOT_START.search(bare):
            banner, failed = match.group(1) is not None, tail > first
            stamp = _STAMP.search(bare)  # a start stamped before the KV line is this boot's, pasted after it
            rank = None if banner else (m.group(1) if (m := _CORE_RANK.search(_plain(raw))) else "")
            other_core = bool(rank) and bool(ranks) and "" not in ranks and rank not in ranks  # another DP rank's
            later = (
                allocated is not None and not (stamp and allocated and stamp.groups() < allocated) and not other_core
            )
            again = came_up or later or (banner and (boot_seen or said))
            if again or (failed and (banner or (engine_started and not other_core) or not boot_seen)):
                first = tail if failed and not came_up else i if came_up or opened is None else opened
                tail, engine_started, came_up, said, allocated, opened = first, False, False, False, None, None
                ranks, cores = set(), {}
                starts.append(first)
            boot_seen, engine_started = True, engine_started or not banner
            if rank is not None:
                ranks.add(rank)
        said = said or any(pattern.search(bare) for _, pattern in _EVENTS)
        if allocated is not None and opened is None and _config_starts(bare):
            opened = i
        if _KV_TOKENS.search(bare) or _GPU_BLOCKS.search(bare):
            core = m.groups() if (m := _CORE.search(_plain(raw))) else None
            if allocated is not None and core and _other_engine(cores, *core):
                first = _engine_lines_start(lines, i, allocated_at, cores)
                tail, engine_started, came_up, said, opened, ranks, cores = first, False, False, False, None, set(), {}
                starts.append(first)
                allocated = None
            if allocated is None:
                allocated = stamp.groups() if (stamp := _STAMP.search(bare)) else ()
                allocated_at = i
            if core:
                cores.setdefault(core[0], core[1])
    return starts


def _other_engine(cores: dict[str, str], tag: str, pid: str) -> bool:
    """Whether an engine core `tag` of `pid` (_CORE) is another engine's than `cores` (tag -> pid of the cores whose KV
    lines a boot logged): an untagged core beside tagged ones or the reverse, or a tag of theirs under another pid."""
    tagged = tag != "EngineCore"
    return any((other != "EngineCore") != tagged or (other == tag and cores[other] != pid) for other in cores)


def _engine_lines_start(lines: list[str], i: int, allocated_at: int, cores: dict[str, str]) -> int:
    """Where the engine whose KV line `lines[i]` is starts, after the last line since the earlier engine's KV line (at
    `allocated_at`) logged under a process of that engine (a pid of its lines up to there): the new engine's own lines
    before its KV line (its workers' pool lines) are its, and so are untagged lines between (a heading, a fence)."""
    earlier = {pid for line in lines[: allocated_at + 1] for pid in _PIDS.findall(_plain(line))} | set(cores.values())
    start = i
    while start > allocated_at + 1 and not earlier & set(_PIDS.findall(_plain(lines[start - 1]))):
        start -= 1
    return start


# What a server logs while it runs, on the bare_line: its INFO, DEBUG and WARNING lines (vLLM's stats line 'INFO 12-04
# 21:57:46 [loggers.py:257] Engine 000: Avg prompt throughput: ...', uvicorn's access line 'INFO:     127.0.0.1:50712 -
# "POST /v1/chat/completions HTTP/1.1" 200 OK'); of those, what can still change its boot's reading: a boot start (a
# restart, read from its own line on: _last_boot), a failure (failure_cause) or an event's line (_EVENTS)
_ROUTINE = re.compile(r"^(?:INFO|DEBUG|WARNING)\b")
_LOG_LEVEL = re.compile(r"^(?:INFO|DEBUG|WARNING|ERROR|CRITICAL)\b")  # a log record's level word, on the bare_line
_AFTER_READY = re.compile("|".join(
    [f"(?:{_BOOT_START.pattern})", f"(?:{_FAILURE.pattern})", f"(?i:{_OOM_KILLED.pattern})",
     *(f"(?:{pattern.pattern})" for _, pattern in _EVENTS)]
))  # fmt: skip


def boot_edge(bare: str) -> Literal["ready", "start"] | None:
    """'ready' where `bare` (a bare_line) says a boot came up (_BOOT_READY: the engine core's 'init engine (profile,
    create kv cache, warmup model) took', the API server's 'Application startup complete'), 'start' where it starts
    one (_BOOT_START: the API server's version line, the engine's 'Initializing a V1 LLM engine'), else None."""
    return "ready" if _BOOT_READY.search(bare) else "start" if _BOOT_START.search(bare) else None


def read_after_ready(bare: str) -> bool:
    """Whether `bare` (a bare_line), logged after its boot came up (boot_edge), is a line parse_boot_log may still read
    something from: one with no INFO, DEBUG or WARNING level (an ERROR line, a traceback's frame, a crash's 'Killed',
    the nvidia-smi and versions tables a paste appends after the boot: t4-gemma4-e2b-len16384-v0280 names its card and
    version there), or a boot start, failure or event (_AFTER_READY). The rest is what the server logged while it ran,
    millions of lines in an engine that served for weeks, which _last_boot counts to no boot."""
    return not _ROUTINE.match(bare) or bool(_AFTER_READY.search(bare))


# What a verdict on a boot that has not come up is read from (log_summary.boot_verdict: outcome, cause, length, tensor
# parallel size, card, model, KV cache tokens and GiB, concurrency, version), besides what _AFTER_READY names: the facts
# _read_facts and _read_logged read into those fields, the pool rounds (_RANK_POOL, _POOL_ROUND_END, _COMMITTED_POOL),
# a wrapped 'non-default args' dict's first line, and the causes failure_cause reads on any line of a failed boot
_VERDICT_FACTS = [
    *_VERSION, _KV_TOKENS, _KV_GIB, _RANK_POOL, _POOL_ROUND_END, _COMMITTED_POOL, _MEMSTAT, _CONCURRENCY, _ARGS_OPEN,
    _PROGRAM_ALLOC, _PROGRAM_FREE, *(_LOGGED[key] for key in ("model", "max_model_len", "tensor_parallel_size",
    "device_name")), *(_COMMAND[key] for key in ("model", "max_model_len", "tensor_parallel_size")), _SERVE_ARGS,
    _PLATFORM_MARK, *(pattern for pattern, _ in _CAUSES),
]  # fmt: skip
_BEFORE_READY = (_AFTER_READY, *_VERDICT_FACTS)
# The messages the grammar reads a fact from, one of which a row of a bare excerpt opens unless a wrap broke it off
# the row before (_opens_message)
_MESSAGES = (
    *_BEFORE_READY,
    _WEIGHT_LOAD,
    _WEIGHTS_GIB,
    _CLOSING_WEIGHTS_GIB,
    _GPU_BLOCKS,
    _CUDA_GRAPH_ESTIMATE,
    _CUDA_GRAPH_CAPTURE,
    _ESTIMATED_LEN,
    _INIT_KV,
    _KV_NEEDED,
)  # searched one by one: as one alternation each line took 2-4x longer


def read_before_ready(bare: str) -> bool:
    """Whether `bare` (a bare_line), logged before its boot came up, is a line the boot's verdict may be read from
    (log_summary.boot_verdict): one with no INFO, DEBUG or WARNING level, or one naming a fact of the verdict, a boot
    start, failure or event (_BEFORE_READY). The rest (an engine still starting that logs 'Waiting for 1 local, 0
    remote core engine proc(s) to start.' every 10 s at DEBUG: vllm/v1/engine/utils.py wait_for_engine_startup) is
    left out of what the verdict is read from; the BootRecord read without them lacks their warnings."""
    return not _ROUTINE.match(bare) or any(pattern.search(bare) for pattern in _BEFORE_READY)


def last_boot(lines: list[str]) -> tuple[int, list[str]]:
    """The number of boots in a log's `lines` (_boot_starts) and the lines of the last, after the last line before it
    naming the card (_LOGGED's device_name), which parse_boot_log reads where the boot names none, and the last one
    before it of each platform mark (PLATFORMS: a plugin's 'Platform plugin metal is activated' comes before the boot's
    banner), which it reads with the boot's: what it reads of `lines`."""
    starts = _boot_starts(lines)
    first = starts[-1]
    card = _LOGGED["device_name"]
    named = next((line for line in reversed(lines[:first]) if card.search(_unprefixed(_plain(line)))), None)
    marked = {m.lastgroup: line for line in lines[:first] if (m := _PLATFORM_MARK.search(_unprefixed(_plain(line))))}
    earlier = [line for line in lines[:first] if line is named or line in marked.values()]
    return len(starts), earlier + lines[first:]


def platform_of(lines: Iterable[str]) -> str | None:
    """The key of PLATFORMS whose marks `lines` show, the first in its order where they show several (a plugin that
    reports device type 'cpu' beside its own lines); None where they show none."""
    seen = {match.lastgroup for line in lines if (match := _PLATFORM_MARK.search(line))}
    return next((key for key in PLATFORMS if key in seen), None)


def unplanned_platform(boot: BootRecord) -> str | None:
    """One line saying that `boot` (parse_boot_log) is a log of a platform no engine rule plans (PLATFORMS with no
    engine: Apple Metal, IBM Spyre, Intel Gaudi), so no plan can be held against it; None for any other log."""
    platform = PLATFORMS.get(boot.logged.get("platform", ""))
    if platform is None or platform.engine is not None:
        return None
    engines = sorted({p.engine for p in PLATFORMS.values() if p.engine is not None})
    return (
        f"the log is of {platform.name}, a platform onechip plans no engine for (it plans {', '.join(engines)}): "
        "no plan can be held against it"
    )


class _InOrder:
    """The lines of one log redacted as errors.lines_redactor reads them, each line before a kept one read too (passed:
    no text made), so a private key's PEM body or a secret cut by a wrap is hidden in a line kept alone; a kept line's
    text is its line's, its trailing whitespace dropped. Lines are asked for in order, one more than once."""

    def __init__(self, lines: list[str]) -> None:
        self.lines, self.read, self.shown = lines, 0, ""
        self.hidden = lines_redactor()

    def __call__(self, i: int) -> str:
        """Line `i` redacted (i at least the last line asked for)."""
        while self.read <= i:
            if self.read < i:
                self.hidden.passed(self.lines[self.read])
            else:
                self.shown = self.hidden(self.lines[i], self.lines[i + 1] if i + 1 < len(self.lines) else None).rstrip()
            self.read += 1
        return self.shown


def read_boot_log(text: str, engine: str, model: str) -> BootRecord:
    """A BootRecord for a log file read on its own (`plan --against LOG`): what parse_boot_log reads."""
    return parse_boot_log(text, BootRecord(engine=engine, model=model))


def planned_log_tokens(plan: Plan) -> int:
    """The token figure the plan expects the engine's 'KV cache size' line to print (plan.kv_tokens_logged;
    plans stored before that field existed compare against the pool figure, kv_tokens)."""
    return plan.kv_tokens_logged if plan.kv_tokens_logged is not None else plan.kv_tokens


def planned_concurrency(plan: Plan, context: int) -> float:
    """Planned max concurrency at `context` tokens per request: the plan's own figure when it computed one
    for that context, else pool tokens / the request rounded up to whole blocks."""
    known = {c.context_tokens: c.max_concurrency for c in plan.concurrency}
    if context in known:
        return known[context]
    return plan.kv_tokens / (-(-context // plan.block_size) * plan.block_size)


def _printed_gib_agrees(planned_gib: float, logged_gib: float) -> bool:
    """Whether a pool the log prints in GiB to 2 decimals is `planned_gib`: within half its last digit, +-0.005
    (float rounding aside)."""
    return abs(planned_gib - logged_gib) <= 0.005 + 1e-9


def _compare_gpu_pool(plan: Plan, boot: BootRecord, notes: list[str]) -> bool | None:
    """A vLLM GPU log without a token line, by what it prints instead: V0's block count ('# GPU blocks: N',
    executor_base.py; per GPU, exact) or the pool per GPU ('Available KV cache memory' / V0's 'reserved for KV
    Cache is', 2 decimals: +-0.005 GiB). None when it prints neither (or has a token line, compared instead)."""
    budget = plan.memory_budget
    if plan.engine != "vllm-gpu" or budget is None or boot.kv_cache_tokens is not None:
        return None
    if boot.kv_cache_num_blocks is not None:
        if boot.kv_cache_num_blocks == plan.num_blocks:
            return True
        notes.append(f"KV blocks per GPU: planned {plan.num_blocks:,}, reported {boot.kv_cache_num_blocks:,}")
        return False
    if boot.kv_cache_gib is None:
        return None
    planned = budget.kv_cache_bytes / GIB
    if _printed_gib_agrees(planned, boot.kv_cache_gib):
        return True
    notes.append(f"KV pool per GPU: planned {planned:.2f} GiB, reported {boot.kv_cache_gib:.2f} GiB")
    return False


def _compare_totals(plan: Plan, boot: BootRecord, planned_conc: float, notes: list[str]) -> bool:
    """KV tokens (exact), concurrency (0.01, as vLLM prints it), the TPU pool (the log's 2-decimal GiB,
    +-0.005) and, on a GPU log without a token line, its blocks or pool (_compare_gpu_pool). Returns whether they
    agree; appends what differs to `notes`."""
    agrees = _compare_gpu_pool(plan, boot, notes) is not False
    tokens, planned = boot.kv_cache_tokens, planned_log_tokens(plan)
    if tokens is not None and tokens != planned:
        agrees = False
        diff = tokens - planned
        share = f", {diff / planned:+.2%}" if planned else ""  # a plan that does not fit plans 0 tokens
        notes.append(
            f"KV tokens: planned {planned:,}, reported {tokens:,} ({diff:+,}{share}); "
            "check block size, KV dtype and pool size"
        )
    if not agrees:
        _name_card_total(plan, boot, notes)
        _name_version(plan, boot, notes)
    context = boot.max_concurrency_context or plan.max_model_len
    if boot.max_concurrency is None:
        if tokens is not None:
            notes.append("the engine log reported no maximum concurrency")
    elif abs(round(planned_conc, 2) - boot.max_concurrency) > 0.01 + 1e-9:
        agrees = False
        notes.append(
            f"concurrency at {context:,} tokens: planned {planned_conc:.2f}x, reported {boot.max_concurrency:.2f}x"
        )
    avail = boot.hbm_gib.get("avail")
    if avail is not None and not _printed_gib_agrees(plan.kv_pool_bytes / GIB, avail):
        agrees = False
        notes.append(f"KV pool: planned {plan.kv_pool_bytes / GIB:.2f} GiB, reported {avail:.2f} GiB")
    return agrees


def _card_gib(plan: Plan) -> float | None:
    """The memory one GPU of a vLLM GPU plan has as the runtime sees it, GiB (the chip's visible memory); None for
    other engines."""
    return plan.memory_bytes / plan.devices / GIB if plan.engine == "vllm-gpu" and plan.memory_bytes else None


def _name_card_total(plan: Plan, boot: BootRecord, notes: list[str]) -> None:
    """Where the pool or token figure differs and the log prints its card's total memory more than its print rounding
    (2 decimals: 0.005 GiB) from the planned chip's, say so: the pool is that total x utilization less the rest, so a
    card the runtime sees whole (an RTX 4090 under WSL2 logs 23.99 GiB, Linux hosts 23.53: tests/fixtures/bootlogs
    rtx4090-wsl-qwen25-0.5b-len2048-util085-v0271) moves every figure without being another card (_SAME_CARD; one
    further apart is, and _other_deployment names it)."""
    card = _card_gib(plan)
    total = float(boot.logged["total_memory_gib"]) if "total_memory_gib" in boot.logged else None
    if card is None or total is None or abs(total / card - 1) > _SAME_CARD:
        return  # another card: _other_deployment says so
    if abs(total - card) > 0.005 + 1e-9:
        notes.append(
            f"the log's card shows {total:.2f} GiB per GPU, planned {plan.chip}'s {card:.2f} GiB: the pool is that "
            f"total x utilization less the rest; --chip gpu:{total:.2f}GiB plans the log's"
        )


def _name_version(plan: Plan, boot: BootRecord, notes: list[str]) -> None:
    """Where the pool or token figure differs and the log's vLLM is another release than the plan's (a plan made with
    no --engine-version is for the release `up` runs, engines.json `release`), say so: the rules (profiling, graphs,
    hybrid pages) are the plan's release's, and the version alone can move the figure (a vLLM 0.19.0 Granite-4.0-H log
    planned at 0.32.0: 143,872 against 387,718 tokens, qa68b). One release's builds share a key
    (catalog.files.version_key: a dev build is the release before its number); a version that reads as no release
    number is not named, nor an untagged build's ('0.1.devN': the planner plans it as no --engine-version, so the flag
    would plan the same; catalog.files.untagged_build)."""
    logged, planned = boot.engine_version, plan.engine_version
    if not logged or not planned or logged == planned or untagged_build(logged):
        return
    try:
        if version_key(logged) == version_key(planned):
            return
    except ConfigError:
        return
    notes.append(f"the log is vLLM {logged}, the plan is for vLLM {planned}: --engine-version {logged} plans the log's")


def _known_lies(plan: Plan, boot: BootRecord, notes: list[str]) -> tuple[bool, list[str]]:
    """(block size agrees, flags): the layer-0 shape line, fp8 with unchanged capacity, a derived token line."""
    flags: list[str] = []
    agrees = True
    shape = boot.kv_cache_shape
    if shape is not None:
        block, head_dim = shape[0], shape[3]
        if block != plan.block_size:
            agrees = False
            notes.append(f"block size: planned {plan.block_size}, reported {block}")
        dims = {layer.head_dim for layer in plan.layers if layer.owns_cache}
        if len(dims) > 1:
            flags.append("shape-line-layer0")
            notes.append(
                f"the shape line shows head dim {head_dim} sampled from layer 0; cached layers have "
                f"head dims {sorted(dims)} - size KV from the geometry, not that line"
            )
    # fp8 elements are 1 B; a shape with 4 K/V slots per head (vs 2 at bf16) is the word-aligned layout
    # that keeps bytes per block unchanged (seed article: (32,1,2,256) bf16 vs (32,1,4,256) fp8).
    tokens = boot.kv_cache_tokens
    same_tokens = tokens is not None and plan.kv_cache_dtype == "auto" and tokens == plan.kv_tokens
    if boot.fp8_kv_cache_dtype and (same_tokens or (shape is not None and shape[2] >= 4)):
        flags.append("fp8-unchanged-capacity")
        notes.append(
            f"the engine ran kv_cache_dtype={boot.fp8_kv_cache_dtype} but its capacity is that of bf16 "
            "(1.000x): narrowing the element bought padding, not room"
        )
    if any(layer.sliding_window for layer in plan.layers) and tokens is not None:
        flags.append("token-line-derived")
        notes.append(
            f"hybrid model: the KV token line is derived and its meaning changed between vLLM "
            f"versions (this log: {boot.engine_version or 'version not logged'})"
        )
    return agrees, flags


def crosscheck(plan: Plan, boot: BootRecord, other_card: OtherCard | None = None) -> CrossCheck:
    """Planned vs what the engine's boot log reported (`boot` from parse_boot_log).

    Tokens must match exactly (the figure the engine's version prints: planned_log_tokens), concurrency to
    0.01 (vLLM prints two decimals; recomputed for the context the log states it for), the TPU KV pool at
    the log's 2-decimal GiB precision, the block size from the TPU shape line; a GPU log without a token line by
    its blocks or pool per GPU (_compare_gpu_pool). Known log lies become `flags`. A log with none of these has
    nothing to compare: `compared` and `agrees` are False and the note says so. A boot that failed (the grammar's
    failure_cause) is flagged 'boot-failed' and its cause leads the note, whatever else compares. A log of another
    deployment (_other_deployment; its card by name through `other_card`, which the planner supplies) is flagged
    'other-deployment'; a plan and a log that both left max_model_len to vLLM's auto-fit are one deployment, the
    lengths each fitted compared as a figure (_compare_fitted_length).
    """
    context = boot.max_concurrency_context or plan.max_model_len
    planned_conc = planned_concurrency(plan, context)
    notes: list[str] = []
    reported_pool = int(boot.hbm_gib["avail"] * GIB) if "avail" in boot.hbm_gib else None
    gpu_figure = plan.engine == "vllm-gpu" and (boot.kv_cache_num_blocks is not None or boot.kv_cache_gib is not None)
    compared = any(x is not None for x in (boot.kv_cache_tokens, reported_pool, boot.max_concurrency)) or gpu_figure
    length = _compare_fitted_length(plan, boot, notes)
    totals = _compare_totals(plan, boot, planned_conc, notes)
    block, flags = _known_lies(plan, boot, notes)
    if not compared:
        notes.insert(
            0,
            "nothing to compare: the log reported neither KV tokens, blocks, concurrency nor the KV pool "
            "(no KV cache size, blocks or memory line)",
        )
    other = _other_deployment(plan, boot, other_card)
    if other:
        flags.append("other-deployment")
        notes.insert(0, other)
    if boot.failure_cause:
        flags.append("boot-failed")
        notes.insert(0, f"the engine did not start: {boot.failure_cause}")
    return CrossCheck(
        planned_kv_tokens=planned_log_tokens(plan), reported_kv_tokens=boot.kv_cache_tokens,
        planned_max_concurrency=planned_conc, reported_max_concurrency=boot.max_concurrency,
        planned_kv_pool_bytes=plan.kv_pool_bytes, reported_kv_pool_bytes=reported_pool,
        engine_version=boot.engine_version, flags=flags,
        agrees=compared and length and totals and block and not other, compared=compared,
        note="; ".join(notes) if notes else "planned and reported agree",
    )  # fmt: skip


def _both_auto_fit(plan: Plan, boot: BootRecord) -> bool:
    """Whether the plan and the boot both left max_model_len to vLLM's auto-fit (the plan's AUTO_FIT note, the log's
    'max_model_len_auto'): then one deployment, whatever length each fitted."""
    return "max_model_len_auto" in boot.logged and any(w.code == AUTO_FIT for w in plan.warnings)


def _compare_fitted_length(plan: Plan, boot: BootRecord, notes: list[str]) -> bool:
    """Whether the length an auto-fit plan fitted is the one the auto-fit boot logged (True where either did not
    fit one, or the log names none); appends what differs to `notes`."""
    logged = boot.logged.get("max_model_len")
    if not _both_auto_fit(plan, boot) or logged is None or int(logged) == plan.max_model_len:
        return True
    notes.append(
        f"max_model_len (--max-model-len auto): planned {plan.max_model_len:,}, the engine fitted {int(logged):,}"
    )
    return False


# A snapshot of the Hugging Face Hub cache, '<cache>/models--{owner}--{name}/snapshots/{revision}': huggingface_hub's
# file_download.repo_folder_name joins 'models' and the repo id's parts with constants.REPO_ID_SEPARATOR '--' (2.4.0),
# and utils/_validators.validate_repo_id refuses '--' in an id, so the folder splits back into one id
# (a Windows cache's path separates them by a backslash: C:\Users\me\.cache\huggingface\hub\models--...)
_HUB_SNAPSHOT = re.compile(r"(?:^|[/\\])models--((?:[^/\\]+?--)?[^/\\]+)[/\\]snapshots[/\\][^/\\]+[/\\]?$")
# A model named by where its checkpoint directory is, not by a Hub id: a path from a root ('/', '.', '~'), a Windows
# drive ('C:\models\m', 'D:/models/m') or a UNC share ('\\wsl.localhost\Ubuntu\models\m')
_DIRECTORY = re.compile(r"^(?:[/.~]|[A-Za-z]:[\\/]|\\\\)")


def hub_snapshot_id(path: str) -> str | None:
    """The Hugging Face repo id a Hub cache snapshot path holds ('.../models--deepseek-ai--DeepSeek-V4-Flash-0731/
    snapshots/7872f01b...' -> 'deepseek-ai/DeepSeek-V4-Flash-0731'), None for any other path (a directory its owner
    named, whose name says nothing of what it holds)."""
    match = _HUB_SNAPSHOT.search(path)
    return match.group(1).replace("--", "/") if match else None


def _name(model: str) -> str:
    """A model as its last path part, lower case: 'google/gemma-4-E2B-it' and '/models/gemma-4-e2b-it' are one."""
    return model.rstrip("/").rsplit("/", 1)[-1].lower()


def _kv_element(plan: Plan, value: str) -> str:
    """A --kv-cache-dtype as the element it stores for `plan`'s model: 'auto' is what it serves for the plan's
    checkpoint whatever the plan asked (Plan.auto_kv_cache_dtype: a ModelOpt checkpoint's stated KV dtype, which vLLM
    resolves auto to, resolve_kv_cache_dtype_string in vllm/utils/torch_utils.py of the 0.34.0 sdist; else the model
    dtype), in a plan made before that was recorded the plan's own where it took it from the checkpoint
    (ServeSettings.kv_cache_dtype source 'model'), else the model dtype; 'fp8' is fp8_e4m3 (vllm/config/cache.py
    CacheDType: 'fp8 (=fp8_e4m3)')."""
    setting = plan.serve.kv_cache_dtype
    if value == "auto" and plan.auto_kv_cache_dtype is not None:
        value = plan.auto_kv_cache_dtype
    elif value == "auto":
        value = plan.kv_cache_dtype if setting is not None and setting.source == "model" else plan.dtype
    return {"auto": plan.dtype, "fp8": "fp8_e4m3"}.get(value, value)


def _served_inputs(plan: Plan, logged: dict[str, str]) -> list[str]:
    """What the boot was served with (`logged`: 'non-default args', the config line, else the command line) that the
    plan sized memory with otherwise, each with the figure it moves: the KV cache's element (KV bytes per token), an
    online quantization (the weights) and max_num_seqs (the profiling run's activations and the sampler's warm-up).
    A --quantization is compared where the plan's checkpoint has no quantization_config (Plan.quantized_checkpoint
    False), or in a plan made before that was recorded where the plan gave one: on a quantized one vLLM serves the
    checkpoint's own method whatever the flag names (awq_marlin for an AWQ checkpoint planned 'awq'), or refuses it,
    which moves nothing."""
    differs: list[str] = []
    kv = logged.get("kv_cache_dtype")
    if kv is not None and _kv_element(plan, kv) != _kv_element(plan, plan.kv_cache_dtype):
        differs.append(
            f"kv_cache_dtype {kv}, planned {plan.kv_cache_dtype}"
            f"{f' ({plan.dtype})' if plan.kv_cache_dtype == 'auto' else ''}: it moves the KV bytes per token, so the "
            "KV tokens and concurrency"
        )
    planned_q = plan.serve.quantization.value if plan.serve.quantization is not None else None
    given_q = logged.get("quantization")
    compared = plan.quantized_checkpoint is False or (plan.quantized_checkpoint is None and planned_q is not None)
    if given_q is not None and given_q != planned_q and compared:
        differs.append(f"quantization {given_q}, planned {planned_q or 'none'}: it moves the weights, so the KV pool")
    seqs = logged.get("max_num_seqs")
    planned_seqs = plan.serve.max_num_seqs.value if plan.serve.max_num_seqs is not None else None
    if seqs is not None and int(seqs) != planned_seqs:
        planned = f"{planned_seqs:,}" if planned_seqs is not None else "the engine's default"
        differs.append(
            f"max_num_seqs {int(seqs):,}, planned {planned}: it moves the profiling run's activations and the "
            "sampler's warm-up, so the KV pool"
        )
    return differs


def _other_deployment(plan: Plan, boot: BootRecord, other_card: OtherCard | None = None) -> str | None:
    """One line naming what the log's deployment (boot.logged) has that the plan does not: another model (with the
    log's architecture beside the plan's model type), max_model_len, tensor_parallel_size, a data_parallel_size above
    1 (the plan is one engine), gpu_memory_utilization (where the plan has one), another card by name
    (`other_card(plan.chip, logged device_name)`: an H100 log and an A100 80GB plan have one total memory), a KV token
    log of another engine's platform (PLATFORMS: a CPU or TPU engine's for a vLLM GPU plan) or, on a
    vLLM GPU plan, a total memory per GPU more than _SAME_CARD from the planned chip's (another card); None when
    what the log names matches (or it names none of them, or a card name that maps to no one chip); and the inputs of
    _served_inputs (KV cache dtype, quantization, max_num_seqs). Each is read from vLLM's own lines ('non-default args',
    the config line) where the log has them, else from the command line pasted before it: the log line wins where both
    give one (parse_boot_log, _COMMAND). Models are told
    apart by name only when neither is a checkpoint directory (a directory's name is whatever its owner chose:
    '/models/m' may hold the planned model), a Hub cache snapshot being read as the repo id it holds
    (hub_snapshot_id)."""
    logged, differs = boot.logged, []
    model = logged.get("model")
    snapshot = hub_snapshot_id(model) if model is not None else None
    model, how = (snapshot, " (a Hugging Face cache snapshot)") if snapshot else (model, "")
    named = model is not None and plan.model_source != "local" and not _DIRECTORY.match(model)
    if model is not None and named and _name(model) not in {_name(plan.model), _name(plan.serve_model or plan.model)}:
        arch = f" ({logged['architecture']})" if "architecture" in logged else how
        differs.append(f"model {model}{arch}, planned {plan.model} ({plan.architecture})")
    for key, planned in (
        ("max_model_len", plan.max_model_len),
        ("tensor_parallel_size", plan.tensor_parallel_size),
        ("data_parallel_size", 1),  # onechip plans one engine; --replicas N plans N of them, each its own log
    ):
        if key == "max_model_len" and _both_auto_fit(plan, boot):
            continue  # the length is what each fitted, a prediction (_compare_fitted_length), not the deployment's
        if key in logged and int(logged[key]) != planned:
            differs.append(f"{key} {int(logged[key]):,}, planned {planned:,}")
    differs += _served_inputs(plan, logged)
    utilization = float(logged["gpu_memory_utilization"]) if "gpu_memory_utilization" in logged else None
    if utilization is not None and plan.utilization is not None and abs(utilization - plan.utilization) > 1e-6:
        differs.append(f"gpu_memory_utilization {utilization:g}, planned {plan.utilization:g}")
    card = _card_gib(plan)
    total = float(logged["total_memory_gib"]) if "total_memory_gib" in logged else None
    if card and total is not None and abs(total / card - 1) > _SAME_CARD:
        differs.append(f"total memory per GPU {total:.2f} GiB, planned {plan.chip}'s {card:.2f} GiB (another card)")
    platform = PLATFORMS.get(logged.get("platform", ""))
    if platform is not None and platform.engine is not None and platform.engine != plan.engine:
        differs.append(f"a log of {platform.name} ({platform.engine}), planned {plan.engine} on {plan.chip}")
    printed = logged.get("device_name")
    if other_card is not None and printed is not None and (another := other_card(plan.chip, printed)) is not None:
        differs.append(f"card {printed}{f' ({another})' if another != printed else ''}, planned {plan.chip}")
    if not differs:
        return None
    return f"the log is of another deployment than the plan: {'; '.join(differs)}"
