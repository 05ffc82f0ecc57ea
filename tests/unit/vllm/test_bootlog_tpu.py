"""TPU boot lines recorded from the seed articles (tests/data/README.md says which article and section)."""

from pathlib import Path

from onechip import planner
from onechip.schemas import BootEvent, BootRecord
from onechip.vllm.bootlog import crosscheck, failure_cause, parse_boot_log, stage_durations

DATA = Path(__file__).parents[2] / "data"


def _parse(text: str) -> BootRecord:
    return parse_boot_log(text, BootRecord(engine="vllm-docker", model="google/gemma-4-E2B-it"))


def test_tpu_memory_statistics_and_kv_init():
    record = _parse((DATA / "vllm_tpu_seed_boot.log").read_text())
    # survey article: "Memory statistics | total_hbm_limit_gb=15.75GiB | ... | total_hbm_avail_gb=5.52GiB"
    assert record.hbm_gib == {"limit": 15.75, "limit_cap": 14.49, "used": 8.97, "avail": 5.52}
    assert record.weights_gib == 8.97
    # "TPU KV cache size: 321,280 tokens, Maximum concurrency for 8,192 tokens per request: 39.22x"
    assert (record.kv_cache_tokens, record.max_concurrency, record.max_concurrency_context) == (
        321_280,
        39.22,
        8_192,
    )
    # "Init kv-cache | ... num_blocks=[1255, ...] | regular_attn_shape=(num_blocks, (256, 1, 2, 256))
    #  | regular_attn_dtype=bfloat16 ..."
    assert record.kv_cache_shape == [256, 1, 2, 256]
    assert record.kv_cache_num_blocks == 1255 and record.kv_cache_dtype == "bfloat16"
    # "init engine (profile, create kv cache, warmup model) took 503.54 s (compilation: 413.41 s)"
    assert record.compile_s == 413.41
    names = [e.name for e in record.events]
    assert names == ["memory_profiled", "kv_cache_init", "engine_ready", "startup_complete"]
    assert record.errors == [] and record.failure_cause is None


def test_v5e_program_load_failure_is_one_line():
    record = _parse((DATA / "vllm_tpu_seed_095_failure.log").read_text())
    cause = record.failure_cause
    assert cause is not None and "\n" not in cause
    # seed: "Attempting to reserve 384.11M ... There are 347.33M free"
    assert "needed 384.11M, 347.33M free" in cause
    assert "--gpu-memory-utilization" in cause and "0.92" in cause


def test_other_known_causes():
    mm = (
        "ValueError: Chunked MM input disabled but max_tokens_per_mm_item (2496)\n"
        "is larger than max_num_batched_tokens (2048). Please increase max_num_batched_tokens.\n"
    )
    assert "one multimodal item (2496 tokens)" in (failure_cause(mm) or "")
    assert "'int8'" in (failure_cause("vllm serve: error: argument --kv-cache-dtype: invalid choice: 'int8'") or "")
    assert failure_cause("(APIServer pid=1) ERROR 01-01 00:00:00 [x.py:1] RuntimeError: boom") == "RuntimeError: boom"
    assert failure_cause((DATA / "vllm_cpu_0.32_boot.log").read_text()) is None


def test_cpu_log_keeps_its_timeline():
    record = _parse((DATA / "vllm_cpu_0.32_boot.log").read_text())
    assert record.hbm_gib == {} and record.kv_cache_shape is None and record.failure_cause is None
    stages = dict(stage_durations(record))
    assert stages["kv_cache_init"] == 3.0  # weights loaded 09:53:14, KV cache line 09:53:17


def test_stage_durations_skip_unstamped():
    record = BootRecord(
        engine="x",
        model="m",
        events=[BootEvent(name="a", t_s=10), BootEvent(name="b"), BootEvent(name="c", t_s=25.5)],
    )
    assert stage_durations(record) == [("a", 10.0), ("c", 15.5)]


def test_crosscheck_against_recorded_tpu_lines():
    # the survey article's boot: max-model-len 8192 -> block 32 on the TPU rule; the log's shape says 256,
    # and the head dim 256 sampled from layer 0 is the known lie on this hybrid model (seed fact 4)
    plan = planner.plan_model("gemma-4-E2B-it", "v5e-1", "vllm-tpu", max_model_len=8192, dtype="bfloat16")
    cross = crosscheck(plan, _parse((DATA / "vllm_tpu_seed_boot.log").read_text()))
    assert "shape-line-layer0" in cross.flags
    assert cross.reported_kv_pool_bytes == int(5.52 * 2**30)


def test_gpu_download_and_compile_events():
    # vllm 0.32 source: weight_utils.py "Time spent downloading weights for %s: %.6f seconds",
    # gpu_model_runner.py "Graph capturing finished in %.0f secs, took %.2f GiB"
    text = (
        "(Worker pid=1) INFO 08-09 10:00:00 [x.py:1] Starting to load model google/gemma-4-E2B-it...\n"
        "(Worker pid=1) INFO 08-09 10:00:10 [weight_utils.py:533] Time spent downloading weights for "
        "google/gemma-4-E2B-it: 10.000000 seconds\n"
        "(Worker pid=1) INFO 08-09 10:00:20 [x.py:1] Loading weights took 10.00 seconds\n"
        "(Worker pid=1) INFO 08-09 10:01:00 [gpu_model_runner.py:6582] Graph capturing finished in 40 secs, "
        "took 0.50 GiB\n"
    )
    record = _parse(text)
    assert [e.name for e in record.events] == [
        "weights_loading",
        "weights_downloaded",
        "weights_loaded",
        "compiled",
    ]
    assert stage_durations(record) == [
        ("weights_loading", 0.0),
        ("weights_downloaded", 10.0),
        ("weights_loaded", 10.0),
        ("compiled", 40.0),
    ]
