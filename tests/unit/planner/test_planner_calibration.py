"""Learning from a real boot (issue 12): `plan --against LOG` stores what the boot measured under
$ONECHIP_HOME, and the next plan of the same deployment gives the logged figure, saying where it came from.

The boot is a real one: the corpus's vLLM 0.19.0 log of Llama-3.1-8B on one H100
(tests/fixtures/bootlogs/h100-llama31-8b-tp1-v0190.log: 'GPU KV cache size: 476,016 tokens')."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from onechip import api
from onechip.planner import plan_model
from onechip.planner.calibration import printed_tokens
from onechip.schemas.requests import PlanRequest

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
LOG = BOOTLOGS / "h100-llama31-8b-tp1-v0190.log"
LOGGED_TOKENS = 476_016  # the log's token line
LLAMA_8B_BYTES = 16_060_522_496  # issue 12: Llama-3.1-8B bf16 checkpoint bytes


@pytest.fixture
def llama(tmp_path: Path) -> Path:
    directory = tmp_path / "llama"
    directory.mkdir()
    config = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text())
    (directory / "config.json").write_text(json.dumps(config))
    header = json.dumps(
        {
            "model.layers.0.mlp.weight": {
                "dtype": "BF16",
                "shape": [LLAMA_8B_BYTES // 2],
                "data_offsets": [0, LLAMA_8B_BYTES],
            }
        }
    ).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return directory


def _request(llama: Path, **extra: object) -> PlanRequest:
    fields = {
        "model": str(llama),
        "chip": "h100",
        "engine": "vllm-gpu",
        "engine_version": "0.19.0",
        "max_model_len": 8192,
        "utilization": 0.95,
        "multimodal": False,
        **extra,
    }
    return PlanRequest.model_validate(fields)


def test_a_second_plan_of_the_same_deployment_is_exact(llama: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    assert LOG.read_text().count(f"{LOGGED_TOKENS:,} tokens") == 1
    first = api.plan(_request(llama, against=LOG))
    assert first.calibrated_from is None
    assert first.kv_tokens_logged != LOGGED_TOKENS  # the rules alone are close, not exact
    assert first.crosscheck is not None and first.crosscheck.reported_kv_tokens == LOGGED_TOKENS
    second = api.plan(_request(llama))
    assert second.kv_tokens_logged == LOGGED_TOKENS
    assert second.calibrated_from is not None and "0.19.0" in second.calibrated_from
    assert second.kv_tokens_range == (LOGGED_TOKENS, LOGGED_TOKENS)


def test_the_measured_overhead_carries_to_another_utilization(llama: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    api.plan(_request(llama, against=LOG))
    at_090 = plan_model(_request(llama, utilization=0.9), calibration_dir=api.measured_boots_dir())
    assert at_090.memory_budget is not None and at_090.calibrated_from is not None
    # 5% of the H100's visible 79.19 GiB fewer bytes of KV, in whole blocks of 16 x 131,072 B
    moved = int(79.19 * 2**30 * 0.95) - int(79.19 * 2**30 * 0.9)
    blocks_moved = LOGGED_TOKENS // 16 - at_090.num_blocks
    assert abs(blocks_moved - moved / (16 * 131_072)) <= 1


def test_boots_stored_by_an_earlier_onechip_are_moved_and_still_used(llama: Path, tmp_path: Path, monkeypatch) -> None:
    """The measured-boot store was $ONECHIP_HOME/calibration, one letter from the simulator's calibrations:
    what a user stored there is moved to measured-boots and still calibrates their plans."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    api.plan(_request(llama, against=LOG))
    stored = api.measured_boots_dir()
    stored.rename(tmp_path / "home" / "calibration")  # as an earlier onechip left it
    again = api.plan(_request(llama))
    assert again.calibrated_from is not None and again.kv_tokens_logged == LOGGED_TOKENS
    assert len(list(stored.glob("*.json"))) == 1 and not (tmp_path / "home" / "calibration").exists()


