"""Versions said out loud (issue 27): the plan names the vLLM version and the rule it plans under, and a V0
release plans a text-only model without towers even when --multimodal is left at its default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip.planner import plan_model
from onechip.schemas.common import GIB

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"
LLAMA = json.loads((CONFIGS / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
LLAMA_8B_BYTES = 16_060_522_496  # safetensors total of meta-llama/Llama-3.1-8B-Instruct (its model card index)


def test_v0_text_only_model_keeps_chunked_prefill_with_the_default_multimodal(tmp_path: Path) -> None:
    # vLLM V0 (0.6.x) turns chunked prefill on above 32K tokens for models that are not multimodal
    # (vllm/engine/arg_utils.py of that era); the default --multimodal must not switch it off for Llama.
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    kwargs = {"max_model_len": 65536, "engine_version": "0.6.3", "utilization": 0.9}
    default = plan_model(str(path), "h100", **kwargs)
    text_only = plan_model(str(path), "h100", multimodal=False, **kwargs)
    assert default.kv_tokens == text_only.kv_tokens and default.fits


def test_the_plan_names_the_version_and_its_rule(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    (line,) = [w for w in plan_model(str(path), "h100", max_model_len=8192, engine_version="0.8.5").warnings
               if w.code == "engine-version"]  # fmt: skip
    assert "vLLM 0.8.5" in line.message and "0.8.0 - 0.8.x" in line.message
    (newest,) = [w for w in plan_model(str(path), "h100", max_model_len=8192).warnings if w.code == "engine-version"]
    assert "no --engine-version" in newest.message


def test_the_plan_and_up_name_one_release_and_the_image_is_tagged_by_it(tmp_path: Path) -> None:
    # engines.json vllm-gpu `release`: 0.32.0, the newest release its rules were read from; vLLM tags its images
    # by release (docs 'Using Docker': vllm/vllm-openai:v0.11.0), never the moving 'latest'
    from onechip.schemas.serve import ServeTarget
    from onechip.vllm import flags

    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    newest = plan_model(str(path), "h100", max_model_len=8192)
    (line,) = [w for w in newest.warnings if w.code == "engine-version"]
    assert newest.engine_version == "0.32.0" and "vLLM 0.32.0" in line.message
    docker = flags.serve_command(newest, ServeTarget(kind="vllm-docker"))
    assert "vllm/vllm-openai:v0.32.0" in docker.shell
    pinned = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.19.0")
    assert "vllm/vllm-openai:v0.19.0" in flags.serve_command(pinned, ServeTarget(kind="vllm-docker")).shell


def test_a_tpu_plan_names_the_surveys_release_and_up_runs_its_image() -> None:
    # engines.json vllm-tpu `release`: the survey seed ran vllm/vllm-tpu:v0.30.0 on a v5e-1 (2026-10-25) and logged
    # the 321,280-token pool the v5e rules plan; the seed article's moving 'nightly' is never the default
    from onechip.schemas.serve import ServeTarget
    from onechip.vllm import flags

    plan = plan_model("google/gemma-4-E2B-it", "v5e-1")
    assert plan.engine_version == "0.30.0"
    command = flags.serve_command(plan, ServeTarget(kind="vllm-docker"))
    assert " vllm/vllm-tpu:v0.30.0 vllm serve " in command.shell and "nightly" not in command.shell


def test_a_release_newer_than_the_catalog_gets_the_nearest_rule_said_out_loud(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    (line,) = [w for w in plan_model(str(path), "h100", max_model_len=8192, engine_version="0.99.0").warnings
               if w.code == "engine-version"]  # fmt: skip
    assert "newer than any release the catalog's rules were read from (0.32.0)" in line.message
    assert "nearest rule" in line.message and "0.28.0 and later" in line.message


def test_no_floating_latest_image_in_the_source() -> None:
    src = Path(__file__).resolve().parents[3] / "src" / "onechip"
    hits = [p for p in src.rglob("*.py") if "vllm-openai:latest" in p.read_text(encoding="utf-8")]
    assert hits == []


# llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @ 259334868c5075da530cc6c90b43fceb11b6e6a7:
# H100, utilization 0.9, max-model-len 16000, figures read from the boot logs ('torch peak memory increase'). Held
# out for the 0.8.0 - 0.15.x sort-based sampler constant, fitted on vllm#23278. The document's pods run
# 'vllm/vllm-openai:latest' and it names the release (0.11.0) for its Mistral-Small-3.2 entry only (added at
# 4f4d4494): which release and sampler these runs had is not stated, and their peaks are the sort-based path's
# size, so they are planned sort-based (flashinfer=False); FlashInfer's, from the image, would be 1.9 / 2.1 GiB.
# gpt-oss-20b (7.38 GiB, the same vocabulary as the fitted vllm#23278 log): planned 7.38 with the constant refitted
# beside the 0.9.1 - 0.10.x rule's 0.07 GiB non-torch (2026-12-02); 7.20 / 4.66 / 5.43 GiB before, beside 0.25 GiB.
V011_ACTIVATION_GIB = {
    "meta-llama--Llama-3.1-8B-Instruct.json": 4.76,
    "Qwen--Qwen3-0.6B.json": 5.56,
    "openai--gpt-oss-20b.json": 7.38,
}


def test_the_sort_based_sampler_warm_up_of_v011_out_of_sample(tmp_path: Path) -> None:
    for name, logged in V011_ACTIVATION_GIB.items():
        config = json.loads((CONFIGS / name).read_text(encoding="utf-8"))
        path = sized_checkpoint(tmp_path / name, config, 2 * 10**9)
        plan = plan_model(
            str(path), "h100", max_model_len=16000, engine_version="0.11.0", multimodal=False, flashinfer=False
        )
        assert plan.memory_budget is not None
        assert plan.memory_budget.activation_peak_bytes / GIB == pytest.approx(logged, rel=0.03), name


def test_a_dev_build_gets_the_catalog_release_image_said_out_loud(tmp_path: Path) -> None:
    from onechip.schemas.serve import ServeTarget
    from onechip.vllm import flags

    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    dev = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.31.1rc1.dev23+g43b4aaea3")
    command = flags.serve_command(dev, ServeTarget(kind="vllm-docker"))
    assert "vllm/vllm-openai:v0.32.0" in command.shell
    assert any(
        "`up` runs vllm/vllm-openai:v0.32.0, which is vLLM 0.32.0, not 0.31.1rc1.dev23+g43b4aaea3" in w
        and "--image vllm/vllm-openai:nightly-<the full 40-character commit of 43b4aaea3>" in w
        for w in command.warnings
    )


def test_a_pre_release_is_planned_as_its_release_and_says_so(tmp_path: Path) -> None:
    # PyPI's vllm index holds no a/b/rc/dev version (2026-12-04: 0.0.1 - 0.34.0), so every rule and registry was read
    # from a release: 0.27.0rc1 is planned as 0.27.0 (catalog.files.release_key reads the release numbers only)
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    rc = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.27.0rc1")
    release = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.27.0")
    assert rc.kv_tokens == release.kv_tokens
    (said,) = [w.message for w in rc.warnings if w.code == "engine-version-prerelease"]
    assert said.startswith("vLLM 0.27.0rc1 is a pre-release or dev build, planned as 0.27.0, with 0.27.0's rules")
    assert "engine-version-prerelease" not in {w.code for w in release.warnings}
    # a dev build comes before its number (catalog.files._DEV_BUILD: setuptools_scm's guess-next-dev names 125 commits
    # past tag v0.26.1rc0 '0.26.1rc1.dev125'), so it is planned as the release before, 0.26.0, whose rules it gets
    dev = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.26.1rc1.dev125+g43b4aaea3")
    (said,) = [w.message for w in dev.warnings if w.code == "engine-version-prerelease"]
    assert "planned as 0.26.0," in said and "0.26.0's rules" in said
    first = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.13.0rc2.dev112+g763963aa7")
    (said,) = [w.message for w in first.warnings if w.code == "engine-version-prerelease"]
    assert "planned as 0.12.0," in said  # the newest release before 0.13.0 on PyPI
    # 3 commits past tag v0.8.5 is '0.8.5.post1.dev3': before 0.8.5.post1, so planned as 0.8.5 (both on PyPI)
    post = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.8.5.post1.dev3+g1234567")
    (said,) = [w.message for w in post.warnings if w.code == "engine-version-prerelease"]
    assert "planned as 0.8.5," in said


@pytest.mark.parametrize(("version", "beside"), [("0.10.3", "0.10.2 and 0.11.0"), ("0.33.5", "0.33.0 and 0.34.0")])
def test_a_release_number_pypi_never_published_is_said_with_the_releases_beside_it(
    tmp_path: Path, version: str, beside: str
) -> None:
    # PyPI's vllm index (catalog/vllm_architectures.json releases_read and releases_not_read, 0.0.1 - 0.34.0) goes
    # from 0.10.2 to 0.11.0 and from 0.33.0 to 0.34.0: no wheel nor vllm/vllm-openai:v<version> image exists for these,
    # which were planned and printed as `docker run ... vllm/vllm-openai:v0.10.3` with no word
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    plan = plan_model(str(path), "h100", max_model_len=8192, engine_version=version)
    (said,) = [w.message for w in plan.warnings if w.code == "engine-version-unreleased"]
    assert said.startswith(f"vLLM {version} is not a release: PyPI's vllm has {beside} beside it")


@pytest.mark.parametrize("version", ["0.10.2", "0.10.1.1", "0.8.5.post1", "0.8.5+cu118", "0.10", "0.34.0", "0.35.0"])
def test_a_published_release_or_one_newer_than_the_catalog_is_not_said_unreleased(tmp_path: Path, version: str) -> None:
    # each is on PyPI ('0.8.5+cu118' is 0.8.5's CUDA 11.8 wheel, '0.10' the 0.10.0 the images are tagged by), or newer
    # than the newest release read, which the engine-version warning says instead
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    plan = plan_model(str(path), "h100", max_model_len=8192, engine_version=version)
    assert "engine-version-unreleased" not in {w.code for w in plan.warnings}
