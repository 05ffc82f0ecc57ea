"""The command `onechip plan` prints is the command `onechip up` runs, byte for byte, for every engine kind
(issue 11: `plan` printed 3 serve flags where `up --engine vllm-docker` ran 14). Both build it with
engines.startup and onechip.vllm.flags.serve_command; these tests hold them to it, and check that what runs
(the engine's argv, serve.sh, the docker line) is that command."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from onechip import api
from onechip.cli import render
from onechip.cli.main import app
from onechip.engines import remote, startup
from onechip.engines.embedded import EmbeddedEngine
from onechip.schemas.requests import PlanRequest, UpRequest
from onechip.vllm import flags

TOKEN = "hf_FAKEtoken0123456789abcdefXYZ"
E2B = dict(model="gemma-4-E2B-it", sets=["max-model-len=32768"])
# (engine kind, what `plan` is given, what `up` is given); the planner inputs are the same for both.
CASES = {
    "embedded": ("embedded", dict(model="SmolLM2-135M-Instruct", chip="cpu", port=8123), dict(port=8123)),
    "vllm": ("vllm", dict(chip="h100", port=8124, **E2B), dict(chip="h100", port=8124, **E2B)),
    "vllm-docker": ("vllm-docker", dict(chip="v5e-1", **E2B), dict(chip="v5e-1", **E2B)),
    "vllm-ssh": ("vllm", dict(chip="l4", host="ubuntu@203.0.113.7", **E2B),
                 dict(chip="l4", host="ubuntu@203.0.113.7", **E2B)),
    "vllm-docker-ssh": ("vllm-docker", dict(chip="v5e-1", host="ubuntu@203.0.113.7", **E2B),
                        dict(chip="v5e-1", host="ubuntu@203.0.113.7", **E2B)),
}  # fmt: skip


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    return tmp_path


def _both(case: str):
    kind, plan_args, up_args = CASES[case]
    plan_args, up_args = dict(plan_args), dict(up_args)
    the_plan = api.plan(PlanRequest(launch=kind, **plan_args))
    result = api.up(UpRequest(engine=kind, dry_run=True, **up_args))
    assert result.launch is not None
    return the_plan, result.launch


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_carries_the_command_up_runs(case):
    the_plan, spec = _both(case)
    assert the_plan.serve_command is not None
    assert the_plan.serve_command == spec.command  # flags, order, reasons, env, docker groups, shell line
    assert the_plan.serve_command.shell == spec.command.shell


@pytest.mark.parametrize("case", ["vllm-docker-ssh", "vllm"])
def test_with_a_token_both_name_where_it_comes_from(case, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    the_plan, spec = _both(case)
    assert the_plan.serve_command == spec.command
    assert spec.command.target.token_source == "the HF_TOKEN environment variable"
    assert TOKEN not in the_plan.model_dump_json() and TOKEN not in spec.model_dump_json()


def test_the_command_is_what_runs(home):
    # embedded: the engine `up` and the demo start runs the argv plan shows
    the_plan, spec = _both("embedded")
    engine = EmbeddedEngine(home / "engine.log", port=spec.port)
    assert engine.command() == the_plan.serve_command.argv and engine.env == the_plan.serve_command.env
    # a local vllm process runs its argv
    _, spec = _both("vllm")
    planned, _, _ = api._engines._plan_for_up(UpRequest(engine="vllm", chip="h100", **E2B))
    prepared = startup.prepare(planned, "vllm", port=8124, sets=E2B["sets"])
    assert prepared.spec.command == spec.command
    assert prepared.engine(home / "engine.log").command() == spec.command.argv
    # over SSH serve.sh execs it; docker runs its one line
    _, spec = _both("vllm-ssh")
    assert remote.serve_script(spec).splitlines()[-1] == "exec " + flags.shell_join(spec.command.argv)
    _, spec = _both("vllm-docker-ssh")
    assert remote.start_command(spec).endswith(spec.command.shell)


@pytest.mark.parametrize(
    ("plan_argv", "up_argv"),
    [
        (["SmolLM2-135M-Instruct", "--chip", "cpu", "--launch", "embedded", "--port", "8123"],
         ["--engine", "embedded", "--port", "8123"]),
        (["gemma-4-E2B-it", "--chip", "v5e-1", "--set", "max-model-len=32768"],
         ["--engine", "vllm-docker", "--model", "gemma-4-E2B-it", "--chip", "v5e-1", "--set", "max-model-len=32768"]),
        (["gemma-4-E2B-it", "--chip", "l4", "--launch", "vllm", "--host", "u@203.0.113.7"],
         ["--engine", "vllm", "--model", "gemma-4-E2B-it", "--chip", "l4", "--host", "u@203.0.113.7"]),
        # an AMD card has no default image (AMD tags ROCm images per release and card family): `plan` without
        # --launch or --image prints the `vllm` command; it used to refuse the whole plan ('pass --image')
        (["gemma-4-E2B-it", "--chip", "mi300x", "--set", "max-model-len=32768", "--port", "8125"],
         ["--engine", "vllm", "--model", "gemma-4-E2B-it", "--chip", "mi300x", "--set", "max-model-len=32768",
          "--port", "8125"]),
        (["gemma-4-E2B-it", "--chip", "h100", "--launch", "vllm", "--set", "cpu-offload-gb=2", "--port", "8126"],
         ["--engine", "vllm", "--model", "gemma-4-E2B-it", "--chip", "h100", "--set", "cpu-offload-gb=2",
          "--port", "8126"]),
        (["gemma-4-E2B-it", "--chip", "h100", "--launch", "vllm", "--no-enable-prefix-caching", "--port", "8127"],
         ["--engine", "vllm", "--model", "gemma-4-E2B-it", "--chip", "h100", "--no-enable-prefix-caching",
          "--port", "8127"]),
    ],
)  # fmt: skip
def test_cli_plan_prints_the_line_up_dry_run_prints(plan_argv, up_argv, monkeypatch):
    # one width for both: `plan` prints through a Console made per call (it reads COLUMNS then), `up` through
    # cli.render's module console, whose width was fixed when it was imported; a test file run first with COLUMNS
    # set (test_remote) left it at 300 while plan wrapped at 80, and the flag lines differed by wrapping alone
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(render.console, "_width", 100)

    def command_line(output: str) -> str:
        lines = output.splitlines()
        return lines[lines.index("command:") + 1]

    planned = CliRunner().invoke(app, ["plan", *plan_argv], terminal_width=100)
    dry = CliRunner().invoke(app, ["up", *up_argv, "--dry-run"], terminal_width=100)
    assert planned.exit_code == 0, planned.output
    assert dry.exit_code == 0, dry.output
    assert command_line(planned.output) == command_line(dry.output)
    off = "--no-enable-prefix-caching" in plan_argv  # the plan's setting, in place of the launch rule's flag
    assert ("--no-enable-prefix-caching" in command_line(planned.output).split()) == off
    assert not off or "--enable-prefix-caching" not in command_line(planned.output).split()
    # and the flags with their reasons, in the same order
    flag_lines = [line for line in planned.output.splitlines() if line.startswith("  --")]
    assert flag_lines and flag_lines == [line for line in dry.output.splitlines() if line.startswith("  --")]


def test_replicas_on_an_amd_card_plan_without_an_image():
    # each replica's command is the `vllm` one, as for one engine (no default ROCm image); it used to refuse
    the_plan = api.plan(PlanRequest(model="gemma-4-E2B-it", chip="mi300x", replicas=2, sets=["max-model-len=32768"]))
    assert the_plan.replicas == 2 and the_plan.serve_command is not None
    assert "docker" not in the_plan.serve_command.shell


@pytest.mark.parametrize(
    "spelling",
    [["--set", "enable-prefix-caching=false"], ["--set", "--enable-prefix-caching=off"],
     ["--set", "no-enable-prefix-caching"]],
)  # fmt: skip
def test_prefix_caching_off_by_set_is_planned_as_by_its_option(spelling):
    # `--set enable-prefix-caching=false` used to drop the launch rule's flag without re-planning, which leaves vLLM's
    # own default (on in V1: EngineArgs enable_prefix_caching None -> default_prefix_caching, vllm/engine/arg_utils.py
    # of the 0.19.0 sdist): the opposite of what was typed. Like every planned flag's --set, it re-plans.
    def command_line(output: str) -> str:
        lines = output.splitlines()
        return lines[lines.index("command:") + 1]

    base = ["--engine", "vllm", "--model", "gemma-4-E2B-it", "--chip", "h100", "--port", "8128", "--dry-run"]
    by_option = CliRunner().invoke(app, ["up", *base, "--no-enable-prefix-caching"], terminal_width=100)
    by_set = CliRunner().invoke(app, ["up", *base, *spelling], terminal_width=100)
    assert by_option.exit_code == 0 and by_set.exit_code == 0, by_set.output
    words = command_line(by_set.output).split()
    assert "--no-enable-prefix-caching" in words and "--enable-prefix-caching" not in words
    assert words == command_line(by_option.output).split()
    request = UpRequest(engine="vllm", model="gemma-4-E2B-it", chip="h100", sets=spelling[1:], dry_run=True)
    assert api.up(request).plan.serve.enable_prefix_caching.value is False
