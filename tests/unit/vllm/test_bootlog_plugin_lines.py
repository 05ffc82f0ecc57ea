"""What the Gaudi and Ascend workers print of their own, read as the platform and the memory they state (bootlog
PLATFORMS, _KV_GIB, _RANK_POOL, _WEIGHTS_GIB, _CLOSING_WEIGHTS_GIB).

Two real logs of tests/fixtures/bootlogs, each with its source in corpus.json:
- gaudi2-llama31-8b-util090-habana-v0-docs: Meta-Llama-3.1-8B on a Gaudi2 (94.62 GiB), HabanaAI's V0 HPU worker as the
  vllm-gaudi docs quote it. Its executor writes the device upper-case, '# HPU blocks: 4107' (habana_executor.py's
  f-string f"# HPU blocks: {num_gpu_blocks}, # CPU blocks: {num_cpu_blocks}", search-index file ids 21543343658 and
  6128983866), and its worker states the pool the blocks are cut from, 'Free device memory: F, U usable
  (gpu_memory_utilization=u), G reserved for HPUGraphs (VLLM_GRAPH_RESERVED_MEM=g), K reserved for KV cache'
  (habana_worker.py / hpu_worker.py determine_num_available_blocks: num_hpu_blocks = int(cache_size_bytes //
  cache_block_size), K = format_bytes(cache_size_bytes); search-index file ids 39436309804, 66919756683), and the
  weights, 'Loading model weights took in total 15.05 GiB of device memory'.
- ascend-dsv4-flash-dp2-tp8-closing-line-excerpt: one rank's closing line of vllm-ascend's NPUWorker, 'Free memory on
  device (...) on startup. ... Actual usage: W GiB for weights, ..., N GiB for NPU graph memory. ... Current KV cache
  memory: K GiB.' (vllm_ascend/worker/worker.py, search-index file ids 55862559283, 59654600633: K is
  format_gib(self.available_kv_cache_memory_bytes), W the model runner's model_memory_usage), an excerpt that keeps
  no other vLLM line."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.vllm.bootlog import read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
GAUDI2 = BOOTLOGS / "gaudi2-llama31-8b-util090-habana-v0-docs.log"
ASCEND_CLOSING = BOOTLOGS / "ascend-dsv4-flash-dp2-tp8-closing-line-excerpt.log"


def _read(path: Path):  # type: ignore[no-untyped-def]
    return read_boot_log(path.read_text(encoding="utf-8"), "vllm", "m")


@pytest.mark.parametrize(
    ("log", "platform"),
    [
        # '# HPU blocks: 4107' (habana_executor.py), 'reserved for HPUGraphs' (habana_worker.py): no plugin line, no
        # device_config in the excerpt
        (GAUDI2, "hpu"),
        # the same worker under its later file names (hpu_worker.py, hpu_executor.py), '# HPU blocks: 1519'
        (BOOTLOGS / "gaudi2-util050-graphmem040-habana-v0-readme.log", "hpu"),
        # 'GiB for NPU graph memory' (vllm_ascend/worker/worker.py): the only vLLM line of the excerpt
        (ASCEND_CLOSING, "ascend"),
    ],
)
def test_a_workers_own_line_names_its_platform(log: Path, platform: str) -> None:
    assert _read(log).logged.get("platform") == platform


def test_the_gaudi_workers_pool_and_weights_are_read() -> None:
    record = _read(GAUDI2)
    assert record.kv_cache_gib == 64.17  # '64.17 GiB reserved for KV cache'
    assert record.weights_gib == 15.05  # 'Loading model weights took in total 15.05 GiB of device memory'
    assert record.kv_cache_num_blocks == 4107  # '# HPU blocks: 4107'


def test_the_ascend_closing_line_gives_the_pool_and_weights() -> None:
    record = _read(ASCEND_CLOSING)
    assert record.kv_cache_gib == 13.73  # 'Current KV cache memory: 13.73 GiB.'
    assert record.weights_gib == 39.51  # 'Actual usage: 39.51 GiB for weights'
