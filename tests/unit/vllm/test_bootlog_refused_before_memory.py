"""Boots that stop before memory is planned, read as 'did not start' with the reason the log gives, never a memory
cause (vllm/bootlog.failure_cause): the hub refusing a gated model's config.json under a traceback that ends in
'couldn't connect', a model type the image's transformers does not know (inside a pydantic ValidationError), and a data
parallel size with more ranks than visible GPUs. The logs are the FAILED boots of llm-d-planner's vLLM 0.19.0 H100
sweep (llm-d-incubation/llm-d-planner@d3121e05 accuracy/results/v0.19.0/logs, kept whole; corpus.json)."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.vllm.bootlog import failure_cause, read_boot_log
from onechip.vllm.log_summary import boot_verdict

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
GEMMA = ["gemma2-2b", "gemma2-9b", "gemma2-27b", "gemma3-4b", "gemma3-12b", "gemma3-27b"]


def _log(name: str) -> str:
    return (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")


def _did_not_start(name: str) -> str:
    verdict = boot_verdict(read_boot_log(_log(name), "vllm", "m"))
    assert verdict.outcome == "did not start"
    cause = failure_cause(_log(name))
    assert cause is not None
    assert "memory" not in cause.lower()
    return cause


@pytest.mark.parametrize("model", GEMMA)
def test_the_hubs_refusal_is_the_cause_not_the_connection(model: str) -> None:
    # huggingface_hub 0.36 (_get_metadata_or_catch_error) takes an HTTP error on the file's metadata as a reason to look
    # in the cache, then raises LocalEntryNotFoundError ('Please check your connection'), which transformers turns into
    # "We couldn't connect to 'https://huggingface.co'": the hub was reached, and answered 403
    cause = _did_not_start(f"h100-{model}-hub-403-refused-v0190")
    assert "403 Forbidden" in cause
    assert (
        f"https://huggingface.co/google/{model.replace('gemma2', 'gemma-2').replace('gemma3', 'gemma-3')}-it" in cause
    )
    assert "public gated repositories" in cause  # the hub's own reason (its X-Error-Message), kept
    assert "couldn't connect" not in cause


@pytest.mark.parametrize(
    ("line", "said"),
    [
        # requests' raise_for_status (huggingface_hub < 1.0) and httpx's (huggingface_hub 1.x) for a 401 and a 429
        (
            "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
            "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/main/config.json",
            "401 Unauthorized",
        ),
        (
            "httpx.HTTPStatusError: Client error '429 Too Many Requests' for url "
            "'https://huggingface.co/api/models/Qwen/Qwen3-8B/revision/main'",
            "429 Too Many Requests",
        ),
    ],
)
def test_any_refusal_of_the_hub_is_named_by_its_status(line: str, said: str) -> None:
    cause = failure_cause(line + "\nOSError: We couldn't connect to 'https://huggingface.co' to load the files\n")
    assert cause is not None and said in cause and "couldn't connect" not in cause


def test_a_model_type_the_images_transformers_does_not_know_is_named() -> None:
    # the pydantic ValidationError's own line says nothing; its 'Value error, ...' row below it does
    cause = _did_not_start("h100-gemma4-e4b-unknown-model-type-refused-v0190")
    assert "gemma4" in cause
    assert "transformers" in cause.lower()
    assert "ValidationError" not in cause


def test_a_validation_errors_message_is_its_value_error_row() -> None:
    text = (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig\n"
        "  Value error, Some check of the engine failed: do this instead. [type=value_error, input_value=ArgsKwargs(("
        "), {}), input_type=ArgsKwargs]\n"
        "    For further information visit https://errors.pydantic.dev/2.12/v/value_error\n"
    )
    assert failure_cause(text) == "Some check of the engine failed: do this instead."


def test_data_parallel_beyond_the_visible_gpus_is_named_not_the_broken_pipe_after_it() -> None:
    # vllm/v1/worker/gpu_worker.py init_device (0.19.0): local_rank += dp_local_rank x (PP x TP), asserted below
    # torch.accelerator.device_count(); the pod had one GPU for --data-parallel-size 2
    cause = _did_not_start("h100-llama31-8b-dp2-one-gpu-refused-v0190")
    assert "data parallel" in cause.lower()
    assert "BrokenPipe" not in cause


def test_a_broken_pipe_after_another_failure_is_not_the_cause() -> None:
    # a worker's READY send to an engine core that already exited for another rank's failure (multiproc_executor.py
    # worker_main): the other rank's exception is the cause, whatever it is
    text = (
        "(Worker pid=2) ERROR 04-22 01:41:58 [v1/executor/multiproc_executor.py:857] AssertionError: rank 1 failed.\n"
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
        "(Worker pid=1) ERROR 04-22 01:42:12 [v1/executor/multiproc_executor.py:857] BrokenPipeError: [Errno 32] "
        "Broken pipe\n"
    )
    assert failure_cause(text) == "AssertionError: rank 1 failed."
    assert failure_cause(text.splitlines()[-1] + "\n") == "BrokenPipeError: [Errno 32] Broken pipe"  # alone, it is all
