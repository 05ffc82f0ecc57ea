"""Boot logs as users paste them (issue 27): a quote marker, a docker compose column, Ray's and torch's process tags
before vLLM's own text, a paste hard-wrapped inside a word. The grammar reads the refusal through them (before
vllm/bootlog.py _bare, a refused boot quoted this way read as a clean one), with the figures of vLLM's start-up KV
check: the memory one request needs and the engine's estimate of the max_model_len its pool holds. Each log is a
real one of tests/fixtures/bootlogs (corpus.json names its source)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from onechip.vllm.bootlog import failure_cause, read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
CORPUS: list[dict[str, Any]] = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
# vLLM's start-up KV checks, V1 (kv_cache_utils.py _check_enough_kv_cache_memory) and V0 (raise_if_cache_size_invalid)
KV_REFUSALS = ("KV cache is needed", "No available memory for the cache blocks", "can be stored in KV cache")
REFUSED_FOR_KV = [
    e for e in CORPUS if e["outcome"] == "refused" and any(k in (e["error_line"] or "") for k in KV_REFUSALS)
]


def _read(name: str) -> Any:
    return read_boot_log((BOOTLOGS / f"{name}.log").read_text(encoding="utf-8"), "vllm", "m")


@pytest.mark.parametrize("entry", REFUSED_FOR_KV, ids=[e["name"] for e in REFUSED_FOR_KV])
def test_every_kv_refusal_of_the_corpus_says_the_pool_is_short(entry: dict[str, Any]) -> None:
    record = _read(entry["name"])
    assert record.errors, "a refused boot read as a clean one"
    assert record.failure_cause is not None
    assert "KV" in record.failure_cause and "--gpu-memory-utilization" in record.failure_cause


def test_the_minimax_refusal_quoted_in_a_chat_quote_reads_whole() -> None:
    # eugr/spark-vllm-docker#396, 2x DGX Spark: '▎ ValueError: To serve at least one request ... (196608),' /
    # '▎ 23.25 GiB KV cache is needed, ... (22.5 GiB).' / '▎ Based on ... the estimated maximum model length is 190272.'
    record = _read("gb10x2-minimax-m27-awq-tp2-len196608-refused-v0291")
    assert (record.kv_cache_gib, record.kv_cache_needed_gib, record.estimated_max_model_len) == (22.5, 23.25, 190272)
    assert record.engine_version == "0.29.1rc1.dev17+gd2d649e67.d20260913"  # from the report's prose
    assert record.failure_cause is not None and "(22.5 GiB)" in record.failure_cause


def test_a_docker_compose_column_hides_no_error() -> None:
    # intel/llm-scaler#672, 2x Arc Pro B70: 'vllm-service  | (EngineCore pid=183) ValueError: No available memory for
    # the cache blocks.' after 'Available KV cache memory: -0.61 GiB'
    record = _read("b70x2-qwen38-27b-bf16-tp2-refused-v0260xpu")
    assert record.kv_cache_gib == -0.61
    assert record.failure_cause is not None and record.failure_cause.startswith("weights and the profiling peak")


def test_a_paste_wrapped_inside_a_word_still_gives_the_needed_memory() -> None:
    # SergiioB/intel-arc-pro-b70-inference-cookbook#4: '(4.26 GiB KV cach' / 'e is needed, ... (4.25 GiB).'
    record = _read("b70-len100000-refused-xpu")
    assert (record.kv_cache_gib, record.kv_cache_needed_gib, record.estimated_max_model_len) == (4.25, 4.26, None)


def test_a_pool_given_by_kv_cache_memory_bytes_is_read_from_its_own_line() -> None:
    # the same log: with --kv-cache-memory-bytes vLLM prints no 'Available KV cache memory' line, only 'Initial free
    # memory 31.16 GiB, reserved 4.25 GiB memory for KV Cache as specified by kv_cache_memory_bytes config'
    text = (BOOTLOGS / "b70-len100000-refused-xpu.log").read_text(encoding="utf-8")
    before_the_refusal = text.split("EngineCore failed to start")[0]
    assert "Available KV cache memory" not in before_the_refusal
    assert read_boot_log(before_the_refusal, "vllm", "m").kv_cache_gib == 4.25


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        # MiniMax-AI/MiniMax-M2.5#30's Ray tags, a colour code as a terminal copy shows it, torch's rank tag
        ("(EngineCore_DP0 pid=1) (RayWorkerWrapper pid=2, ip=172.20.4.203) RuntimeError: boom", "RuntimeError: boom"),
        ("^[[0;36m(EngineCore_DP0 pid=7)^[[0;0m ValueError: bad", "ValueError: bad"),
        ("\x1b[1;31mERROR\x1b[0m 01-01 00:00:00 [core.py:1] OSError: gone", "OSError: gone"),
        ("[rank0]: torch.OutOfMemoryError: CUDA out of memory.", None),  # the OOM cause, checked below
        ("2026-09-11T21:21:56.123456Z (APIServer pid=1) KeyError: 'x'", "KeyError: 'x'"),
        ("> TypeError: quoted", "TypeError: quoted"),
    ],
)
def test_pasted_prefixes_do_not_hide_the_exception(line: str, cause: str | None) -> None:
    found = failure_cause(line)
    assert found == (cause or "the accelerator ran out of memory: lower --gpu-memory-utilization or --max-model-len, "
                     "or re-plan")  # fmt: skip
    assert read_boot_log(line, "vllm", "m").errors


def test_a_table_row_of_the_tpu_log_is_not_a_compose_column() -> None:
    # 'Memory statistics | total_hbm_...' (bootlog module docstring) keeps its figures and is no error
    record = read_boot_log(
        "Memory statistics | total_hbm_limit_gb=15.75GiB | total_hbm_used_gb=8.97GiB | total_hbm_avail_gb=5.52GiB",
        "vllm",
        "m",
    )
    assert record.kv_cache_gib == 5.52 and not record.errors


def test_a_systemd_journal_head_hides_no_warning() -> None:
    # 1CatAI/1Cat-vLLM#237, vLLM as a systemd service: 'авг 18 14:14:46 llm python3[28147]: (Worker pid=28147) WARNING
    # 08-18 14:14:46 [custom_all_reduce.py:174] Custom allreduce is disabled ...' on each of the 4 workers
    record = _read("v100x4-1cat-len8192-journald")
    assert len(record.warnings) == 4 and all("Custom allreduce is disabled" in w for w in record.warnings)
    assert (record.kv_cache_gib, record.kv_cache_tokens, record.max_concurrency) == (5.35, 215401, 26.29)
    journal = "авг 18 14:15:09 llm python3[28059]: (EngineCore pid=28059) ValueError: No available memory for the cache"
    assert read_boot_log(journal, "vllm", "m").errors  # an error line behind the same head is one too


def test_a_process_killed_by_the_oom_killer_is_a_failed_boot() -> None:
    # dusty-nv/jetson-containers#795, Jetson Orin NX 16GB: the pool is sized ('# GPU blocks: 11836, # CPU blocks:
    # 4681'), then the shell's 'Killed' and nothing more
    record = _read("jetson-orin-nx-qwen2-7b-gguf-len200-killed-v063")
    assert record.errors == ["Killed"]
    assert record.failure_cause is not None and "out-of-memory killer" in record.failure_cause
    assert "--swap-space" in record.failure_cause  # its 4,681 CPU blocks are 4 GiB of the same 16 GB


def test_a_negative_pool_names_the_cause_when_the_paste_stops_before_the_exception() -> None:
    # vllm#13882, RTX 4060: 'the rest of the memory reserved for KV Cache is -1.05GiB.', '# cuda blocks: 0', then a
    # traceback cut before V0's 'No available memory for the cache blocks' (vllm/worker/worker.py)
    record = _read("rtx4060-qwen25-7b-util070-len4096-refused-v0")
    assert (record.kv_cache_gib, record.kv_cache_num_blocks) == (-1.05, 0)
    assert record.failure_cause is not None and record.failure_cause.startswith("weights and the profiling peak")


def test_tritons_fp8e4nv_refusal_is_named_not_its_wrapper() -> None:
    # vllm#26431, RTX 3090: 'ValueError("type fp8e4nv not supported in this architecture. ...")' inside
    # 'triton.compiler.errors.CompilationError: at 1:0:', the one exception line of the form 'Name: text'
    record = _read("rtx3090-fp8e4nv-triton-refused")
    assert record.failure_cause is not None
    assert "no FP8 E4M3 (compute capability below 8.9)" in record.failure_cause
    assert "CompilationError" not in record.failure_cause


def test_a_build_without_version_metadata_reports_no_version() -> None:
    # livepeer/ai-runner#230: 'Initializing an LLM engine (vdev) with config: model=..., tensor_parallel_size=2'
    record = _read("gpu2-llama31-8b-tp2-len8192-vdev")
    assert record.engine_version is None
    assert (record.logged["max_model_len"], record.logged["tensor_parallel_size"]) == ("8192", "2")


def test_the_cause_is_the_workers_exception_not_the_wrappers_after_it() -> None:
    # llm-d-planner's Qwen3-14B at TP 5: the worker's 'AssertionError: 151936 is not divisible by 5', then the
    # executor's 'Exception: WorkerProc initialization failed ... See stack trace for root cause.' and the client's
    # 'RuntimeError: Engine core initialization failed. See root cause above.' (vllm/v1/engine/utils.py)
    record = _read("h100x5-qwen3-14b-tp5-refused-v0190")
    assert record.failure_cause == "AssertionError: 151936 is not divisible by 5"
    # a log holding only the wrapper still names it (gpu-qwen3-vl-8b-len4096-eager-dev15312)
    assert _read("gpu-qwen3-vl-8b-len4096-eager-dev15312").failure_cause == (
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    )


def test_a_wrapper_quoted_without_its_pointer_is_still_not_the_cause() -> None:
    # an upgrade note quoting two lines of a TP 2 boot on 2x RTX 5060 Ti (search-index file id 56584983392): the
    # worker's NCCL error, then the executor's wrapper cut before its closing 'See stack trace for root cause.'
    # (vllm/v1/executor/multiproc_executor.py: 'WorkerProc initialization failed due to an exception in a background
    # process. See stack trace for root cause.'), which was taken for the cause
    cause = _read("rtx5060tix2-qwen36-27b-int4-autoround-tp2-nccl-failed-v0202").failure_cause
    assert cause is not None and "WorkerProc" not in cause
    assert "NCCL" in cause and "unhandled cuda error" in cause


@pytest.mark.parametrize(
    "line, meaning",
    [
        # vLLM's pynccl_wrapper.py NCCL_CHECK: RuntimeError(f"NCCL error: {error_str}"), error_str NCCL's
        # ncclGetErrorString; the meanings are NCCL's ncclResult_t docs (user guide, api/types.html)
        (
            "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
            "a call to a CUDA function failed",
        ),
        (  # vllm#39774's title: Qwen3.5 at TP > 1 on vLLM 0.19
            "RuntimeError: NCCL error: unhandled system error",
            "a call to the system failed",
        ),
        (  # vllm#8691: Qwen2.5-72B at TP 4, V0
            "Exception in worker VllmWorkerProcess while processing method init_device: NCCL error: internal error - "
            "please report this issue to the NCCL developers, Traceback (most recent call last):",
            "an internal check failed",
        ),
        (  # torch's ProcessGroupNCCL form (WZMIAOMIAO/deep-learning-for-image-processing#545's title)
            "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:518, unhandled system error, "
            "NCCL version 2.4.8",
            "a call to the system failed",
        ),
        (  # sglang's copy of the same NCCL_CHECK (search-index file id 33728764021)
            "RuntimeError: NCCL error: remote process exited or there was a network error",
            "a network error or a remote process exiting prematurely",
        ),
    ],
)
def test_an_nccl_error_is_named_as_a_failure_between_the_ranks(line: str, meaning: str) -> None:
    cause = failure_cause(line)
    assert cause is not None and meaning in cause and "NCCL_DEBUG" in cause
    assert "out of memory" not in cause  # not a memory shortfall: no re-plan of the budget fixes it


def test_a_oneccl_error_is_named_as_the_xpu_workers_communication_fault() -> None:
    # an XPU boot of Qwen/Qwen3-0.6B at TP 1 on vLLM 0.10.1.dev636 (search-index file id 7375926845): the worker's
    # oneCCL warm-up all-reduce (vllm/v1/worker/xpu_worker.py init_device, at every world size up to 0.28.0's source, at
    # world size > 1 only in 0.32.0's: vllm#52386) raised oneCCL's own exception, 'RuntimeError: oneCCL:
    # comm_selector.cpp:57 create_comm_impl: EXCEPTION: ze_data was not initialized', which was the raw cause
    cause = _read("xpu-e211-qwen3-0.6b-len40960-oneccl-failed-v0101dev").failure_cause
    assert cause is not None and cause.startswith("oneCCL failed")
    assert "ze_data was not initialized" in cause and "not a memory shortfall" in cause and "CCL_LOG_LEVEL" in cause


@pytest.mark.parametrize(
    "line, where, message",
    [
        (  # vllm#10109's title: the XPU offline example on vLLM 0.6.3.post2
            "RuntimeError: oneCCL: exec.cpp:122 start_workers: EXCEPTION: failed to start worker # 0",
            "exec.cpp:122 start_workers",
            "failed to start worker # 0",
        ),
        (  # llm-d/llm-d#2270: an XPU decode pod at TP 4 whose libfabric exposed no providers
            "oneCCL: atl_ofi_comm.cpp:232 init_transport: EXCEPTION: failed to initialize ATL",
            "atl_ofi_comm.cpp:232 init_transport",
            "failed to initialize ATL",
        ),
    ],
)
def test_every_oneccl_exception_is_named_where_it_raised(line: str, where: str, message: str) -> None:
    cause = failure_cause(line)
    assert cause is not None and f"({where}: {message})" in cause and "not a memory shortfall" in cause


# A tqdm bar that ends without a newline glues the next log line to it (tqdm's default bar and its form without a
# total as the tqdm(1) man page prints them, 'counting: 100%|█████████| 432/432 [00:00<00:00, 794361.83files/s]' and
# '327it [00:00, 981773.38it/s]'; vLLM's own 'Loading safetensors checkpoint shards: 100% Completed | 1/1
# [00:02<00:00,  2.44s/it]', tests/fixtures/bootlogs). The vLLM lines after the bars are the corpus's.
WARNING_LINE = (
    "WARNING 08-18 14:14:46 [custom_all_reduce.py:174] Custom allreduce is disabled because it's not supported on "
    "more than two PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly."
)
BARS = [
    "Fetching 4 files: 100%|██████████| 4/4 [00:02<00:00,  1.90it/s]",
    "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:02<00:00,  2.44s/it]",
    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|█████| 19/19 [00:00<00:00, 26.06it/s]",
    "327it [00:00, 981773.38it/s]",
    "(EngineCore_DP0 pid=3963005) Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]",
]


@pytest.mark.parametrize("bar", BARS)
def test_a_log_line_glued_to_a_progress_bar_is_read(bar: str) -> None:
    # before: the bar hid the level, so the warning, the error and the exception's cause were not read
    assert read_boot_log(bar + WARNING_LINE, "vllm", "m").warnings == [bar + WARNING_LINE]
    failed = bar + "(EngineCore pid=28059) ValueError: No available memory for the cache blocks. Try increasing "
    record = read_boot_log(failed + "`gpu_memory_utilization` when initializing the engine.", "vllm", "m")
    assert record.errors and record.failure_cause is not None and record.failure_cause.startswith("weights and the")


def test_a_bar_redrawn_after_a_carriage_return_leaves_the_log_line_its_own() -> None:
    # tqdm redraws with '\r'; the log line written after the last redraw is a line of its own
    text = "Processed prompts:  50%|█████     | 1/2 [00:01<00:01,  1.00s/it]\r" + WARNING_LINE + "\n"
    assert read_boot_log(text, "vllm", "m").warnings == [WARNING_LINE]


def test_a_bar_inside_a_log_line_is_not_stripped() -> None:
    line = "INFO 05-01 10:00:00 [core.py:1] 4/4 [00:02<00:00, 1.9it/s] WARNING is a word here"
    assert not read_boot_log(line, "vllm", "m").warnings


@pytest.mark.parametrize(
    "head",
    [
        "2025-08-18T14:14:46+0300 llm python3[28147]: ",  # journalctl -o short-iso (systemd/systemd#26639: no colon)
        "2025-08-18T14:14:46.123456+0300 llm python3[28147]: ",  # -o short-iso-precise
        "2025-08-18T14:14:46+03:00 llm python3[28147]: ",  # the offset with a colon (RFC 3339)
    ],
)
def test_a_journal_head_in_iso_form_hides_no_warning(head: str) -> None:
    # the v100x4-1cat-len8192-journald line (1CatAI/1Cat-vLLM#237) under journalctl's ISO heads instead of 'авг 18
    # 14:14:46 llm python3[28147]: '
    line = head + "(Worker pid=28147) " + WARNING_LINE
    assert read_boot_log(line, "vllm", "m").warnings == [line]
    error = head + "(EngineCore pid=28059) ValueError: No available memory for the cache blocks."
    assert read_boot_log(error, "vllm", "m").errors


def test_a_terminals_html_copy_is_read_as_the_log_it_shows() -> None:
    # infiniflow/ragflow#9856 (vLLM 0.10.1.1): a terminal's 'Copy as HTML' puts '<font color="#2AA1B3"><b>' around
    # every process tag and writes quotes as '&apos;'; the pool, the token line, the args and the derived length read
    record = _read("gpu2-qwen3-30b-a3b-thinking-2507-fp8-tp2-v01011-html")
    assert (record.engine_version, record.kv_cache_gib, record.kv_cache_tokens) == ("0.10.1.1", 26.13, 570848)
    logged = record.logged
    assert (logged["model"], logged["tensor_parallel_size"]) == ("/home/test/hfd/Qwen3-30B-A3B-Thinking-2507-FP8", "2")
    assert logged["max_model_len"] == "262144"  # 'Using max model len 262144': no --max-model-len in the args


def test_warnings_behind_html_markup_are_warnings() -> None:
    # infiniflow/ragflow#11166 (vLLM 0.11.0): four 'Failed to import DeepGemm kernels.' / 'CutlassBlockScaledGroupedGemm
    # not supported ...' warnings of the two workers and the engine's 'Add 3 padding layers' warning; before, none
    record = _read("gpu2-qwen3-next-80b-a3b-thinking-fp8-mtp2-tp2-len131072-v0110-html")
    assert len(record.warnings) == 5 and "Add 3 padding layers" in record.warnings[-1]
    assert (record.logged["max_model_len"], record.logged["tensor_parallel_size"]) == ("131072", "2")
    assert record.kv_cache_gib == 2.90  # Worker_TP1's pool, printed after Worker_TP0's 2.94


@pytest.mark.parametrize(
    ("name", "warnings", "errors"),
    [
        (
            "a100x2-qwen2-7b-tp2-util025-v01011",
            1,
            0,
        ),  # vLLM 0.10.1.1 '(VllmWorker TP0 pid=1430) WARNING ... Custom ...'
        ("a10x4-qwen3-30b-a3b-tp4-len8192-v085", 1, 4),  # vLLM 0.8.5 '(VllmWorker rank=1 pid=106) ERROR ...' x 4
    ],
)
def test_a_worker_tag_with_a_space_hides_no_level(name: str, warnings: int, errors: int) -> None:
    # vLLM's worker names hold a space in 0.8.x ('VllmWorker rank=1') and 0.10.x ('VllmWorker TP0'): their WARNING and
    # ERROR lines were read as neither (the a10x4 log's capture OOM kept only its 'Traceback' line)
    record = _read(name)
    assert (len(record.warnings), len(record.errors)) == (warnings, errors)


def test_a_cloudwatch_csv_export_of_a_failed_boot_reads_as_one() -> None:
    # aws-samples/amazon-sagemaker-generativeai#111: '1756144011375,#033[1;36m(VllmWorker pid=96)#033[0;0m ERROR 08-25
    # 10:46:51 [multiproc_executor.py:559] WorkerProc failed to start.#015', quoted rows doubling their quotes
    record = _read("sagemaker-gpt-oss-mxfp4-cloudwatch-csv-failed-v0")
    assert len(record.errors) == 14  # 13 ERROR rows of the worker and the engine core, and the API server's exception
    assert record.failure_cause == (
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    )
    # 'vLLM engine args: [--port 8080 --tensor-parallel-size 1 --quantization mxfp4 --gpu-memory-utilization 0.95 ...
    # --model /opt/ml/model ...' (the model and --quantization read as the engine parses its flags, logsc63)
    assert record.logged == {
        "tensor_parallel_size": "1",
        "gpu_memory_utilization": "0.95",
        "model": "/opt/ml/model",
        "quantization": "mxfp4",
    }


def test_the_pool_of_a_tp_boot_is_its_smallest_rank_whatever_the_order() -> None:
    # ragflow#11166's two 'Available KV cache memory' lines (Worker_TP0 2.94 GiB, Worker_TP1 2.90 GiB) in either order:
    # vLLM gives every rank the fewest blocks of any (kv_cache_utils.py get_kv_cache_configs), so the pool is 2.90
    text = (BOOTLOGS / "gpu2-qwen3-next-80b-a3b-thinking-fp8-mtp2-tp2-len131072-v0110-html.log").read_text("utf-8")
    ranks = [line for line in text.splitlines() if "Available KV cache memory" in line]
    assert len(ranks) == 2 and "2.94 GiB" in ranks[0]
    assert read_boot_log("\n".join(reversed(ranks)), "vllm", "m").kv_cache_gib == 2.90
    # a new boot's line starts a new round: its pool is its own, larger or not
    restarted = "\n".join(
        [ranks[1], "INFO 11-11 12:30:00 [api_server.py:1839] vLLM API server version 0.11.0", ranks[0]]
    )
    assert read_boot_log(restarted, "vllm", "m").kv_cache_gib == 2.94


@pytest.mark.parametrize(
    ("name", "estimated_gib"),
    [
        ("h100-llama31-8b-tp1-v0190", 0.84),  # 0.19.0 'Estimated CUDA graph memory: 0.84 GiB total'
        ("l4-gemma4-e2b-w4a16-len8192-v0300", 0.53),  # 0.30.0 'CUDA graph pool memory: 0.28 GiB (actual), 0.53 ...'
        ("rtx5090x2-qwen38-27b-fp8-tp2-closing-memory-lines", 0.13),  # club-3090#1087, Worker_TP1's pool line
    ],
)
def test_the_cuda_graph_estimate_is_read(name: str, estimated_gib: float) -> None:
    # the CUDA-graph memory the profiler keeps out of the pool (0.20+); before, no field held it
    assert _read(name).cuda_graph_estimated_gib == estimated_gib


def test_the_capture_figure_is_the_engines_own_capture() -> None:
    # l4-gemma4-e2b-w4a16-len8192-v0300 (vLLM 0.30.0, V2 runner): 'Graph capturing finished in 11 secs, took 0.48 GiB'
    # (the profiling capture), then 'Graph capturing finished in 6 secs, took 0.28 GiB' (the engine's): 0.28
    assert _read("l4-gemma4-e2b-w4a16-len8192-v0300").cuda_graph_capture_gib == 0.28


def test_a_max_model_len_above_the_models_positions_is_named() -> None:
    # h100-phi2-len8192-refused-v0190 (vLLM 0.19.0): 'pydantic_core._pydantic_core.ValidationError: 1 validation error
    # for ModelConfig' / 'Value error, User-specified max_model_len (8192) is greater than the derived max_model_len
    # (max_position_embeddings=2048.0 or model_max_length=None ...': the cause was the pydantic wrapper's first line
    cause = _read("h100-phi2-len8192-refused-v0190").failure_cause
    assert cause is not None
    assert cause.startswith("--max-model-len 8192 is above the 2048 positions the model's config allows")


def test_a_refusal_pasted_as_inline_code_is_read() -> None:
    # vllm#34076: '`(EngineCore_DP0 pid=1094) ValueError: To serve at least one request with the models's max seq len
    # (262144), (24.0 GiB KV cache is needed, ... (3.18 GiB). ... the estimated maximum model length is 34736.'
    record = _read("rtx5070ti-rtx5090d-qwen3-coder-30b-a3b-fp8-pp2-len262144-refused-v0152dev")
    assert (record.kv_cache_gib, record.kv_cache_needed_gib, record.estimated_max_model_len) == (3.18, 24.0, 34736)
    assert record.failure_cause is not None and record.failure_cause.startswith("the KV pool (3.18 GiB)")
    assert record.logged["max_model_len"] == "262144"  # the refusal's 'max seq len (262144)'
    # the environment line 'vllm-0.15.2rc1.dev93+g11a4c9d30.cu128-cp312-cp312-linux_x86_64.whl'
    assert record.engine_version == "0.15.2rc1.dev93+g11a4c9d30.cu128"


@pytest.mark.parametrize(
    ("name", "first", "frame"),
    [
        # vllm#17469 (vLLM 0.8.5, 4x A10): the capture OOM's traceback is cut before its exception
        ("a10x4-qwen3-30b-a3b-tp4-len8192-v085", "WorkerProc hit an exception.", "self.model_runner.capture_model()"),
        # vllm#27508 (0.11.0, gpt-oss-120b at 0.95): cut after the engine core's first frames
        (
            "h100-gpt-oss-120b-util095-refused-v011",
            "EngineCore failed to start.",
            "engine_core = EngineCoreProc(*args, **kwargs)",
        ),
    ],
)
def test_a_log_cut_inside_its_traceback_is_a_failed_boot(name: str, first: str, frame: str) -> None:
    # they had ERROR lines and no cause, so plan --against did not say the boot failed
    assert _read(name).failure_cause == (
        f"the log ends inside a traceback, before its exception: {first} (last frame: {frame})"
    )


def test_an_error_the_engine_survives_is_no_cause() -> None:
    # the a10x4 log's ERROR traceback followed by uvicorn's 'Application startup complete.' (the last line of the
    # corpus's started logs): the engine went on, so the cut traceback is no cause
    text = (BOOTLOGS / "a10x4-qwen3-30b-a3b-tp4-len8192-v085.log").read_text(encoding="utf-8")
    assert read_boot_log(text + "\nINFO:     Application startup complete.", "vllm", "m").failure_cause is None


def test_a_log_views_timestamp_column_hides_no_warning() -> None:
    # search-index file id 52377383460 (vLLM 0.20.0 under WSL): every line behind '2026-05-01 22:44:30.255 | ', as a
    # Docker container log view with its timestamps shown copies it; the 4 WARNING lines (pin_memory under WSL, the
    # --model option, the Mamba cache 'align' mode, the sampling defaults) were read as none before
    record = _read("gpu-wsl-qwen36-35b-a3b-nvfp4-kvfp8-len65536-v0200-stamped")
    assert len(record.warnings) == 4 and "Mamba cache mode is set to 'align'" in record.warnings[2]
    assert (record.kv_cache_gib, record.kv_cache_tokens, record.max_concurrency) == (2.95, 75456, 3.87)
    stamped = "2026-05-01 22:47:46.772 | (EngineCore pid=187) ValueError: No available memory for the cache blocks."
    assert read_boot_log(stamped, "vllm", "m").errors  # an exception behind the column is an error too
    # the same column on a log of the corpus from before: its 'Add 1 padding layers' WARNING (line 9) was read as none
    assert len(_read("gpu-nemotron-cascade2-30b-nvfp4-kvfp8-len256000-v0201dev").warnings) == 1


def test_the_closing_memory_line_gives_the_weights_where_the_loading_line_is_not_kept() -> None:
    # search-index file id 62145020194 (an A10, sleep mode): the excerpt keeps 'Actual usage is 8.28 GiB for weight,
    # 1.02 GiB for peak activation, ...' (gpu_worker.py: model_memory_usage, what 'Model loading took' prints) and no
    # loading line; before, no weights were read
    record = _read("a10-gemma4-12b-qat-len16384-util080-sleepmode-excerpt")
    assert (record.weights_gib, record.kv_cache_gib, record.logged["total_memory_gib"]) == (8.28, 11.06, "22.06")
    both = "Model loading took 15.0586 GiB memory\nActual usage is 15.06 GiB for weight, 1.0 GiB for peak activation"
    assert read_boot_log(both, "vllm", "m").weights_gib == 15.0586  # the loading line's figure where both are kept


def test_a_container_killed_at_its_memory_limit_is_a_failed_run() -> None:
    # search-index file id 60449471537 (vLLM 0.26.0): the engine starts, then the platform reports 'out of memory:
    # container "inference" exceeded its 8Gi memory limit and was OOM-killed (exit 137)'; before, a clean boot
    record = _read("gpu16g-sm90-lfm25-1.2b-int4-kvfp8-len32768-util095-v0260-container-oom")
    assert len(record.errors) == 1 and "OOM-killed (exit 137)" in record.errors[0]
    assert record.failure_cause is not None and record.failure_cause.startswith(
        "the container was killed at its memory"
    )
    assert (record.kv_cache_gib, record.kv_cache_tokens) == (13.33, 2324244)  # the pool it had sized, as logged
    # Kubernetes' reason (kubectl describe) is one; docker inspect's State saying it was not is none
    assert read_boot_log("    Reason:       OOMKilled", "vllm", "m").failure_cause is not None
    assert read_boot_log('            "OOMKilled": false,', "vllm", "m").errors == []
    assert (
        read_boot_log('"OOMKilled": "false"', "vllm", "m").errors
        == read_boot_log("OOMKilled: 0", "vllm", "m").errors
        == []
    )


def test_a_cpu_engine_killed_at_its_memory_limit_is_told_its_kv_space_is_that_memory() -> None:
    # search-index file id 68324944604 (vLLM 0.30.0+cpu in a 4 GiB pod): 'Explicitly set (1.0/15.84) GiB for KV cache
    # on node 0', 'CPU KV cache size: 87,296 tokens, ...', then 'Reason: OOMKilled'. On the CPU backend the KV cache is
    # host RAM (vllm/v1/worker/cpu_worker.py sizes it from VLLM_CPU_KVCACHE_SPACE or --kv-cache-memory-bytes), and the
    # report's fix was a 256 MiB KV space (cpu-qwen25-0.5b-kvmem256mib-len2048-eager-v0300); before, the cause said
    # the limit is 'host RAM, not GPU memory' and named only JIT and tokenizer workers to lower
    cause = _read("cpu-qwen25-0.5b-kvspace1g-len4096-eager-oomkilled-v0300").failure_cause
    assert cause is not None and cause.startswith("the container was killed at its memory limit")
    assert "not GPU memory" not in cause
    assert "VLLM_CPU_KVCACHE_SPACE" in cause and "--kv-cache-memory-bytes" in cause
    # a GPU engine's container kill keeps the GPU wording: its KV cache is not in that memory
    gpu = _read("gpu16g-sm90-lfm25-1.2b-int4-kvfp8-len32768-util095-v0260-container-oom").failure_cause
    assert gpu is not None and "not GPU memory" in gpu and "VLLM_CPU_KVCACHE_SPACE" not in gpu
    # the bare SIGKILL of a CPU engine (bash's 'Killed'), likewise
    killed = read_boot_log(
        "CPU KV cache size: 21,760 tokens, Maximum concurrency for 2,048 tokens per request: 10.62x\nKilled",
        "vllm",
        "m",
    ).failure_cause
    assert killed is not None and "VLLM_CPU_KVCACHE_SPACE" in killed and "--gpu-memory-utilization" not in killed


def test_the_keywords_of_an_offline_llm_call_are_the_deployments() -> None:
    # vllm#44376 (2 GH200s): 'llm = LLM(' then '    tensor_parallel_size=2,' and '    gpu_memory_utilization=0.95,'
    # one keyword a line above the engine's refusal; TP was read only from 'with config:', 'non-default args' and a
    # '--tensor-parallel-size' flag and the utilization from nothing, so the log read as TP unknown (2026-12-04)
    record = _read("gh200x2-deepseek-v4-flash-tp2-len30000-refused")
    assert record.logged == {"tensor_parallel_size": "2", "gpu_memory_utilization": "0.95", "max_model_len": "30000"}


def test_the_cuda_graph_notice_gives_the_utilization_before_its_equivalent() -> None:
    # vllm#46462 (A800, 0.20.2): 'The current --gpu-memory-utilization=0.6200 is equivalent to
    # --gpu-memory-utilization=0.5413 without CUDA graph memory profiling': the deployment's is the first figure
    record = _read("a800-qwen36-35b-a3b-fp8-dflash-len8192-util062-v0202")
    assert record.logged["gpu_memory_utilization"] == "0.6200"


def test_a_utilization_before_a_full_stop_is_a_number() -> None:
    # prose beside a log ends its sentence after the figure; '0.9.' read whole would not be a number
    record = read_boot_log("Start it with --gpu-memory-utilization 0.9.\n", "vllm", "m")
    assert record.logged["gpu_memory_utilization"] == "0.9"


def test_a_wrapped_cuda_graph_notice_does_not_give_its_equivalent_as_the_utilization() -> None:
    # a pasted 0.21+ log wrapped at ~100 columns (a public write-up of a Qwen run, 'CUDA graph memory profiling is
    # enabled' notice over four lines): the equivalent figure starts a line, and the last line read wins, so the
    # log read 0.9683 where the deployment ran 0.9750 and `plan --against` called it another deployment
    notice = (
        "INFO [gpu_worker.py:690] CUDA graph memory profiling is enabled\n"
        "        (default since v0.21.0). The current --gpu-memory-utilization=0.9750 is equivalent to\n"
        "        --gpu-memory-utilization=0.9683 without CUDA graph memory profiling. To maintain the same\n"
        "        effective KV cache size as before, increase --gpu-memory-utilization to 0.9817.\n"
    )
    assert read_boot_log(notice, "vllm", "m").logged["gpu_memory_utilization"] == "0.9750"
    flag = "vllm serve m --gpu-memory-utilization 0.93 --max-model-len 4096\n"  # a flag is still read
    assert read_boot_log(flag, "vllm", "m").logged["gpu_memory_utilization"] == "0.93"


def test_a_non_default_args_dict_a_paste_wrapped_names_the_deployment() -> None:
    # search-index file id 67578381996 (RTX PRO 4000 Blackwell, vLLM 0.28.0): the notes transcribe 'non-default args:'
    # with its dict on the two lines after it; the model and the length were read from no line, so `plan --against`
    # could not tell a log of another model or length from the plan's deployment (2026-12-05)
    record = _read("rtxpro4000-qwen25-7b-awq-len8192-util090-v0280-wrapped")
    assert record.logged == {
        "gpu_memory_utilization": "0.9",
        "model": "Qwen/Qwen2.5-7B-Instruct-AWQ",
        "max_model_len": "8192",
        "quantization": "awq",  # the dict's 'quantization': 'awq' (logsc63 reads it)
    }
    # a dict a paste cut before it closes is read no further than _ARGS_LINES lines: a later line is not taken for it
    cut = "INFO [api_utils.py:272] non-default args:\n  {'model_tag': 'a/b',\n" + "INFO x\n" * 12 + "'model': 'c/d'}\n"
    assert "model" not in read_boot_log(cut, "vllm", "m").logged


def test_a_pool_refusal_cut_before_its_figures_is_still_the_pool_refusal() -> None:
    # vllm#53961 as the stored excerpt holds it: the refusal broken after '(1048576),' and cut at 'which is larger t',
    # before the pool's figure; was the raw 'ValueError: To serve at least one request ... (1048576),' as the cause
    record = _read("mi300xx8-deepseek-v4-pro-tp8-len1048576-refused-rocm")
    assert record.failure_cause == (
        "the KV pool holds less than one --max-model-len request (1048576 tokens; the paste is cut before the pool's "
        "figure): lower --max-model-len or raise --gpu-memory-utilization"
    )
    assert record.kv_cache_needed_gib == 23.32  # the figure the second line prints before the cut


def test_a_paste_cut_at_the_tracebacks_first_line_names_no_frame() -> None:
    # vllm#49878 as the stored excerpt holds it: 'EngineCore failed to start.' then 'Traceback (most recent call
    # last):', cut there; the cause named that header as the 'last frame'
    record = _read("gemma4-kv-memory-bytes-49gib-failed-v026")
    assert record.failure_cause == (
        "the log ends inside a traceback, before its exception: EngineCore failed to start. (cut before its first "
        "frame)"
    )
    assert record.kv_cache_gib == 49.0  # 'reserved 49.0 GiB memory for KV Cache as specified by kv_cache_memory_bytes'
