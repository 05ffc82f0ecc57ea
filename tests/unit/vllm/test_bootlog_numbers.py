"""parse_boot_log "never raises on odd lines" (its docstring): a figure its grammar reads is a number as vLLM prints
one (digits, a decimal point between digits); a paste that lost the digits ('took . seconds') or ran two figures into
one ('1.2.3') is no figure of that line, where float('.') raised and `onechip logs FILE` said 'internal error'."""

from __future__ import annotations

import pytest

from onechip.vllm.bootlog import read_boot_log
from onechip.vllm.log_summary import summarize

HEAD = "INFO 07-10 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("INFO 07-10 10:00:01 [default_loader.py:1] Loading weights took {} seconds", "weight_load_s"),
        ("INFO 07-10 10:00:01 [gpu_model_runner.py:1] Model loading took {} GiB and 3.1 seconds", "weights_gib"),
        ("INFO 07-10 10:00:01 [gpu_worker.py:1] Available KV cache memory: {} GiB", "kv_cache_gib"),
        ("INFO 07-10 10:00:01 [backends.py:1] torch.compile takes {} s in total", "compile_s"),
        ("INFO 07-10 10:00:01 [kv_cache_utils.py:1] Maximum concurrency for 8,192 tokens per request: {}x",
         "max_concurrency"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("figure", [".", "1.2.3"])
def test_a_figure_that_is_no_number_is_not_read(line: str, field: str, figure: str) -> None:
    record = read_boot_log(HEAD + line.format(figure), "vllm", "m")
    assert getattr(record, field) is None
    summarize(HEAD + line.format(figure), "-")  # what `onechip logs -` reads: no exception either


def test_a_figure_vllm_prints_is_still_read() -> None:
    # the same lines with vLLM's own '%.2f' figures
    record = read_boot_log(
        HEAD + "INFO 07-10 10:00:01 [default_loader.py:1] Loading weights took 12.34 seconds", "vllm", "m"
    )
    assert record.weight_load_s == 12.34
