"""Logs that hold more than one engine, or one data-parallel engine core's figures (grammar71). Each excerpt is real
and kept short, its source beside it; none is in the corpus (tests/fixtures/bootlogs): none names enough to plan it."""

from __future__ import annotations

from pathlib import Path

from onechip.vllm.bootlog import read_boot_log
from onechip.vllm.log_summary import boot_verdict, verdict_line

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"

# A vllm-ascend 1M-context note (search-index file id 67542152580, a Markdown file naming no repository): the start-up
# lines of a disaggregated deployment's prefill node (TP 16, DP 1) and of its decode node (DP 4, TP 4), one code block
# each, quoted one after the other; the model is not named. Two engines: the reader read one boot, the decode node's
# figures, and said nothing of the prefill node's
PREFILL_THEN_DECODE = """### 1.1 P 节点（预填充节点）

配置：`TP=16, DP=1`

```
(Worker_TP0_DCP0_EP0 pid=239896) INFO 07-24 01:54:16 [worker.py:593] Available KV cache memory: 12.75 GiB
(EngineCore pid=239869) INFO 07-24 01:54:17 [kv_cache_utils.py:1744] GPU KV cache size: 1,996,800 tokens
(EngineCore pid=239869) INFO 07-24 01:54:17 [kv_cache_utils.py:1745] Maximum concurrency for 1,024,000 tokens per request: 1.95x
```

### 1.2 D 节点（解码节点）

配置：`DP=4, TP=4`

```
(Worker_DP3_TP0_DCP0_EP12 pid=256905) INFO 07-23 09:53:18 [worker.py:593] Available KV cache memory: 21.16 GiB
(EngineCore_DP3 pid=256763) INFO 07-23 09:53:18 [kv_cache_utils.py:1744] GPU KV cache size: 1,370,624 tokens
(EngineCore_DP3 pid=256763) INFO 07-23 09:53:18 [kv_cache_utils.py:1745] Maximum concurrency for 1,024,000 tokens per request: 1.34x
```
"""  # noqa: E501


def test_an_engine_core_of_another_engine_starts_another_boot() -> None:
    # vllm/v1/engine/utils.py CoreEngineProcManager (0.18.0 - 0.34.0 sdists): name=f"EngineCore_DP{global_index}" if
    # is_dp else "EngineCore", is_dp = data_parallel_size > 1 (0.10 - 0.17: 'EngineCore_DP{global_index}' always), so
    # the cores of one boot are all tagged or none is; and one core is one process, so one tag under two pids is two
    # boots. The prefill node's untagged core and the decode node's 'EngineCore_DP3' are two engines
    record = read_boot_log(PREFILL_THEN_DECODE, "vllm", "m")
    assert record.boots_in_log == 2
    # the last boot's own figures, its pool from its own worker's line (the decode node's), none of the prefill node's
    assert (record.kv_cache_tokens, record.kv_cache_gib, record.max_concurrency) == (1_370_624, 21.16, 1.34)


def test_the_cores_of_one_data_parallel_boot_are_one_boot() -> None:
    # each DP engine core logs its own KV cache (EngineCore_DP0 and EngineCore_DP1 here, two pids): one boot
    text = PREFILL_THEN_DECODE.split("### 1.2")[1]
    dp0 = text.replace("EngineCore_DP3 pid=256763", "EngineCore_DP0 pid=256760").replace("1,370,624", "1,370,880")
    record = read_boot_log(dp0 + text, "vllm", "m")
    assert record.boots_in_log == 1


def test_a_data_parallel_engine_cores_figures_are_said_to_be_its() -> None:
    # the decode node's KV lines are logged under 'EngineCore_DP3' (DP 4): one engine core's cache of four, each DP rank
    # an engine of its own with its own pool (vllm/v1/engine/utils.py: a core a DP rank). The verdict gave them as the
    # log's KV cache with no word of data parallelism
    verdict = boot_verdict(read_boot_log(PREFILL_THEN_DECODE, "vllm", "m"))
    assert (verdict.data_parallel_rank, verdict.data_parallel_size) == (3, None)
    assert "KV cache per data-parallel engine core: DP3's of 4 or more" in verdict_line(verdict)


def test_a_data_parallel_size_the_command_names_is_said() -> None:
    # vllm-project/recipes#12 (tests/fixtures/bootlogs/h20-qwen3-coder-480b-fp8-dp8-len262144-refused-v0101dev): 'vllm
    # serve ... -dp=8 --enable-expert-parallel', then the refusal of one core's 48.66 GiB pool, printed with no tag
    log = (BOOTLOGS / "h20-qwen3-coder-480b-fp8-dp8-len262144-refused-v0101dev.log").read_text(encoding="utf-8")
    verdict = boot_verdict(read_boot_log(log, "vllm", "m"))
    assert (verdict.data_parallel_rank, verdict.data_parallel_size) == (None, 8)
    assert "KV cache per data-parallel engine core (data parallel 8)" in verdict_line(verdict)


def test_one_engine_core_of_no_data_parallelism_says_nothing_of_it() -> None:
    # 0.10 - 0.17 tag every core 'EngineCore_DP{i}', DP 1 included (vllm/v1/engine/utils.py): DP0 alone is no DP
    text = PREFILL_THEN_DECODE.split("### 1.2")[1].replace("EngineCore_DP3", "EngineCore_DP0")
    verdict = boot_verdict(read_boot_log(text, "vllm", "m"))
    assert (verdict.data_parallel_rank, verdict.data_parallel_size) == (None, None)
    assert "data-parallel" not in verdict_line(verdict)
