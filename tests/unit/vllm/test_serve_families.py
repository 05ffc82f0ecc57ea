"""catalog/serve_families.json: every tool-call and reasoning parser a family names is one vLLM registers (the vLLM
installed beside onechip, vllm-cpu 0.32.0, which the embedded engine pins; and each release an engine's `up` runs,
or else the parser is left out and the release it is first in is said), and `onechip plan` prints each family's
parsers for a typical model name, the most specific name first (Qwen3-Coder gets qwen3_coder, not Qwen3's hermes)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip import catalog
from onechip.schemas.common import GIB
from onechip.vllm import flags

pytestmark = pytest.mark.usefixtures("offline_home")

FAMILIES = catalog.serve_families().families
PARSERS = [("--tool-call-parser", f.key, f.tool_call_parser) for f in FAMILIES if f.tool_call_parser] + [
    ("--reasoning-parser", f.key, f.reasoning_parser) for f in FAMILIES if f.reasoning_parser
]


def test_every_family_parser_is_in_the_installed_vllm_registries() -> None:
    with warnings.catch_warnings():  # importing vLLM warns (torch.jit deprecations): not what is tested
        warnings.simplefilter("ignore")
        vllm = pytest.importorskip("vllm")
        from vllm.reasoning import ReasoningParserManager
        from vllm.tool_parsers import ToolParserManager
    assert vllm.__version__.split("+")[0] == catalog.engines().engines["vllm-cpu"].release
    registered = {
        "--tool-call-parser": set(ToolParserManager.list_registered()),
        "--reasoning-parser": set(ReasoningParserManager.reasoning_parsers) | set(ReasoningParserManager.lazy_parsers),
    }
    unknown = [(flag, key, name) for flag, key, name in PARSERS if name not in registered[flag]]
    assert unknown == []


@pytest.mark.parametrize(("flag", "key", "name"), PARSERS)
def test_every_family_parser_is_registered_where_up_runs_or_its_first_release_is_said(flag, key, name) -> None:
    releases = {engine.release for engine in catalog.engines().engines.values() if engine.release}
    table = catalog.vllm_registries()
    first = getattr(table, flags._PARSERS[flag][0])[name].first_in  # a name no release read registers: KeyError
    for release in sorted(releases):
        why = flags.parser_refusal(flag, name, release)
        assert why is None or f"(first in {first}: catalog/vllm_registries.json)" in why, (key, release, why)
    assert flags.parser_refusal(flag, name, catalog.engines().engines["vllm-cpu"].release) is None


QWEN3_8B = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-8B.json").read_text(encoding="utf-8"))

# (a typical model name, the tool-call parser, the reasoning parser) `plan` prints for it, read in vLLM's docs
# (docs/features/tool_calling.md, reasoning_outputs.md, interleaved_thinking.md of the 0.32.0 sdist) or registries
EXPECTED = [
    ("Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder", None),
    ("Qwen3-Coder-480B-A35B-Instruct", "qwen3_coder", None),
    ("Qwen3-8B", "hermes", "qwen3"),
    ("QwQ-32B", "hermes", "deepseek_r1"),
    ("Qwen2.5-7B-Instruct", "hermes", None),
    ("DeepSeek-R1-Distill-Qwen-7B", None, "deepseek_r1"),
    ("DeepSeek-R1-0528", "deepseek_v3", "deepseek_r1"),
    ("DeepSeek-V3-0324", "deepseek_v3", None),
    ("DeepSeek-V3.1", "deepseek_v31", "deepseek_v3"),
    ("DeepSeek-V3.2-Exp", "deepseek_v32", None),
    ("GLM-4.5-Air", "glm45", "glm45"),
    ("GLM-4.6", "glm45", "glm45"),
    ("GLM-4.7-Flash", "glm47", "glm47"),
    ("Kimi-K2-Instruct", "kimi_k2", None),
    ("Kimi-K2-Thinking", "kimi_k2", "kimi_k2"),
    ("Llama-4-Scout-17B-16E-Instruct", "llama3_json", None),
    ("Llama-3.2-3B-Instruct", "llama3_json", None),
    ("Hermes-3-Llama-3.1-8B", "hermes", None),
    ("granite-4.0-h-small", "granite4", None),
    ("granite-3.1-8b-instruct", "granite", None),
    ("MiniMax-M2", "minimax_m2", "minimax_m2_append_think"),
    ("Seed-OSS-36B-Instruct", "seed_oss", "seed_oss"),
    ("Phi-4-mini-instruct", "phi4_mini_json", None),
    ("AI21-Jamba-1.5-Mini", "jamba", None),
    ("Hunyuan-A13B-Instruct", "hunyuan_a13b", "hunyuan_a13b"),
    ("ERNIE-4.5-21B-A3B-Thinking", "ernie45", "ernie45"),
    ("Mistral-7B-Instruct-v0.3", "mistral", None),
    ("gpt-oss-20b", "openai", "openai_gptoss"),
]


def test_every_family_has_a_typical_name_planned() -> None:
    matched = {flags.model_family(model, "").key for model, _, _ in EXPECTED}  # type: ignore[union-attr]
    assert {f.key for f in FAMILIES} - matched == {"smollm2", "gemma4"}  # test_flag_table, test_registry_releases


@pytest.mark.parametrize(("model", "tool", "reasoning"), EXPECTED, ids=[f"case{i}" for i in range(len(EXPECTED))])
def test_plan_prints_the_family_parsers_for_a_typical_name(run, tmp_path: Path, model, tool, reasoning) -> None:
    # headers only, Qwen3-8B's geometry: the name picks the family (name match first, FamilyEntry.name_contains)
    path = sized_checkpoint(tmp_path / model, {k: v for k, v in QWEN3_8B.items() if not k.startswith("_")}, 16 * GIB)
    got, out, err = run("plan", str(path), "--chip", "h100", "--max-model-len", "8192")
    assert got == 0, err
    argv = next(line for line in out.splitlines() if line.startswith("docker run ")).split()

    def value(flag: str) -> str | None:
        return argv[argv.index(flag) + 1] if flag in argv else None

    assert (value("--tool-call-parser"), value("--reasoning-parser")) == (tool, reasoning)
    assert ("--enable-auto-tool-choice" in argv) is (tool is not None)


LLAMA2_7B = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-2-7b-hf.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("folders", "config", "tool", "reasoning"),
    [
        # the folders above a checkpoint are no part of its name: this was served as Qwen3 (hermes, qwen3)
        (("qwen3-runs", "Mistral-7B-Instruct-v0.3"), LLAMA2_7B, "mistral", None),
        # nor is 'instruct' in a folder above a thinking model: its reasoning parser was left out
        (("instruct-evals", "Qwen3-8B"), QWEN3_8B, "hermes", "qwen3"),
        # a Hugging Face cache snapshot is named by its models--org--name folder, not its revision
        (("models--Qwen--Qwen3-Coder-30B-A3B-Instruct", "snapshots", "0123abcd"), LLAMA2_7B, "qwen3_coder", None),
    ],
    ids=["folder-above", "instruct-folder", "hf-snapshot"],
)
def test_a_local_checkpoint_is_matched_by_its_own_name(run, tmp_path: Path, folders, config, tool, reasoning) -> None:
    path = sized_checkpoint(tmp_path.joinpath(*folders), {k: v for k, v in config.items() if not k.startswith("_")},
                            13 * GIB)  # fmt: skip
    got, out, err = run("plan", str(path), "--chip", "h100", "--max-model-len", "2048")
    assert got == 0, err
    argv = next(line for line in out.splitlines() if line.startswith("docker run ")).split()

    def value(flag: str) -> str | None:
        return argv[argv.index(flag) + 1] if flag in argv else None

    assert (value("--tool-call-parser"), value("--reasoning-parser")) == (tool, reasoning)
