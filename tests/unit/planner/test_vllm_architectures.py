"""catalog/vllm_architectures.json: the first and last vLLM release whose model registry names each architecture
(scripts/gen_vllm_architectures.py, generated from each release's PyPI sdist or wheel), and the planner's refusal
of a release before it, or after it where vLLM's _PREVIOUSLY_SUPPORTED_MODELS says it is no longer supported.

The entries asserted here are read from the registry of the releases named (vllm/model_executor/models/
registry.py _VLLM_MODELS, models/__init__.py _MODELS or model_loader.py _MODEL_REGISTRY, as the generator reads
them); where those sources are on this machine (ONECHIP_VLLM_SOURCES, else the session's download folders) the
generator's reading of them is checked too.
"""

from __future__ import annotations

import json
import os
import re
import sys
from functools import cache
from pathlib import Path

import pytest

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.rules import engine_rules

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_vllm_architectures as gen  # noqa: E402

sys.path.pop(0)

# (architecture, first_in, absent_in): the registries of those two releases, read in their sdists
ENTRIES = [
    ("Gemma4ForConditionalGeneration", "0.19.0", "0.18.1"),  # registry.py _MULTIMODAL_MODELS of 0.19.0
    ("GptOssForCausalLM", "0.10.1", "0.10.0"),  # registry.py _TEXT_GENERATION_MODELS of 0.10.1
    ("Qwen3ForCausalLM", "0.8.4", "0.8.3"),
    ("Qwen3NextForCausalLM", "0.10.2", "0.10.1.1"),
    ("Qwen2ForCausalLM", "0.3.0", "0.2.7"),  # models/__init__.py _MODELS of 0.3.0
    ("MistralForCausalLM", "0.2.0", "0.1.7"),  # model_loader.py _MODEL_REGISTRY of 0.2.0
]


@pytest.mark.parametrize(("arch", "first", "absent"), ENTRIES)
def test_the_first_release_of_an_architecture(arch: str, first: str, absent: str) -> None:
    entry = catalog.vllm_architectures().architectures[arch]
    assert (entry.first_in, entry.absent_in) == (first, absent)


def test_an_architecture_in_the_oldest_release_read_has_no_known_first_release() -> None:
    table = catalog.vllm_architectures()
    assert table.releases_read[0] == "0.1.4"  # 0.0.1 - 0.1.3: before the generator's --since 0.1.4
    assert set(table.releases_not_read) == {"0.0.1", "0.1.0", "0.1.1", "0.1.2", "0.1.3"}
    llama = table.architectures["LlamaForCausalLM"]
    assert (llama.first_in, llama.absent_in) == ("0.1.4", None)


@cache
def _sources() -> dict[str, Path]:
    """Release -> its sdist, wheel or unpacked package on this machine (named by file name or _version.py)."""
    roots = os.environ.get("ONECHIP_VLLM_SOURCES", "/tmp/small_sd:/tmp/small_whl:/tmp/h010/sd:/tmp/hybrid-vllm")
    found: dict[str, Path] = {}
    for root in map(Path, roots.split(":")):
        if not root.is_dir():
            continue
        for path in [*root.glob("vllm-*.tar.gz"), *root.glob("*/vllm-*.whl")]:
            found[re.split(r"-|\.tar\.gz", path.name)[1]] = path
        for path in root.iterdir():
            version = path / "vllm" / "_version.py"
            if version.is_file() and (match := re.search(r"version = '([^']+)'", version.read_text())):
                found[match.group(1)] = path
    return found


@pytest.mark.parametrize(("arch", "first", "absent"), ENTRIES)
def test_the_entries_are_what_the_sources_say(arch: str, first: str, absent: str) -> None:
    paths = {release: _sources().get(release) for release in (first, absent)}
    if None in paths.values():
        pytest.skip(f"the vLLM {first} and {absent} sources are not on this machine (ONECHIP_VLLM_SOURCES)")
    names = {release: gen.registry(gen.read_source(path)[1])[1] for release, path in paths.items() if path}
    assert arch in names[first] and arch not in names[absent]


def test_the_generator_reads_the_registry_through_its_unpacking() -> None:
    source = """
_TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}
_MULTIMODAL_MODELS: dict[str, tuple[str, str]] = {"Gemma4ForConditionalGeneration": ("gemma4_mm", "X")}
_VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_MULTIMODAL_MODELS}
_PREVIOUSLY_SUPPORTED_MODELS = {"MllamaForConditionalGeneration": "0.10.2"}
"""
    where, names = gen.registry({"model_executor/models/registry.py": source})
    assert where == "vllm/model_executor/models/registry.py _VLLM_MODELS"
    assert names == {"LlamaForCausalLM", "Gemma4ForConditionalGeneration"}
    assert gen.release_key("0.10.1.1") > gen.release_key("0.10.1") > gen.release_key("0.9.2")


