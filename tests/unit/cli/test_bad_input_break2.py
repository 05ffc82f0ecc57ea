"""The new-user test of helper break2 (2026-12-03), one regression test per finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize(("flag", "value"), [("--rate", "5"), ("--requests-per-client", "3")])
def test_simulate_refuses_open_loop_flags_on_agent_sessions_as_bench_does(run, tmp_path: Path, flag: str, value: str):
    # was exit 0: agent sessions were predicted as Poisson arrivals of turns (--rate), or the per-stream count was
    # dropped (--requests-per-client), where bench refuses both ('--workload agent runs whole sessions', its
    # schemas.bench _check_agent), so the prediction was of a run bench cannot measure
    code, plan_json, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(plan_json, encoding="utf-8")
    line = one_error_line(
        run, "simulate", "--plan", str(tmp_path / "plan.json"), "--workload", "agent", "--replicas", "2",
        flag, value, "--reps", "1", "--out", str(tmp_path / "s"),
    )  # fmt: skip
    assert line == f"--workload agent runs whole sessions: {flag} does not apply" and not (tmp_path / "s").exists()


@pytest.mark.parametrize("image", ["bad image", "--privileged", "Vllm/Vllm-Openai:v1", "vllm/vllm-openai:"])
@pytest.mark.parametrize("command", [["plan", "--chip", "l4"], ["deploy", "k8s", "--chip", "l4"]])
def test_an_image_that_is_no_docker_reference_is_refused(run, tmp_path: Path, image: str, command: list[str]):
    # was exit 0: the manifest carried 'image: bad image' and plan printed `docker run ... 'bad image' serve`, which
    # `up` handed to docker ('--privileged' as a docker option, the image then being 'serve'): the distribution
    # reference grammar (github.com/distribution/reference, regexp.go) has no space, no leading '-', no upper case
    # in a repository path and no empty tag
    out = ["--out", str(tmp_path / "k")] if command[0] == "deploy" else []
    line = one_error_line(run, *command[:-2], "SmolLM2-135M-Instruct", *command[-2:], f"--image={image}", *out)
    assert line == (
        f"Invalid value for '--image': image: not an image reference such as vllm/vllm-openai:v0.19.0 or "
        f"IMAGE@sha256:<64 hex digits> (got {image!r})"
    )
    assert not (tmp_path / "k").exists()


@pytest.mark.parametrize("secret", ["hf_FAKEtoken0123456789abcdefghijklmnop", "sk-FAKEsecretABCDEFGHIJ0123456789"])
@pytest.mark.parametrize("command", [["plan", "--chip", "l4"], ["up", "--dry-run", "--engine", "vllm-docker"]])
def test_an_image_tag_shaped_as_a_secret_is_refused_without_echoing_it(run, secret: str, command: list[str]):
    # was echoed as typed: `up --dry-run --image vllm/vllm-openai:hf_...` printed the token 5 times (the docker line,
    # the group table, the warnings); errors.looks_secret's shapes, as --set refuses them
    image = f"vllm/vllm-openai:{secret}"
    argv = ["plan", "SmolLM2-135M-Instruct", *command[1:]] if command[0] == "plan" else [*command, "--model",
            "SmolLM2-135M-Instruct", "--chip", "l4"]  # fmt: skip
    code, out, err = run(*argv, f"--image={image}")
    assert code != 0 and secret not in out + err
    assert "holds something shaped as a secret (a token or key): a secret never goes on a command line" in err


def test_an_image_named_after_hf_transfer_is_no_secret(run) -> None:
    # a break-pass find: 'hf_transfer' (8 letters after hf_) matched the redaction's loose shape and the image was
    # refused; a real token is hf_ and 34 letters and digits (errors.HF_TOKEN_SHAPE)
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--image=ghcr.io/acme/vllm-hf_transfer:v1")
    assert code == 0, err
    assert "ghcr.io/acme/vllm-hf_transfer:v1" in out


@pytest.mark.parametrize(
    "image",
    ["vllm/vllm-openai:v0.19.0", "us-docker.pkg.dev/my-proj/repo/vllm-tpu:nightly_2026.12", "localhost:5000/vllm",
     "vllm/vllm-tpu@sha256:" + "a" * 64, "Registry.Example.com:443/team/vllm:TAG-1"],
)  # fmt: skip
def test_a_docker_reference_is_taken_as_the_image(run, image: str):
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--image", image)
    assert code == 0 and f" {image} serve " in out, err


@pytest.mark.parametrize(
    ("command", "given"),
    [(["plan", "SmolLM2-135M-Instruct", "--chip", "v5e-4", "--replicas", "2"], "--tensor-parallel-size"),
     (["deploy", "k8s", "SmolLM2-135M-Instruct", "--chip", "v5e-4", "--replicas", "2"],
      "--set tensor-parallel-size=N")],
)  # fmt: skip
def test_a_tensor_parallel_size_from_the_chip_share_says_where_it_came_from(run, tmp_path, command, given):
    # was 'tensor_parallel_size 2 (vllm-tpu): num_attention_heads 9 is not divisible by it; ...' alone: a flag the
    # user never typed, set by engines.replicas.replica_plan_request from v5e-4's 4 chips over 2 replicas (deploy k8s
    # is given --replicas 2: without it, it takes the first pod count whose pod fits, 4 here, since be3d4c2a)
    line = one_error_line(run, *command, *(["--out", str(tmp_path / "k")] if command[0] == "deploy" else []))
    assert line.startswith("tensor_parallel_size 2 (vllm-tpu): num_attention_heads 9 is not divisible by it")
    assert line.endswith(
        f"; tensor_parallel_size 2 is each replica's share of v5e-4's 4 chips over --replicas 2: give a --replicas "
        f"that leaves each a share the model divides, or {given}"
    )


def test_simulate_names_the_router_policy_given_twice(run, tmp_path: Path):
    # was '--router-policies: a policy is named twice', naming none of them
    code, plan_json, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(plan_json, encoding="utf-8")
    line = one_error_line(run, "simulate", "--plan", str(tmp_path / "plan.json"), "--workload", "agent",
                          "--replicas", "2", "--router-policies", "random,round_robin,random")  # fmt: skip
    assert line == "--router-policies: random is named twice; name each policy once"


def test_advise_refuses_a_router_policy_without_agent_sessions(run):
    # was exit 0 with the policy dropped: advise routes only agent sessions (workload turns=N) by it; a grid's
    # prompts are unique, so every policy spreads them alike (sim.predict.simulate_cell), as simulate refuses
    # --router-policies without --workload agent
    line = one_error_line(run, "advise", "SmolLM2-135M-Instruct", "--chips", "l4", "--router-policy", "random")
    assert line == "--router-policy routes agent sessions: give --workload with turns=N too"
    code, out, err = run("advise", "SmolLM2-135M-Instruct", "--chips", "l4", "--router-policy", "random",
                         "--workload", "ctx=128,clients=2,turns=2", "--reps", "1")  # fmt: skip
    assert code == 0 and "(random over replicas)" in out, err
    code, _, err = run("advise", "SmolLM2-135M-Instruct", "--chips", "l4", "--router-policy", "cache_aware",
                       "--reps", "1")  # fmt: skip
    assert code == 0, err  # the default, as an MCP client sends every field: not a policy given for nothing


def test_simulate_too_much_agent_work_names_the_agent_flags_to_lower(run, tmp_path: Path):
    # was '... give fewer --reps, --contexts, --clients, --output-tokens or --requests-per-client': the last is
    # refused with --workload agent (its sessions set the requests per stream: turns x sessions per client)
    code, plan_json, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(plan_json, encoding="utf-8")
    line = one_error_line(run, "simulate", "--plan", str(tmp_path / "plan.json"), "--workload", "agent",
                          "--replicas", "2", "--sessions-per-client", "10000", "--reps", "1")  # fmt: skip
    assert line.endswith(
        "give fewer --reps, --contexts, --clients, --output-tokens, --turns or --sessions-per-client"
    ), line


def test_advise_too_much_agent_work_names_turns(run):
    # was '... or fewer clients or output_tokens in --workload' with turns=1000 given: each session's turns are
    # its requests, so turns is what lowers the work the most here
    line = one_error_line(run, "advise", "SmolLM2-135M-Instruct", "--chips", "l4", "--workload",
                          "ctx=1024,clients=4096,turns=1000", "--reps", "1")  # fmt: skip
    assert line.endswith("give fewer --chips or --reps, or fewer clients, output_tokens or turns in --workload"), line


def test_an_engine_version_written_as_a_tag_is_the_release(run):
    # was planned as 'vllm-gpu v0.19.0' with engine_version 'v0.19.0' in the Plan, so a stored calibration or boot
    # of 0.19.0 (planner.calibration.deployment_key: the version's text) was another deployment's
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--engine-version", "v0.19.0", "--json")
    assert code == 0, err
    assert json.loads(out)["engine_version"] == "0.19.0"


def test_simulate_in_a_working_folder_that_is_gone_names_it_and_out(run, tmp_path: Path, monkeypatch):
    # was exit 1, 'error: runs: No such file or directory': simulate (bench, demo) without --out makes runs/<id>/ in
    # the working folder, here removed after the shell entered it; neither the folder nor --out was named
    code, plan_json, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(plan_json, encoding="utf-8")
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    line = one_error_line(run, "simulate", "--plan", str(tmp_path / "plan.json"), "--reps", "1")
    assert (
        line.startswith("cannot make the run directory runs/") and "in a working folder that no longer exists" in line
    )
    assert line.endswith("(No such file or directory); choose another with --out, or run from a folder that can be "
                         "written"), line  # fmt: skip
