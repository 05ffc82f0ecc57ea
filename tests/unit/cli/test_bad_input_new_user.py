"""The new-user test of 2026-12-02, one regression test per finding, through both front ends (the CLI's
main() and an MCP tool call on one server): absurd sizes are refused in one line (int64, the card's memory,
the model's layers); an MCP list or key=value argument is a JSON array or object, never one string; vLLM 0.7.1 -
0.8.x get --enable-reasoning beside --reasoning-parser; a V0 fallback of a model V0 cannot serve is refused."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from factories import BOOTLOGS, gpt_oss_checkpoint, one_error_line, sized_checkpoint
from onechip import planner
from onechip.mcp.server import build_server
from onechip.schemas import ServeCommand, ServeTarget
from onechip.schemas.common import GIB
from onechip.schemas.inputs import INT64_MAX, MAX_POSITIONS
from onechip.vllm import flags

SMOL = ("SmolLM2-135M-Instruct", "--chip", "l4")  # a bundled inventory: plans offline
E2B = {"model": "google/gemma-4-E2B-it", "chip": "v5e-1"}


pytestmark = pytest.mark.usefixtures("offline_home")


def _tool(name: str, args: dict) -> tuple[bool, str]:
    """(is_error, its one line) of one MCP call."""

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool(name, args)

    result = anyio.run(go)
    line = result.content[0].text
    assert "\n" not in line and "Traceback" not in line, line
    return bool(result.is_error), line


def test_int64_is_the_bound_of_every_size():
    # a torch tensor size is an int64_t (c10/core/TensorImpl.h): vLLM allocates the KV pool and the profiling
    # batch as tensors of these sizes
    assert INT64_MAX == 9_223_372_036_854_775_807


@pytest.mark.parametrize(
    ("flag", "field", "most"),
    [
        # 1e30 B was planned as a 931,322,574,615,478,534,144 GiB pool
        ("--kv-cache-memory", "kv_cache_memory_bytes", INT64_MAX),
        ("--max-num-batched-tokens", "max_num_batched_tokens", MAX_POSITIONS),  # a step's tokens: a request's at most
        ("--max-num-seqs", "max_num_seqs", MAX_POSITIONS),  # a step's sequences: each holds one of its tokens
        ("--block-size", "block_size", MAX_POSITIONS),
        ("--max-model-len", "max_model_len", MAX_POSITIONS),  # a request's tokens: its positions
        ("--tensor-parallel-size", "tensor_parallel_size", INT64_MAX),
        ("--pipeline-parallel-size", "pipeline_parallel_size", INT64_MAX),  # was an OverflowError traceback
    ],
)
def test_a_size_beyond_int64_is_one_line_on_both_front_ends(run, flag: str, field: str, most: int) -> None:
    huge = 10**30
    line = one_error_line(run, "plan", *SMOL, flag, str(huge))
    assert line.startswith(f"Invalid value for '{flag}'") and f"less than or equal to {most}" in line
    is_error, text = _tool("plan", {**E2B, field: huge})
    assert is_error and text.startswith(f"Invalid value for '{field}'") and str(most) in text  # its name


@pytest.mark.parametrize(("flag", "field"), [("--max-num-seqs", "max_num_seqs"), ("--max-model-len", "max_model_len")])
def test_a_count_one_past_the_positions_bound_is_one_line_on_both_front_ends(run, flag: str, field: str) -> None:
    """--max-num-seqs and --max-model-len took any int64 (2**26 + 1 was planned); they are bounded as
    --max-num-batched-tokens is (schemas.inputs.MAX_POSITIONS)."""
    over = MAX_POSITIONS + 1
    line = one_error_line(run, "plan", *SMOL, flag, str(over))
    assert (
        line
        == f"Invalid value for '{flag}': {field}: Input should be less than or equal to {MAX_POSITIONS} (got {over})"
    )
    is_error, text = _tool("plan", {**E2B, field: over})
    assert is_error and text.startswith(f"Invalid value for '{field}'") and str(MAX_POSITIONS) in text


def test_a_kv_pool_larger_than_the_card_is_refused_not_planned(run) -> None:
    # was verdict 'does not fit' with a 931,322,574.62 GiB pool and exit 0; the l4's visible memory is
    # accelerators.json's 22.03 GiB
    line = one_error_line(run, "plan", *SMOL, "--kv-cache-memory", str(10**18))
    assert line == (
        "--kv-cache-memory 1,000,000,000,000,000,000 bytes (931,322,574.62 GiB) is more than the 22.03 GiB one l4 "
        "device holds; the pool is per GPU/chip"
    )
    is_error, text = _tool("plan", {**E2B, "chip": "l4", "kv_cache_memory_bytes": 10**18})
    assert is_error and text == "kv_cache_memory_bytes" + line.removeprefix("--kv-cache-memory")  # the argument
    got, out, _ = run("plan", *SMOL, "--kv-cache-memory", str(2 * 10**9))  # a pool the card holds still plans
    assert got == 0 and "verdict: fits" in out


def test_more_pipeline_stages_than_layers_is_one_line_before_any_list_is_made(run) -> None:
    # SmolLM2-135M has 30 decoder layers (its config.json num_hidden_layers)
    assert one_error_line(run, "plan", *SMOL, "--pipeline-parallel-size", str(10**18)) == (
        "pipeline_parallel_size 1000000000000000000 exceeds the model's 30 layers"
    )


def test_a_card_memory_beyond_a_64_bit_byte_count_is_refused(run) -> None:
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", "gpu:1" + "0" * 30 + "GiB")
    assert "is more memory than a 64-bit byte count holds" in line
    is_error, text = _tool("plan", {**E2B, "chip": "gpu:1" + "0" * 30 + "GiB"})
    assert is_error and text == line


@pytest.mark.parametrize(
    ("tool", "args", "line"),
    [
        ("plan", {**E2B, "contexts": "1024,8192"},
         "contexts must be a JSON array of integers such as [128, 1024], not the string '1024,8192'"),
        ("simulate", {"plan": "plan.json", "contexts": "128"},
         "contexts must be a JSON array of integers such as [128, 1024], not the string '128'"),
        ("simulate", {"plan": "plan.json", "clients": "1,4"},
         "clients must be a JSON array of integers such as [128, 1024], not the string '1,4'"),
        ("bench", {"base_url": "http://127.0.0.1:9", "contexts": "128,1024"},
         "contexts must be a JSON array of integers such as [128, 1024], not the string '128,1024'"),
        ("advise", {"model": "google/gemma-4-E2B-it", "workload": "ctx=1024,clients=4"},
         'workload must be a JSON object such as {"ctx": 1024, "clients": 16}, not the string '
         "'ctx=1024,clients=4'"),
        ("advise", {"model": "google/gemma-4-E2B-it", "chips": "l4,v5e-1"},
         "chips must be a JSON array of strings such as [\"a\", \"b\"], not the string 'l4,v5e-1'"),
        ("cost", {"chip": "v5e-1", "output_tok_per_s": 100, "pricing": "spot"},
         "pricing must be a JSON array of strings such as [\"a\", \"b\"], not the string 'spot'"),
        ("check", {"base_url": "http://127.0.0.1:9", "only": "smoke"},
         "only must be a JSON array of strings such as [\"a\", \"b\"], not the string 'smoke'"),
    ],
)  # fmt: skip
def test_an_mcp_list_or_object_is_json_never_one_string(tool: str, args: dict, line: str) -> None:
    # the published input schema says array (object); the one-string forms are the command line's
    is_error, text = _tool(tool, args)
    assert is_error and text == line


def test_the_command_line_still_takes_the_comma_list(run) -> None:
    got, out, err = run("plan", *SMOL, "--contexts", "1024,2048")
    assert got == 0, err
    assert "2,048" in out


QWEN3_8B = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-8B.json").read_text(encoding="utf-8"))


def _qwen3(tmp_path: Path) -> str:
    """A Qwen3-8B checkpoint (headers only): the qwen3 family's reasoning parser, an architecture vLLM's registry
    has from 0.8.4 on (catalog/vllm_architectures.json; Gemma 4, which these tests planned, only from 0.19.0)."""
    path = tmp_path / "qwen3-8b"
    if not path.exists():
        sized_checkpoint(path, {k: v for k, v in QWEN3_8B.items() if not k.startswith("_")}, 16 * GIB)
    return str(path)


def _command(run, model: str, *argv: str) -> str:
    got, out, err = run("plan", model, "--chip", "h100", "--max-model-len", "8192", *argv)
    assert got == 0, err
    return next(line for line in out.splitlines() if line.startswith("docker run "))


def _flags_for(tmp_path: Path, version: str, sets: list[str] | None = None) -> ServeCommand:
    """The serve command of the Qwen3 plan as if planned for `version`, a release before the architecture (0.8.1,
    0.8.2): the flag table is what these releases test."""
    plan = planner.plan_model(_qwen3(tmp_path), "h100", max_model_len=8192, engine_version="0.8.5")
    return flags.serve_command(plan.model_copy(update={"engine_version": version}),
                               ServeTarget(kind="vllm-docker", sets=sets or []))  # fmt: skip


# The qwen3 family's reasoning parser is registered from 0.9.0 (catalog/vllm_registries.json; vllm/reasoning/
# qwen3_reasoning_parser.py is not in the 0.8.5.post1 sdist): before it the serve command leaves it out, so the
# --enable-reasoning rule of 0.8.2 - 0.8.5 is tested with deepseek_r1 set by hand (registered from 0.7.1).
QWEN3_LEFT_OUT = (
    "--reasoning-parser qwen3 left out: vLLM 0.8.5 registers no reasoning parser 'qwen3' (first in 0.9.0: "
    "catalog/vllm_registries.json); reasoning stays in the answer"
)


@pytest.mark.parametrize(
    ("version", "parser", "enabled"),
    # vllm/engine/arg_utils.py + serving_chat.py: 0.8.2 - 0.8.5 separate reasoning only with --enable-reasoning;
    # 0.9.0 deprecated it (the parser alone enables reasoning), 0.10.0 has no such flag
    [
        ("0.8.5", "deepseek_r1", True),
        ("0.8.5.post1", "deepseek_r1", True),
        ("0.9.0", "qwen3", False),
        ("0.10.0", "qwen3", False),
        (None, "qwen3", False),
    ],
)
def test_enable_reasoning_beside_the_reasoning_parser_where_the_release_needs_it(
    run, tmp_path: Path, version, parser, enabled
) -> None:
    model = _qwen3(tmp_path)
    sets = [] if parser == "qwen3" else ["--set", f"reasoning-parser={parser}"]
    command = _command(run, model, *(["--engine-version", version] if version else []), *sets)
    assert f"--reasoning-parser {parser}" in command  # qwen3: catalog/serve_families.json, the family's parser
    assert ("--enable-reasoning" in command.split()) is enabled
    if version is not None:
        is_error, _ = _tool("plan", {"model": model, "chip": "h100", "max_model_len": 8192, "engine_version": version})
        assert not is_error


def test_enable_reasoning_from_082_in_the_flag_table(tmp_path: Path) -> None:
    # 0.8.2 served no model of a family with a reasoning parser: the flag table's rule, without the planner
    assert "--enable-reasoning" in _flags_for(tmp_path, "0.8.2", ["reasoning-parser=deepseek_r1"]).argv


def test_enable_reasoning_through_mcp_and_a_set_that_drops_it(run, tmp_path: Path) -> None:
    model = _qwen3(tmp_path)

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool(
                "plan", {"model": model, "chip": "h100", "max_model_len": 8192, "engine_version": "0.8.5"}
            )

    result = anyio.run(go)
    assert not result.is_error
    names = [flag["flag"] for flag in result.structured_content["serve_command"]["flags"]]
    # over MCP as on the CLI: the family's parser that 0.8.5 does not register is left out, and said
    assert "--reasoning-parser" not in names and "--enable-reasoning" not in names
    assert QWEN3_LEFT_OUT in result.structured_content["serve_command"]["warnings"]
    dropped = _command(
        run, model, "--engine-version", "0.8.5", "--set", "reasoning-parser=deepseek_r1", "--set", "enable-reasoning="
    )
    assert "--reasoning-parser" in dropped.split() and "--enable-reasoning" not in dropped.split()


def test_before_082_tool_calling_wins_and_the_reasoning_parser_is_said_to_be_inert(tmp_path: Path) -> None:
    # vllm/entrypoints/openai/cli_args.py of 0.7.1 - 0.8.1 refuses --enable-auto-tool-choice with --enable-reasoning
    command = _flags_for(tmp_path, "0.8.1", ["reasoning-parser=deepseek_r1"])
    words = command.argv
    assert "--enable-auto-tool-choice" in words and "--enable-reasoning" not in words
    assert any("--reasoning-parser has no effect on this vLLM release without --enable-reasoning" in w
               for w in command.warnings)  # fmt: skip


def test_before_082_enable_reasoning_set_beside_tool_calling_is_said_to_stop_the_engine(tmp_path: Path) -> None:
    # `--set enable-reasoning` on 0.8.1 beside the family's --enable-auto-tool-choice: vLLM refuses to start
    # ('Error: --enable-auto-tool-choice and --enable-reasoning cannot be enabled at the same time', cli_args.py of
    # 0.7.1 - 0.8.1), where the plan said 'tool calling is kept, reasoning stays in the answer'
    command = _flags_for(tmp_path, "0.8.1", ["reasoning-parser=deepseek_r1", "enable-reasoning"])
    assert {"--enable-auto-tool-choice", "--enable-reasoning"} <= set(command.argv)
    assert not any("--reasoning-parser has no effect" in w for w in command.warnings)
    assert any(
        w.startswith("--enable-reasoning beside --enable-auto-tool-choice: this vLLM release refuses to start")
        for w in command.warnings
    )
    assert not any(
        "--enable-reasoning beside" in w for w in _flags_for(tmp_path, "0.8.2", ["enable-reasoning"]).warnings
    )


GPT_OSS_V0 = (
    "GptOssForCausalLM on vLLM 0.10.2: --enable-prompt-embeds makes it run its V0 engine, which cannot serve it (its "
    "attention layers carry attention sinks, which only the V1 attention backends take); plan --engine-version "
    "0.11.0 or later, or drop --enable-prompt-embeds"
)
GPT_OSS_V0_MCP = (  # the same line over MCP names the tool's arguments
    "GptOssForCausalLM on vLLM 0.10.2: enable_prompt_embeds makes it run its V0 engine, which cannot serve it (its "
    "attention layers carry attention sinks, which only the V1 attention backends take); plan engine_version "
    "0.11.0 or later, or drop enable_prompt_embeds"
)


def test_gpt_oss_is_refused_where_the_v0_fallback_cannot_serve_it(run, tmp_path: Path) -> None:
    # was planned under the V0 memory rule; vLLM 0.10.2's V0 attention backends (vllm/attention/backends/) take no
    # `sinks`, which gpt_oss.py passes to every Attention layer (engines.json v0_cannot_serve)
    model = str(gpt_oss_checkpoint(tmp_path / "gpt-oss-20b"))
    argv = ("plan", model, "--chip", "h100", "--max-model-len", "8192")
    assert one_error_line(run, *argv, "--engine-version", "0.10.2", "--enable-prompt-embeds") == GPT_OSS_V0
    is_error, text = _tool("plan", {"model": model, "chip": "h100", "max_model_len": 8192, "engine_version": "0.10.2",
                                    "enable_prompt_embeds": True})  # fmt: skip
    assert is_error and text == GPT_OSS_V0_MCP
    for fine in (("--engine-version", "0.10.2"), ("--engine-version", "0.11.0", "--enable-prompt-embeds")):
        got, out, err = run(*argv, *fine)  # V1 serves it: no fallback, or no V0 engine left (0.11.0)
        assert got == 0 and "verdict: fits" in out, err


SHA = "43b4aaea3c6d0e5f1a2b3c4d5e6f708192a3b4c5"  # a 40-hex commit, as a dev build's version may name it


@pytest.mark.parametrize(
    ("version", "image", "said"),
    [
        # vLLM's nightly images are tagged by full commit (.buildkite/scripts/push-nightly-builds.sh:
        # vllm/vllm-openai:nightly-$BUILDKITE_COMMIT): the exact build where the version names it
        (f"0.26.1rc1.dev125+g{SHA}", f"vllm/vllm-openai:nightly-{SHA}", None),
        # no image by version and no PyPI pre-release: the newest release runs, said exactly
        ("0.26.1rc1.dev125", "vllm/vllm-openai:v0.32.0",
         "`up` runs vllm/vllm-openai:v0.32.0, which is vLLM 0.32.0, not 0.26.1rc1.dev125, while the plan was sized "
         "under 0.26.1rc1.dev125's rules; pass --image vllm/vllm-openai:nightly-<the full 40-character commit> to run "
         "that build, or --engine-version 0.32.0 to plan for what runs"),
        ("0.26.1rc1.dev125+g43b4aaea3", "vllm/vllm-openai:v0.32.0",
         "--image vllm/vllm-openai:nightly-<the full 40-character commit of 43b4aaea3>"),
        # releases run their own image, without the warning (0.10 is planned as 0.10.0; a post release is one)
        ("0.10", "vllm/vllm-openai:v0.10.0", None),
        ("0.8.5.post1", "vllm/vllm-openai:v0.8.5.post1", None),
        # a release's local build label (PEP 440 '+cu118', as vLLM's per-CUDA wheels are named) is that release:
        # it used to run the newest image (v0.32.0) under a plan sized by 0.8.x's rules
        ("0.8.5+cu121", "vllm/vllm-openai:v0.8.5", None),
        # a commit after a release number is a build of that commit, not the release
        ("0.8.5+g43b4aaea3", "vllm/vllm-openai:v0.32.0", "--image vllm/vllm-openai:nightly-<the full 40-character"),
    ],
)  # fmt: skip
def test_up_runs_the_image_of_a_dev_build_or_says_exactly_what_runs(run, version, image, said) -> None:
    argv = ("up", "--engine", "vllm-docker", "--model", "SmolLM2-135M-Instruct", "--chip", "l4", "--dry-run")
    got, out, err = run(*argv, "--engine-version", version)
    assert got == 0, err
    text = " ".join((out + err).split())
    assert f"--entrypoint vllm {image} serve" in text
    assert (said is None) == ("is not a release" not in text)
    if said is not None:
        assert said in text

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool("up", {"engine": "vllm-docker", "model": "SmolLM2-135M-Instruct",
                                                 "chip": "l4", "engine_version": version, "dry_run": True})  # fmt: skip

    result = anyio.run(go)
    assert not result.is_error, result.content[0].text
    command = result.structured_content["launch"]["command"]
    assert command["target"]["image"] == image
    said_here = [w for w in command["warnings"] if "is not a release" in w]
    assert (said is None and not said_here) or (said is not None and said in said_here[0])


@pytest.mark.parametrize("value", ["0", "-0.5", "1.0000001", "1e30", "nan", "inf"])
def test_utilization_outside_vllms_own_bound_is_one_line(run, value: str) -> None:
    # vllm/config/cache.py (0.19.0): gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    line = one_error_line(run, "plan", *SMOL, "--gpu-memory-utilization", value)
    assert line.startswith("Invalid value for '--gpu-memory-utilization'")


def test_a_tiny_utilization_vllm_takes_is_planned_as_not_fitting(run) -> None:
    got, out, err = run("plan", *SMOL, "--gpu-memory-utilization", "1e-300")
    assert got == 10, err  # printed, then exit 10: the verdict is does not fit (plan --help)
    assert "verdict: does not fit: weights 0.25 GiB per GPU exceed the requested 0.00 GiB" in out


def test_every_v0_fallback_trigger_is_worded() -> None:
    # a refusal names what sent the deployment to V0 and what avoids it: a trigger the catalog can hold
    # (catalog.files.V0Fallback.trigger) without words would end in a KeyError instead of the one-line refusal
    from typing import get_args

    from onechip.catalog.files import V0Fallback
    from onechip.planner.core import _V0_TRIGGER_WORDS

    assert set(get_args(V0Fallback.model_fields["trigger"].annotation)) == set(_V0_TRIGGER_WORDS)


@pytest.mark.parametrize("model", ["", "  "])
def test_an_empty_model_is_said_empty_not_read_as_the_working_directory(run, model: str) -> None:
    # Path('') is '.': `plan "" --chip h100` used to answer '.: no config.json', naming a directory nobody gave
    line = one_error_line(run, "plan", model, "--chip", "h100")
    assert line.startswith("MODEL is empty: give a local checkpoint directory"), line