def test_a_release_before_the_architecture_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        plan_model("google/gemma-4-E2B-it", "l4", engine_version="0.7.1", max_model_len=4096)
    assert str(caught.value).startswith(
        "vLLM 0.7.1 does not serve Gemma4ForConditionalGeneration: its model registry has no such architecture, "
        "first in vLLM 0.19.0 "
    )
    assert "\n" not in str(caught.value) and str(caught.value).endswith("plan --engine-version 0.19.0 or later")
    assert plan_model("google/gemma-4-E2B-it", "l4", engine_version="0.19.0", max_model_len=4096).fits


def test_a_release_older_than_any_read_is_said_not_refused() -> None:
    plan = plan_model("SmolLM2-135M-Instruct", "l4", engine_version="0.1.0", max_model_len=2048)
    (note,) = [w for w in plan.warnings if w.code == "architecture-release"]
    assert note.message == (
        "vLLM 0.1.0 is older than the oldest release read (0.1.4), whose model registry already names "
        "LlamaForCausalLM: whether 0.1.0 serves it is not known"
    )
    later = plan_model("SmolLM2-135M-Instruct", "l4", engine_version="0.1.4", max_model_len=2048)
    assert not [w for w in later.warnings if w.code == "architecture-release"]


def test_a_build_of_an_untagged_checkout_is_not_release_0_1() -> None:
    # corpus gpu-qwen3-vl-8b-len4096-eager-dev15312: vLLM main of 2026-04 printed 'v0.1.dev15312' (setuptools-scm's
    # version of a checkout without tags); read as release 0.1.0 it was refused Qwen3-VL (first in 0.11.0). It is
    # planned under the newest rules (planner.rules.untagged_build), whose registry names the architecture, and the
    # plan says it cannot tell the release
    plan = plan_model("SmolLM2-135M-Instruct", "l4", engine_version="0.1.dev15312+g690e127b1", max_model_len=2048)
    assert not [w for w in plan.warnings if w.code == "architecture-release"]
    (note,) = [w for w in plan.warnings if w.code == "engine-version-untagged"]
    assert "cannot tell its release" in note.message


# (architecture, last_in, gone_in, refused since, vLLM's 'supported until'): the registry.py of the releases named
# (_VLLM_MODELS names it in last_in, not in gone_in's) and the _PREVIOUSLY_SUPPORTED_MODELS of 0.34.0's sdist, whose
# first naming release is `since` (the list of every release read from gone_in on)
GONE = [
    ("BaichuanForCausalLM", "0.24.0", "0.25.0", "0.25.0", "0.23.0"),  # 0.24.0's _TEXT_GENERATION_MODELS still has it
    ("Grok1ForCausalLM", "0.24.0", "0.25.0", "0.25.0", "0.24.0"),
    ("FuyuForCausalLM", "0.25.1", "0.26.0", "0.26.0", "0.25.0"),
    ("MllamaForConditionalGeneration", "0.10.2", "0.11.0", "0.11.0", "0.10.2"),  # 'encoder-decoder models except
    # whisper have been removed for V0 deprecation' (the list's comment)
    ("Phi4FlashForCausalLM", "0.10.2", "0.11.0", "0.11.1", "0.10.2"),  # 0.11.0's list does not name it yet
]


@pytest.mark.parametrize(("arch", "last", "gone", "since", "until"), GONE)
def test_the_last_release_of_a_removed_architecture(arch: str, last: str, gone: str, since: str, until: str) -> None:
    entry = catalog.vllm_architectures().architectures[arch]
    assert (entry.last_in, entry.gone_in) == (last, gone)
    assert entry.refused is not None and (entry.refused.since, entry.refused.supported_until) == (since, until)


@pytest.mark.parametrize(("arch", "last", "gone", "since", "until"), GONE)
def test_the_removals_are_what_the_sources_say(arch: str, last: str, gone: str, since: str, until: str) -> None:
    paths = {release: _sources().get(release) for release in (last, gone, since, "0.34.0")}
    if None in paths.values():
        pytest.skip(f"the vLLM {last}, {gone}, {since} and 0.34.0 sources are not on this machine")
    files = {release: gen.read_source(path)[1] for release, path in paths.items() if path}
    assert arch in gen.registry(files[last])[1] and arch not in gen.registry(files[gone])[1]
    assert gen.refusals(files["0.34.0"])[0][arch] == until and arch in gen.refusals(files[since])[0]
    assert since == gone or arch not in gen.refusals(files[gone])[0]


