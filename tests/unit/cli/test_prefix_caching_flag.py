"""`--enable-prefix-caching/--no-enable-prefix-caching` (found by the new-user pass of 2026-12-02): a hybrid
model on vLLM 0.34.0 with prefix caching is refused where its pages are not modelled (since 2026-12-05 only a KDA
model with Kimi-K3's full-rank gate: its FlashKDA checkpoint pages) with advice to plan without it, which named a
flag the CLI did not have; an MCP caller is told the argument (`enable_prefix_caching: false`); a plan made without
caching serves with --no-enable-prefix-caching instead of the launch rule's --enable-prefix-caching."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import anyio
import pytest
from mcp import Client

from factories import BOOTLOGS, kimi_linear_config, one_error_line, sized_checkpoint
from onechip import planner
from onechip.mcp.server import build_server
from onechip.schemas import ServeTarget
from onechip.schemas.common import GIB
from onechip.schemas.requests import PlanRequest, UpRequest
from onechip.vllm import flags

pytestmark = pytest.mark.usefixtures("offline_home")


def _qwen35(tmp_path: Path) -> str:
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3.5-9B.json").read_text(encoding="utf-8"))
    return str(sized_checkpoint(tmp_path / "qwen35-9b", config, 17 * GIB))


def _kda_full_rank_gate(tmp_path: Path) -> str:
    config = kimi_linear_config()
    config["linear_attn_config"] = {**config["linear_attn_config"], "use_full_rank_gate": True}
    return str(sized_checkpoint(tmp_path / "kda", config, 92 * GIB))


def _args(model: str) -> list[str]:
    return [model, "--chip", "h200", "--max-model-len", "4096", "--engine-version", "0.34.0"]


def test_the_refusal_advises_a_flag_plan_takes(run, tmp_path: Path) -> None:
    model = _kda_full_rank_gate(tmp_path)
    line = one_error_line(run, "plan", *_args(model))
    assert "plan with --no-enable-prefix-caching" in line, line
    got, out, err = run("plan", *_args(model), "--no-enable-prefix-caching")  # the advice, as typed
    assert got == 0, err
    assert "verdict:" in out and "--no-enable-prefix-caching" in out
    assert " --enable-prefix-caching" not in out.replace("--no-enable-prefix-caching", "")


def test_mcp_names_the_argument_and_plans_with_it_off(tmp_path: Path) -> None:
    model = _kda_full_rank_gate(tmp_path)
    base = {"model": model, "chip": "h200", "max_model_len": 4096, "engine_version": "0.34.0"}

    async def go(args):
        async with Client(build_server()) as client:
            return await client.call_tool("plan", args)

    refused = anyio.run(go, base)
    text = refused.content[0].text
    assert refused.is_error and "enable_prefix_caching: false" in text and "--no-enable-prefix-caching" not in text
    planned = anyio.run(go, {**base, "enable_prefix_caching": False})
    assert not planned.is_error, planned.content[0].text
    shell = planned.structured_content["serve_command"]["shell"]
    words = shlex.split(shell)
    assert "--no-enable-prefix-caching" in words and "--enable-prefix-caching" not in words


def test_serve_command_with_caching_off_and_on(tmp_path: Path) -> None:
    model = _qwen35(tmp_path)
    common = {"chip": "gpu:32GiB", "max_model_len": 4096, "engine_version": "0.26.0"}
    for caching, wanted, absent in ((False, "--no-enable-prefix-caching", "--enable-prefix-caching"),
                                    (True, "--enable-prefix-caching", "--no-enable-prefix-caching")):  # fmt: skip
        plan = planner.plan_model(model, enable_prefix_caching=caching, **common)
        command = flags.serve_command(plan, ServeTarget(kind="vllm"))
        names = [f.flag for f in command.flags]
        assert wanted in names and absent not in names


def test_up_carries_the_option_to_its_plan() -> None:
    up = UpRequest(model="m", chip="l4", engine="vllm", enable_prefix_caching=False)
    plan_request = up.plan_request()
    assert isinstance(plan_request, PlanRequest) and plan_request.enable_prefix_caching is False
    assert "--no-enable-prefix-caching" in up.sizing_given()
    assert UpRequest(model="m", chip="l4", engine="vllm").sizing_given() == []


def test_more_gpus_than_one_host_holds_assume_nccl_over_the_network(tmp_path: Path) -> None:
    """A GB10 host holds one GPU (accelerators.json host_gpus): TP 2 on it spans hosts, so the TP >= 2 term is
    NCCL's 'net' transport (engines.json nccl_transports), not peer access on one host; an H100 host still p2p."""
    model = _qwen35(tmp_path)

    def transport_line(chip: str) -> str:
        plan = planner.plan_model(model, chip, tensor_parallel_size=2, max_model_len=4096)
        return next(w.message for w in plan.warnings if w.code == "nccl-transport")

    gb10 = transport_line("gb10")
    assert "NCCL net (assumed: more GPUs than one host holds" in gb10 and "peer access" not in gb10
    assert "NCCL p2p (assumed: one host whose GPUs have peer access" in transport_line("h100")
