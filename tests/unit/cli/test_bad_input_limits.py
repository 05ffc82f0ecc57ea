"""Items of the new-user pass of 2026-12-02 on the scheduler sizes, GB10 and hosts, through both front ends (the
CLI's main() and an MCP tool call): sizes vLLM refuses are one line naming the flag (the argument over MCP) and
vLLM's rule with its releases (planner.scheduler_limits); sizes it accepts are planned with their memory."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from factories import one_error_line
from onechip import api, planner
from onechip.mcp.server import build_server
from onechip.schemas.inputs import MAX_POSITIONS
from onechip.schemas.requests import AdviseRequest

SMOL = ("SmolLM2-135M-Instruct", "--chip", "l4")  # a bundled inventory: plans offline
SMOL_ARGS = {"model": "SmolLM2-135M-Instruct", "chip": "l4"}

pytestmark = pytest.mark.usefixtures("offline_home")


def _call(name: str, args: dict):
    """The result of one MCP call."""

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool(name, args)

    return anyio.run(go)


def _tool(name: str, args: dict) -> tuple[bool, str]:
    """(is_error, its one line) of one MCP call."""
    result = _call(name, args)
    line = result.content[0].text
    assert "Traceback" not in line, line
    return bool(result.is_error), line


@pytest.mark.parametrize(
    ("argv", "args", "start"),
    [
        (["--max-num-seqs", "9999999"], {"max_num_seqs": 9999999},
         "{seqs} 9999999 is more than the 2048 tokens vLLM 0.32.0 batches by default here: vLLM refuses "
         "max_num_batched_tokens < max_num_seqs"),
        (["--max-num-seqs", "512", "--max-num-batched-tokens", "256"],
         {"max_num_seqs": 512, "max_num_batched_tokens": 256},
         "{batch} 256 is less than {seqs} 512: vLLM refuses max_num_batched_tokens < max_num_seqs"),
        (["--max-num-batched-tokens", "1", "--engine-version", "0.10.0"],
         {"max_num_batched_tokens": 1, "engine_version": "0.10.0"},
         "{batch} 1 is less than the 256 sequences vLLM 0.10.0 schedules by default here"),
        (["--max-num-batched-tokens", "4096", "--engine-version", "0.7.3"],
         {"max_num_batched_tokens": 4096, "engine_version": "0.7.3"},
         "{batch} 4096 is less than {len} 8192 and vLLM 0.7.3 runs this deployment without chunked prefill"),
    ],
)  # fmt: skip
def test_scheduler_sizes_vllm_refuses_are_one_line_on_both_front_ends(run, argv, args, start) -> None:
    flags = {"seqs": "--max-num-seqs", "batch": "--max-num-batched-tokens", "len": "--max-model-len"}
    line = one_error_line(run, "plan", *SMOL, *argv)
    assert line.startswith(start.format(**flags)), line
    assert "0.6.6 - 0.34.0" in line  # the releases the rule was read in
    names = {"seqs": "max_num_seqs", "batch": "max_num_batched_tokens", "len": "max_model_len"}
    is_error, text = _tool("plan", {**SMOL_ARGS, **args})
    assert is_error and "\n" not in text and text.startswith(start.format(**names)), text
    assert "--max-num" not in text  # the tool's arguments, never the CLI's flags


def test_a_batch_of_one_token_is_planned_where_vllm_starts_with_it(run) -> None:
    # vLLM 0.10.1 and later default max_num_seqs to min(256, 1) = 1, and SchedulerConfig accepts 1 >= 1
    got, out, _ = run("plan", *SMOL, "--max-num-batched-tokens", "1")
    assert got == 0 and "verdict: fits" in out


def test_sizes_vllm_accepts_but_cannot_profile_are_planned_as_not_fitting(run) -> None:
    most = str(MAX_POSITIONS)  # the most batched tokens the CLI takes: a request's most positions
    got, out, _ = run("plan", *SMOL, "--max-num-seqs", most, "--max-num-batched-tokens", most)
    assert got == 10 and "verdict: does not fit: vLLM's profiling run peaks at" in out  # 10: plan --help
    assert "(binding limit: profiling-memory)" in " ".join(out.split())  # the verdict wraps at the terminal width


def test_advise_plans_a_gb10_at_the_utilization_its_plan_names(run) -> None:
    # accelerators.json gb10: 101.3 GiB (108,770,046,771 B) free at start of 121.69 GiB (130,663,642,563 B) visible;
    # floor(0.8324 x 100) / 100 = 0.83, the figure the plan's free-memory-at-start verdict names (the logs:
    # 0.87 always failed, 0.82 - 0.83 ran)
    acc = planner.rules.accelerator("gb10")
    assert planner.start_utilization(acc) == 0.83
    # the engine's default utilization, 0.92 from vLLM 0.20.0 (the newest release's), is above the 0.9 a DGX Spark
    # boot passed: refused (vllm-project/recipes#632, 'the default 0.92 OOMs at startup'), naming 0.83
    refused = planner.plan_model("SmolLM2-135M-Instruct", "gb10")
    assert not refused.fits and refused.binding_limit == "free-memory-at-start"
    assert "--gpu-memory-utilization 0.83 or less" in refused.verdict
    warned = planner.plan_model("SmolLM2-135M-Instruct", "gb10", utilization=0.9)  # between the two: a warning
    said = [w.message for w in warned.warnings if w.code == "free-memory-at-start"]
    assert warned.fits and len(said) == 1 and "--gpu-memory-utilization 0.83 passed" in said[0]
    assert planner.plan_model("SmolLM2-135M-Instruct", "gb10", utilization=0.83).fits
    got, out, _ = run("advise", "SmolLM2-135M-Instruct", "--chips", "gb10,l4", "--workload", "ctx=1024,clients=4")
    assert got == 0 and "gb10 (1 x TP=1): planned at --gpu-memory-utilization 0.83" in out
    assert "on startup is less than" not in out  # was every gb10 row's verdict
    # gb10 has no roofline prior: with an l4 beside it a row is served (an Advice serving none is a tool error)
    rows = _call(
        "advise",
        {"model": "SmolLM2-135M-Instruct", "chips": ["gb10", "l4"], "workload": {"ctx": 1024, "clients": 4}, "reps": 1},
    ).structured_content["rows"]
    rows = [row for row in rows if row["chip"] == "gb10"]
    advice = api.advise(AdviseRequest(model="SmolLM2-135M-Instruct", chips=["gb10"],
                                      workload={"ctx": 1024, "clients": 4}, reps=1))  # fmt: skip
    assert {r.utilization for r in advice.rows} == {row["utilization"] for row in rows} == {0.83}
    assert not any("free memory" in r.verdict or "on startup" in r.verdict for r in advice.rows)
    assert all(r.utilization is None for r in api.advise(AdviseRequest(
        model="SmolLM2-135M-Instruct", chips=["l4"], workload={"ctx": 1024, "clients": 4}, reps=1)).rows)  # fmt: skip


def test_two_gb10s_are_beyond_one_host(run) -> None:
    # a DGX Spark holds one GB10 (accelerators.json gb10 host_gpus); the catalog's largest host (8) held it silent
    acc = planner.rules.accelerator("gb10")
    assert acc.host_gpus == 1 and "two NVIDIA DGX Spark systems" in (acc.host_gpus_source or "")
    e2b = ("google/gemma-4-E2B-it", "--chip", "gb10", "--gpu-memory-utilization", "0.8")
    got, out, _ = run("plan", *e2b, "--tensor-parallel-size", "2")
    out = " ".join(out.split())  # the console wraps long warnings
    assert got == 0 and "warning beyond-one-host: tensor_parallel_size x pipeline_parallel_size = 2 gb10 cards" in out
    assert "more than the 1 GPU(s) one gb10 host holds" in out
    got, out, _ = run("plan", *e2b)
    assert got == 0 and "beyond-one-host" not in out
    plan = _call("plan", {"model": "google/gemma-4-E2B-it", "chip": "gb10", "utilization": 0.8,
                          "tensor_parallel_size": 2}).structured_content  # fmt: skip
    assert "beyond-one-host" in {w["code"] for w in plan["warnings"]}
    # a card with no host of its own keeps the catalog's largest host: two H100s are not warned
    got, out, _ = run("plan", "google/gemma-4-E2B-it", "--chip", "h100", "--tensor-parallel-size", "2")
    assert got == 0 and "beyond-one-host" not in out
