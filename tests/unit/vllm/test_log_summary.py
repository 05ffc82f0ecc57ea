"""The engine log distilled by rules: milestones, memory lines, warnings and known traps kept, every error
line kept whatever max_lines says (the seed's log tool dropped them), secrets redacted."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from onechip.vllm import log_summary
from onechip.vllm.log_summary import MAX_ERROR_LINES, MAX_LINE_CHARS, read_log, summarize, verdict_line

DATA = Path(__file__).parents[2] / "data"


def test_recorded_cpu_boot_keeps_the_kv_cache_line_and_milestones():
    summary = summarize((DATA / "vllm_cpu_0.32_boot.log").read_text(), "boot.log")
    kv = [line for line in summary.lines if "CPU KV cache size: 46,592 tokens" in line.text]
    assert [line.kind for line in kv] == ["memory"]
    timeline = [line.text for line in summary.lines if line.kind == "timeline"]
    assert any("Loading weights took 2.44 seconds" in t for t in timeline)
    assert any("Application startup complete" in t for t in timeline)
    assert summary.counts.get("error", 0) == 0 and summary.traps == []


def test_tpu_program_allocation_failure_is_an_error_carrying_its_trap():
    summary = summarize((DATA / "vllm_tpu_seed_095_failure.log").read_text(), "failure.log")
    errors = [line for line in summary.lines if line.kind == "error"]
    assert errors and "RuntimeProgramAllocationFailure" in errors[0].text
    assert "0.95 fails on v5e" in (errors[0].trap or "")
    assert summary.traps == [errors[0].trap]


def test_error_lines_and_tracebacks_are_never_cut():
    noise = [f"(APIServer pid=1) WARNING 12-01 00:00:{i % 60:02d} [x.py:1] warning {i}" for i in range(300)]
    trace = [
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "ValueError: max_model_len 9000 is larger than the model's 8192",
    ]
    text = "\n".join(noise[:150] + trace + noise[150:] + ["(EngineCore pid=2) ERROR 12-01 [core.py:9] died"])
    summary = summarize(text, "log", max_lines=20)
    errors = [line.text for line in summary.lines if line.kind == "error"]
    assert errors == [*trace, "(EngineCore pid=2) ERROR 12-01 [core.py:9] died"]
    assert sum(line.kind == "warning" for line in summary.lines) == 20
    assert summary.dropped == 280 and summary.counts["warning"] == 300


def test_secrets_are_redacted():
    summary = summarize("(APIServer pid=1) WARNING x HF_TOKEN=hf_abcdefghijklmnop leaked", "log")
    assert "hf_abcdefghijklmnop" not in summary.lines[0].text


def test_a_log_file_read_line_by_line_gives_the_summary_of_its_whole_text():
    for name in ("vllm_cpu_0.32_boot.log", "vllm_tpu_seed_095_failure.log"):
        path = DATA / name
        streamed = summarize(read_log(path), name, max_lines=10)
        # its text as written: read_text's universal newlines end a line at a tqdm bar's lone CR, which no source does
        assert streamed == summarize(path.read_bytes().decode(), name, max_lines=10)
        assert streamed.dropped > 0 or name.endswith("failure.log")


def test_a_huge_log_is_summarized_in_bounded_memory(tmp_path, monkeypatch):
    # a line with no newline (8 MiB) and 5,000 warnings: only the kept lines stay in memory, not the file
    path = tmp_path / "engine.log"
    with path.open("w") as handle:
        handle.write("(APIServer pid=1) INFO starting\n" + "x" * (8 << 20) + " ERROR lost\n")
        handle.writelines(f"(APIServer pid=1) WARNING [x.py:1] warning {i}\n" for i in range(5_000))
        handle.write("(EngineCore pid=2) ERROR [core.py:9] died\n")
    monkeypatch.setattr(log_summary, "MAX_BOOT_LOG_CHARS", 1 << 16)  # the text the verdict holds: made small here
    tracemalloc.start()
    try:
        summary = summarize(read_log(path), "engine.log", max_lines=20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_LINE_CHARS * 8, f"{peak:,} bytes"  # a few lines' worth, where the file is 8 MiB
    assert summary.total_lines == 5_003 and summary.counts == {"warning": 5_000, "error": 1}
    assert summary.dropped == 4_980 and summary.lines[-1].text == "(EngineCore pid=2) ERROR [core.py:9] died"
    assert [line.number for line in summary.lines[:2]] == [3, 4]  # the long line is line 2, its tail unread
    assert summary.boot is None  # past the verdict's bound


def test_a_crash_loop_keeps_the_first_and_last_errors_and_counts_the_rest():
    lines = [f"(EngineCore pid=2) ERROR [core.py:9] died {i}" for i in range(MAX_ERROR_LINES + 500)]
    summary = summarize("\n".join(lines), "log")
    errors = [line.text for line in summary.lines]
    assert errors == lines[: MAX_ERROR_LINES // 2] + lines[-(MAX_ERROR_LINES // 2) :]
    assert summary.dropped_errors == 500 and summary.counts == {"error": MAX_ERROR_LINES + 500}


@pytest.mark.parametrize(
    ("name", "errors"),
    [
        # vllm#34076: '`(EngineCore_DP0 pid=1094) ValueError: To serve at least one request ...' (inline code)
        ("rtx5070ti-rtx5090d-qwen3-coder-30b-a3b-fp8-pp2-len262144-refused-v0152dev", 1),
        # eugr/spark-vllm-docker#396: '▎ ValueError: To serve at least one request ...' (a chat quote)
        ("gb10x2-minimax-m27-awq-tp2-len196608-refused-v0291", 1),
        # aws-samples/amazon-sagemaker-generativeai#111: 13 ERROR rows and the API server's 'RuntimeError: ...'
        ("sagemaker-gpt-oss-mxfp4-cloudwatch-csv-failed-v0", 14),
    ],
)
def test_an_exception_behind_a_paste_prefix_is_an_error_line(name: str, errors: int) -> None:
    # the refusal was kept as a 'memory' line (it holds 'GiB'), so a summary cut to errors and traps lost it
    text = (Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / f"{name}.log").read_text(encoding="utf-8")
    assert summarize(text, name).counts.get("error") == errors


def test_a_command_naming_the_tool_parser_is_no_trap() -> None:
    # vllm#34076 pastes its command ('... --enable-auto-tool-choice --tool-call-parser qwen3_coder'): it was flagged
    # 'tool calling needs --enable-auto-tool-choice ...'; vLLM's own errors still are (api_server.py
    # validate_api_server_args: 'invalid tool call parser: X (chose from { ... })')
    name = "rtx5070ti-rtx5090d-qwen3-coder-30b-a3b-fp8-pp2-len262144-refused-v0152dev"
    text = (Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / f"{name}.log").read_text(encoding="utf-8")
    assert summarize(text, name).traps == []
    error = "(APIServer pid=1) KeyError: 'invalid tool call parser: qwen4 (chose from { hermes,qwen3_coder })'"
    assert summarize(error, "x").traps == [
        "tool calling needs --enable-auto-tool-choice and the model's --tool-call-parser"
    ]


@pytest.mark.parametrize(
    "message",
    [
        "# GPU blocks: 2000, # CPU blocks: 512",  # vllm/executor/gpu_executor.py 0.5.5 - 0.6.x
        "# tpu blocks: 1500, # CPU blocks: 0",  # vllm/executor/executor_base.py 0.7 - 0.11 (the platform's name)
        "# CPU blocks: 4096",  # vllm/executor/cpu_executor.py 0.5.5 - 0.6.x: the CPU backend's pool
        "OpenVINO GPU: # device blocks: 777; # swap blocks: 0",  # vllm/executor/openvino_executor.py 0.6.x
        "Loading model weights took 14.9612 GB",  # vllm/worker/model_runner.py 0.5 - 0.7
        "Memory profiling takes 5.12 seconds",  # vllm/worker/worker.py 0.7 - 0.9, the profiler's first line
        # vllm/v1/worker/xpu_worker.py 0.9 - 0.11
        "Before memory profiling run, total GPU memory: 24576.00 MB, model load takes 15000.00 MB, free gpu memory "
        "is 9000.00 MB.",
    ],
)
def test_v0_pool_and_weights_lines_without_gib_are_memory_lines(message):
    # these carry a pool or weights figure in no 'GiB': the summary dropped them, so a V0 log's summary had no line
    # saying how big its KV cache was
    summary = summarize(f"INFO 12-01 10:00:01 [x.py:1] {message}\n", "boot.log")
    assert [(line.kind, line.text.endswith(message)) for line in summary.lines] == [("memory", True)]


@pytest.mark.parametrize(
    "message",
    [
        # vllm/v1/core/kv_cache_utils.py 0.14.1 - 0.31.0: the length --max-model-len auto settled on
        "Auto-fit max_model_len: full model context length 32768 fits in available GPU memory",
        # vllm/config/model.py 0.10 - 0.34: the length the engine settled on where the args leave it to the model
        "Using max model len 131072",
        # tpu_inference/runner/kv_cache_manager.py 0.11.1 - 0.32.0: the KV cache groups the reader keeps
        "Hybrid KV cache layout: num_kv_cache_groups=2, num_kv_cache_tensors=30, kv_cache_config.num_blocks=1255, "
        "duplicate_shared_layers=False",
    ],
)
def test_lines_that_size_the_cache_without_gib_are_memory_lines(message):
    # they print no 'GiB' and were dropped: a summary of a --max-model-len auto boot did not say what length it ran at
    summary = summarize(f"INFO 12-01 10:00:01 [x.py:1] {message}\n", "boot.log")
    assert [(line.kind, line.text.endswith(message)) for line in summary.lines] == [("memory", True)]


FP8_ARGS = "INFO 06-03 14:20:00 [utils.py:1] non-default args: {'model': 'm', 'kv_cache_dtype': 'fp8'}"


def test_the_tpu_fp8_trap_holds_in_a_tpu_log_only() -> None:
    # a GH200's refused boot (its Python call's 'kv_cache_dtype="fp8",'): on a GPU an fp8 KV cache halves the bytes
    # per token, and the summary said the TPU's 1.000x trap of it
    gpu = Path(__file__).parents[2] / "fixtures" / "bootlogs" / "gh200x2-deepseek-v4-flash-tp2-len30000-refused.log"
    summary = summarize(read_log(gpu), gpu.name)
    assert summary.traps == [] and summary.counts == {"error": 1}
    assert [line.kind for line in summary.lines] == ["error"]  # the refusal; the args line is nothing else
    assert summarize(FP8_ARGS + "\n", "gpu.log").traps == []
    tpu = FP8_ARGS + "\nINFO 06-03 14:21:00 [kv_cache_utils.py:1] TPU KV cache size: 321,280 tokens\n"
    assert summarize(tpu, "tpu.log").traps == ["fp8 KV cache on TPU buys no capacity (word-aligned layout, 1.000x)"]


def test_the_summary_says_whether_the_boot_started_and_what_it_ran_with() -> None:
    # was lines and counts only: whether the engine came up, at what length and pool, an operator had to read off the
    # kept lines; the verdict is the grammar's reading (bootlog.parse_boot_log), the figures those the logs print
    started = summarize((DATA / "vllm_cpu_0.32_smollm2_autofit_boot.log").read_text(), "autofit.log").boot
    assert started is not None
    assert (started.outcome, started.cause, started.max_model_len, started.kv_cache_tokens) == ("started", None, 2816,
                                                                                                  2944)  # fmt: skip
    assert (started.max_concurrency, started.max_concurrency_context, started.engine_version) == (1.05, 2816, "0.32.0")
    assert verdict_line(started) == (
        "started: max_model_len 2,816; KV cache 2,944 tokens, 0.13 GiB; max concurrency 1.05x at 2,816 tokens; "
        "tensor parallel 1; vLLM 0.32.0; platform vLLM's CPU backend; model "
        "/root/.cache/onechip/models/smollm2-135m-instruct"
    )  # the platform from the engine config's 'device_config=cpu' and 'CPU KV cache size' (bootlog.PLATFORMS)
    refused = summarize(read_log(DATA / "vllm_cpu_0.32_smollm2_nullblock_refused_boot.log"), "refused.log").boot
    assert refused is not None and (refused.outcome, refused.max_model_len) == ("did not start", 2944)
    assert verdict_line(refused).startswith(
        "did not start: the KV pool (0.12 GiB) holds less than one --max-model-len request: lower --max-model-len to "
        "at most 2816"
    )
    assert "max_model_len 2,944;" in verdict_line(refused)
    unknown = summarize("INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n", "cut.log").boot
    assert unknown is not None and unknown.outcome == "unknown"
    assert verdict_line(unknown) == (
        "no verdict: the log ends before the engine said it was ready or why it did not start; vLLM 0.11.0"
    )


def test_a_log_past_the_bound_is_summarized_without_its_boot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_summary, "MAX_BOOT_LOG_CHARS", 1 << 10)  # the bound plan --against reads a log to
    summary = summarize(["(EngineCore pid=2) ERROR [core.py:9] died"] * 100, "big.log")
    assert summary.boot is None and summary.counts == {"error": 100}


BOOTLOGS = Path(__file__).parents[2] / "fixtures" / "bootlogs"
# corpus.json's outcome is read by hand from each log's source; three verdicts differ from it, each by what the excerpt
# holds: the engine that sized its pool, then failed on its KV connector (its notes: 'started here means the KV check
# passed'), the refusal whose excerpt ends before its OOM (its notes: 'the OOM itself is not in it') and the one whose
# excerpt ends inside its ERROR line, before any text (its notes: 'no failure is read from a cut line')
VERDICT_NOT_OUTCOME = {
    "gpu-qwen3-vl-8b-len4096-eager-dev15312": "did not start",
    "h100-gpt-oss-120b-len5120-triton-v0141": "unknown",
    "rtx5090-qwen36-27b-nvfp4-mtp-len100352-util085-refused-excerpt": "unknown",
}


@pytest.mark.parametrize("entry", json.loads((BOOTLOGS / "corpus.json").read_text()), ids=lambda e: e["name"])
def test_the_verdict_agrees_with_the_corpus_outcome(entry: dict[str, str]) -> None:
    path = BOOTLOGS / f"{entry['name']}.log"
    boot = summarize(read_log(path), path.name, whole=log_summary.ends_in_newline(path)).boot
    assert boot is not None
    expected = {"started": {"started", "KV cache allocated", "unknown"}, "refused": {"did not start"}}
    if entry["name"] in VERDICT_NOT_OUTCOME:
        assert boot.outcome == VERDICT_NOT_OUTCOME[entry["name"]]
    else:
        assert boot.outcome in expected[entry["outcome"]], verdict_line(boot)
    if boot.outcome == "KV cache allocated":  # the token or concurrency line that says the pool check passed
        assert boot.kv_cache_tokens is not None or boot.max_concurrency is not None


def test_an_excerpt_that_stops_after_the_kv_cache_lines_says_the_cache_was_allocated() -> None:
    text = (
        "(EngineCore pid=1) INFO 12-01 10:00:00 [gpu_worker.py:1] Available KV cache memory: 22.46 GiB\n"
        "(EngineCore pid=1) INFO 12-01 10:00:00 [kv_cache_utils.py:1] GPU KV cache size: 163,568 tokens\n"
        "(EngineCore pid=1) INFO 12-01 10:00:00 [kv_cache_utils.py:1] Maximum concurrency for 4,096 tokens per "
        "request: 39.93x\n"
    )
    boot = summarize(text, "excerpt.log").boot
    assert boot is not None and verdict_line(boot) == (
        "KV cache allocated, no error logged (the log ends before the engine said it was ready): KV cache 163,568 "
        "tokens, 22.46 GiB; max concurrency 39.93x at 4,096 tokens"
    )
    pool_only = summarize(text.split("\n")[0] + "\n", "excerpt.log").boot  # measured, not yet checked
    assert pool_only is not None and pool_only.outcome == "unknown"


def test_the_explain_prompt_gives_the_model_the_verdict_the_summary_read() -> None:
    # the prompt gave the model the kept lines and the traps only, and asked it whether the server started and its KV
    # cache size: what the grammar had already read (verdict_line), left for a 135M model to guess from 60 lines
    summary = summarize((DATA / "vllm_cpu_0.32_smollm2_autofit_boot.log").read_text(), "autofit.log")
    assert summary.boot is not None
    prompt = log_summary.explain_prompt(summary)
    assert f"Verdict read from the log: {verdict_line(summary.boot)}\n" in prompt
    past_bound = summary.model_copy(update={"boot": None})  # a log too long to read the boot of says so
    assert f"Verdict read from the log: {log_summary.NO_VERDICT}\n" in log_summary.explain_prompt(past_bound)


# What a server logs while it runs: vLLM's periodic stats line (vllm/v1/metrics/loggers.py LoggingStatLogger.log) and
# uvicorn's access line; an engine that served for weeks logs millions of them after its boot
SERVING = [
    "(APIServer pid=7636) INFO 12-04 21:57:46 [loggers.py:257] Engine 000: Avg prompt throughput: 12.3 tokens/s, Avg "
    "generation throughput: 100.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache "
    "hit rate: 0.0%",
    '(APIServer pid=7636) INFO:     127.0.0.1:50712 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
]


@pytest.mark.parametrize(
    "after",
    [
        [],  # the boot, then the shutdown the log ends with
        [
            "(APIServer pid=7636) ERROR 12-04 21:58:01 [core_client.py:1] EngineDeadError: EngineCore encountered an "
            "issue. See stack trace (above) for the root cause."
        ],  # fmt: skip
        (DATA / "vllm_cpu_0.32_smollm2_nullblock_refused_boot.log").read_text().splitlines(),  # a restart, refused
    ],
    ids=["shutdown", "error-while-serving", "restart"],
)
def test_a_boot_then_hours_of_serving_is_read_once_without_the_serving_lines(monkeypatch, after: list[str]) -> None:
    # a 200,000-line log took 56 s (`logs big.log --summary`): 43 s of them the grammar reading again every line the
    # summary had read and held (up to MAX_BOOT_LOG_CHARS), the boot's 100 lines and the server's 199,900 stats lines;
    # a boot that came up is read from its lines, then what can change its reading: errors, events, a restart
    boot = (DATA / "vllm_cpu_0.32_smollm2_autofit_boot.log").read_text().splitlines()
    ready = next(i for i, line in enumerate(boot) if "Application startup complete" in line) + 1
    served = [*boot[:ready], *SERVING * 5_000, *boot[ready:], *after]
    read: list[str] = []
    grammar = log_summary.read_boot_log
    monkeypatch.setattr(log_summary, "read_boot_log", lambda text, *a: read.append(text) or grammar(text, *a))
    summary = summarize(served, "served.log", whole=True)
    assert summary.total_lines == len(served) and "Avg prompt throughput" not in read[0]
    quiet = summarize([*boot, *after], "served.log", whole=True)  # the same log had the server logged nothing
    assert summary.boot == quiet.boot is not None


# vLLM's wait for its engine core, logged every 10 s at DEBUG until the core starts (vllm/v1/engine/utils.py
# wait_for_engine_startup, STARTUP_POLL_PERIOD_MS = 10000): an engine still starting, under VLLM_LOGGING_LEVEL=DEBUG
WAITING = (
    "(APIServer pid=7636) DEBUG 12-04 21:57:46 [utils.py:1406] Waiting for 1 local, 0 remote core engine proc(s) to "
    "start."
)


def _grammar_reads(monkeypatch) -> list[str]:
    """The texts summarize gives the boot-log grammar, as it gives them."""
    read: list[str] = []
    grammar = log_summary.read_boot_log
    monkeypatch.setattr(log_summary, "read_boot_log", lambda text, *a: read.append(text) or grammar(text, *a))
    return read


def test_a_boot_still_starting_is_read_once_without_the_lines_it_waits_with(monkeypatch) -> None:
    # a 200,000-line log of a boot that had not come up took 23 s and 125 MiB (benchmarks/log_summary_speed.py
    # 'starting'): every line was held and read again by the grammar; only those its verdict may read are held
    boot = (DATA / "vllm_cpu_0.32_smollm2_autofit_boot.log").read_text().splitlines()
    sized = next(i for i, line in enumerate(boot) if "KV cache size" in line) + 1  # allocated, not yet up
    read = _grammar_reads(monkeypatch)
    summary = summarize([*boot[:sized], *[WAITING] * 5_000], "starting.log", whole=True)
    assert summary.total_lines == sized + 5_000 and "Waiting for 1 local" not in read[0]
    quiet = summarize(boot[:sized], "starting.log", whole=True)  # the same boot, had it waited in silence
    assert summary.boot == quiet.boot is not None and summary.boot.outcome == "KV cache allocated"


def test_a_crash_loop_holds_its_last_boots_not_every_boot(monkeypatch) -> None:
    # a container restarted after each refused boot: 200,000 lines held every boot (128 MiB) up to
    # MAX_BOOT_LOG_CHARS, past which (1,000,000 lines) it had no verdict at all; earlier boots are let go
    refused = (DATA / "vllm_cpu_0.32_smollm2_nullblock_refused_boot.log").read_text().splitlines()
    monkeypatch.setattr(log_summary, "COMPACT_HELD_LINES", 500, raising=False)
    read = _grammar_reads(monkeypatch)
    summary = summarize(refused * 20, "loop.log", whole=True)
    assert summary.total_lines == 20 * len(refused) and len(read[0].splitlines()) <= 2 * 500
    once = summarize(refused, "loop.log", whole=True)
    assert once.boot is not None and summary.boot is not None and summary.boot.outcome == "did not start"
    assert summary.boot == once.boot.model_copy(update={"boots_in_log": 20})  # the boots let go counted too


def test_a_log_file_and_its_text_end_a_line_at_lf_only(tmp_path: Path) -> None:
    # as `logs` reads every source (engines.state.log_lines, tests/unit/engines/test_engine_state.py MIXED_ENDINGS): a
    # tqdm bar rewritten with lone CRs is one line, a CRLF line loses its CR, a form feed stays inside its line. Before:
    # 4 lines from the file (universal newlines), 5 from the text (str.splitlines), and a file ending in a lone CR
    # (a bar being rewritten) was taken as ending in a whole line
    path = tmp_path / "bar.log"
    path.write_bytes(b"shards:  0% | 0/2\rshards: 100% | 2/2\nINFO ready\r\nERROR \x0c late\n")
    lines = ["shards:  0% | 0/2\rshards: 100% | 2/2", "INFO ready", "ERROR \x0c late"]
    assert list(read_log(path)) == lines
    assert summarize(path.read_bytes().decode(), "bar.log").total_lines == 3
    path.write_bytes(b"INFO ready\nshards:  0% | 0/2\r")
    assert not log_summary.ends_in_newline(path)


def test_a_summary_reads_the_secrets_once_for_its_kept_lines(monkeypatch) -> None:
    # each kept line was redacted reading the whole environment again (errors._secret_values): 81 s of a 200,000-line
    # crash loop's 151 s under cProfile went there, its 148,768 error lines each read it
    from onechip import errors

    reads: list[int] = []
    secrets = errors._secret_values
    monkeypatch.setattr(errors, "_secret_values", lambda: reads.append(1) or secrets())
    monkeypatch.setenv("HF_TOKEN", "hf_" + "y" * 34)
    summary = summarize([f"ERROR 12-04 21:58:01 [core.py:1] refused with hf_{'y' * 34}"] * 1_000, "loop.log")
    assert summary.counts["error"] == 1_000 and summary.lines[0].text.endswith("refused with ***")
    assert len(reads) <= 2


def test_the_verdict_of_a_log_of_several_boots_says_it_is_of_the_last() -> None:
    # a crash loop as `docker logs` of a restarting container shows it: the corpus's refused TP=5 boot three times over,
    # then once more with the last boot cut before its engine started (a restart still under way). The reading is of
    # the last boot; the verdict line said nothing of the boots before it, as if the log held one
    refused = (BOOTLOGS / "h100x5-qwen3-14b-tp5-refused-v0190.log").read_text(encoding="utf-8").splitlines()
    once = summarize(refused, "one.log", whole=True).boot
    looped = summarize(refused * 3, "loop.log", whole=True).boot
    assert once is not None and looped is not None
    assert (once.boots_in_log, looped.boots_in_log) == (1, 3)
    assert "boots in this log" not in verdict_line(once)
    assert verdict_line(looped).startswith("did not start (the last of 3 boots in this log): ")
    assert verdict_line(looped).replace(" (the last of 3 boots in this log)", "") == verdict_line(once)