def test_a_release_after_vllm_dropped_the_architecture_is_refused_in_one_line() -> None:
    rules = engine_rules("vllm-gpu")
    assert rules.check_architectures(["BaichuanForCausalLM"], "0.24.0") == []
    with pytest.raises(ConfigError) as caught:
        rules.check_architectures(["BaichuanForCausalLM"], "0.33.0")
    message = str(caught.value)
    assert message.startswith("vLLM 0.33.0 no longer serves BaichuanForCausalLM: last in 0.24.0 ")
    assert "'supported in vLLM until v0.23.0'" in message and "_PREVIOUSLY_SUPPORTED_MODELS of 0.34.0" in message
    assert "\n" not in message and message.endswith("plan --engine-version 0.24.0")


def test_a_dropped_architecture_the_planner_does_not_model_is_refused_as_dropped_first(tmp_path: Path) -> None:
    # an Aquila geometry (AquilaForCausalLM: last in 0.24.0, refused from 0.25.0): the planner models no 'aquila',
    # but that a user's vLLM refuses the checkpoint comes first; before, only 'an architecture the planner does not
    # model' (Baichuan was this test's example until the planner modelled it, planfix69)
    config = {"architectures": ["AquilaForCausalLM"], "model_type": "aquila", "hidden_size": 4096,
              "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 100008}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        ConfigError, match=r"^vLLM 0\.33\.0 no longer serves AquilaForCausalLM: last in 0\.24\.0 "
    ) as gone:
        plan_model(str(tmp_path), "h100", engine_version="0.33.0")
    with pytest.raises(ConfigError, match="an architecture the planner does not model"):
        plan_model(str(tmp_path), "h100", engine_version="0.24.0")
    # so the line sends no one to 0.24.0, which the planner refuses too (it ended 'plan --engine-version 0.24.0')
    assert "--engine-version" not in str(gone.value)
    assert str(gone.value).endswith(
        "nor does onechip plan it on any release (an architecture the planner does not model)"
    )


def test_an_architecture_the_registry_dropped_without_a_word_is_said_not_refused() -> None:
    # MedusaModel: registry.py _SPECULATIVE_DECODING_MODELS of 0.32.0 names it, no dict of 0.33.0's does, nor its
    # _PREVIOUSLY_SUPPORTED_MODELS; Phi4Flash in 0.11.0, before that list named it (0.11.1)
    rules = engine_rules("vllm-gpu")
    assert rules.check_architectures(["MedusaModel"], "0.32.0") == []
    (note,) = rules.check_architectures(["MedusaModel"], "0.33.0")
    assert note.startswith("vLLM 0.33.0's model registry no longer names MedusaModel (last in 0.32.0, gone from 0.33.0")
    assert "Transformers backend if at all" in note and "not known" in note
    (flash,) = rules.check_architectures(["Phi4FlashForCausalLM"], "0.11.0")
    assert "does not say it was removed" in flash
    # BartForConditionalGeneration: 0.34.0's (the newest read) _OOT_SUPPORTED_MODELS names vllm-project/bart-plugin
    (bart,) = rules.check_architectures(["BartForConditionalGeneration"], "0.33.0")
    assert "served out of tree by the plugin https://github.com/vllm-project/bart-plugin" in bart


def test_an_architecture_vllm_finds_under_another_suffix_is_not_said_gone() -> None:
    # Qwen2ForSequenceClassification: registry.py _VLLM_MODELS of 0.9.2 names it, 0.10.0's does not; 0.33.0's
    # ModelRegistry._normalize_arch swaps its suffix (config/model.py _SUFFIX_TO_DEFAULTS) for Qwen2ForCausalLM
    entry = catalog.vllm_architectures().architectures["Qwen2ForSequenceClassification"]
    assert (entry.last_in, entry.gone_in) == ("0.9.2", "0.10.0")
    assert entry.served_as is not None and entry.served_as.architecture == "Qwen2ForCausalLM"
    assert engine_rules("vllm-gpu").check_architectures(["Qwen2ForSequenceClassification"], "0.33.0") == []
    suffix_list = ["ForCausalLM", "ForConditionalGeneration", "ForSequenceClassification", "Model"]
    assert gen.normalized("Qwen2ForSequenceClassification", {"Qwen2ForCausalLM"}, suffix_list) == "Qwen2ForCausalLM"
    assert gen.normalized("BaichuanForCausalLM", {"Qwen2ForCausalLM"}, suffix_list) is None