def test_other_deployments_do_not_use_the_measurement(llama: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    api.plan(_request(llama, against=LOG))
    assert api.plan(_request(llama, max_num_seqs=256)).calibrated_from is None
    assert api.plan(_request(llama, tensor_parallel_size=2)).calibrated_from is None


def test_printed_tokens_inverts_both_token_lines(llama: Path) -> None:
    plan = plan_model(_request(llama))
    assert plan.memory_budget is not None
    assert printed_tokens(plan.memory_budget, plan.num_blocks, 8192) == plan.kv_tokens_logged


def test_a_log_of_another_card_is_not_stored_and_the_plan_says_why(llama: Path, tmp_path: Path, monkeypatch) -> None:
    # Before: the H100 log (its memory snapshot and startup line print 'total_memory=79.19GiB', 'Free memory on device
    # (78.68/79.19 GiB)') checked against an H200 plan of the same model and length was 'differs' and still stored as
    # the H200 deployment's measured boot, whose next plans were 'calibrated' to the H100's pool
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    on_h200 = api.plan(_request(llama, chip="h200", against=LOG))
    cross = on_h200.crosscheck
    assert cross is not None and "other-deployment" in cross.flags
    # accelerators.json h200: 139.81 GiB visible ('CUDA devices: NVIDIA H200 (139.81 GiB)')
    assert "total memory per GPU 79.19 GiB, planned h200's 139.81 GiB (another card)" in cross.note
    assert cross.not_stored == (
        "not stored as this deployment's measured boot: the log is of another deployment (see the cross-check)"
    )
    assert api.plan(_request(llama, chip="h200")).calibrated_from is None
    assert not api.measured_boots_dir().exists() or not any(api.measured_boots_dir().iterdir())
    # the card it ran on still learns from it
    on_h100 = api.plan(_request(llama, against=LOG))
    assert on_h100.crosscheck is not None and on_h100.crosscheck.not_stored is None
    assert api.plan(_request(llama)).calibrated_from is not None


def test_a_boot_that_failed_after_its_token_line_is_not_stored(llama: Path, tmp_path: Path, monkeypatch) -> None:
    # vLLM 0.19.0 logs the KV token line, then warms up the sampler and may fail there:
    # tests/fixtures/bootlogs/h100-gpt-oss-20b-sampler-oom-v0190.log ('GPU KV cache size' twice, then this error)
    failure = (
        "(EngineCore pid=248) RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy "
        "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n"
    )
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    failed = tmp_path / "failed.log"
    failed.write_text(LOG.read_text() + failure)
    result = api.plan(_request(llama, against=failed))
    assert result.crosscheck is not None and "boot-failed" in result.crosscheck.flags
    assert result.crosscheck.not_stored == "not stored as this deployment's measured boot: the engine did not start"
    assert api.plan(_request(llama)).calibrated_from is None


def test_a_log_naming_another_card_is_not_stored(llama: Path, tmp_path: Path, monkeypatch) -> None:
    # the H100 log with the fused-MoE config line of tests/fixtures/bootlogs/h200x2-qwen3-next-80b-a3b-tp2-v0102.log
    # (line 13, 'device_name=NVIDIA_H200.json') beside it: its total memory is the H100's, its card by name is not;
    # plan --against passes planner.chips.other_card to the cross-check
    h200 = (BOOTLOGS / "h200x2-qwen3-next-80b-a3b-tp2-v0102.log").read_text().splitlines()[12]
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    named = tmp_path / "named.log"
    named.write_text(LOG.read_text() + h200 + "\n")
    cross = api.plan(_request(llama, against=named)).crosscheck
    assert cross is not None and "other-deployment" in cross.flags
    assert "card NVIDIA_H200 (H200 SXM 141 GB), planned h100" in cross.note
    assert cross.not_stored is not None and "another deployment" in cross.not_stored
    # on an H200 plan the name agrees; its total memory (79.19 GiB) still says another card
    on_h200 = api.plan(_request(llama, chip="h200", against=named)).crosscheck
    assert on_h200 is not None and "card NVIDIA_H200" not in on_h200.note and "79.19 GiB" in on_h200.note


def test_a_cpu_or_tpu_engines_log_is_not_a_gpu_deployments_boot(tmp_path: Path, monkeypatch) -> None:
    # Before: the embedded CPU engine's own log ('CPU KV cache size: 46,592 tokens' of a 2 GiB VLLM_CPU_KVCACHE_SPACE
    # pool, tests/data/vllm_cpu_0.32_boot.log) checked against a 24 GiB card's plan of the same model and length was
    # 'agrees', and stored as that card's measured boot: every later `plan --chip gpu:24GiB` of the model then gave a
    # 1.00 GiB KV cache of 46,592 tokens 'measured at boot' (the card's own pool is ~20 GiB)
    cpu_log = Path(__file__).resolve().parents[2] / "data" / "vllm_cpu_0.32_boot.log"
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    gpu = PlanRequest.model_validate({"model": "SmolLM2-135M-Instruct", "chip": "gpu:24GiB", "max_model_len": 8192})
    result = api.plan(gpu.model_copy(update={"against": cpu_log}))
    cross = result.crosscheck
    assert cross is not None and "other-deployment" in cross.flags and not cross.agrees
    assert "CPU" in cross.note and cross.not_stored is not None
    assert api.plan(gpu).calibrated_from is None
    tpu_log = tmp_path / "tpu.log"  # the same boot, its token line as vLLM prints it on a TPU
    tpu_log.write_text(cpu_log.read_text().replace("CPU KV cache size", "TPU KV cache size"))
    cross = api.plan(gpu.model_copy(update={"against": tpu_log})).crosscheck
    assert cross is not None and "other-deployment" in cross.flags
    # the CPU plan it was logged for still agrees with it
    on_cpu = api.plan(PlanRequest.model_validate({"model": "SmolLM2-135M-Instruct", "chip": "cpu", "against": cpu_log}))
    assert on_cpu.crosscheck is not None and "other-deployment" not in on_cpu.crosscheck.flags
