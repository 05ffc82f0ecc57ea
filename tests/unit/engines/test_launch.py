"""Serve commands built from a Plan: the seed article's v5e docker command reproduced flag for flag, a GPU
host, --set overrides, image pins and the token kept out of every command line."""

from __future__ import annotations

import shlex

import pytest

from factories import embedded_plan as cpu_plan
from onechip import planner
from onechip.engines import docker, launch, remote
from onechip.errors import ConfigError

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

# A GPU host from a plan (vllm-gpu rules: utilization default 0.9, no TPU bucket/MM-chunking flags).
GOLDEN_H100 = (
    "vllm serve google/gemma-4-E2B-it --dtype bfloat16 --kv-cache-dtype auto --max-model-len 32768 "
    "--tensor-parallel-size 1 --gpu-memory-utilization 0.9 --enable-prefix-caching "
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


def _seed_spec(plan):
    return launch.build_launch(
        plan,
        "vllm-docker",
        host="user@203.0.113.7",
        container="vllm-gemma4",
        image="vllm/vllm-tpu:nightly",
        token_source="--hf-token-file t",
        token_path=remote.TOKEN_PATH,
    )


def test_v5e_docker_golden(v5e_plan):
    assert launch.shell_join(_seed_spec(v5e_plan).docker_argv) == GOLDEN_V5E


def test_v5e_docker_is_the_seed_command_but_for_the_token(v5e_plan):
    seed = shlex.split(SEED_DOCKER_RUN.replace("\\\n", " "))
    ours = _seed_spec(v5e_plan).docker_argv
    # the only differences: the token goes in with --env-file (not `-e HF_TOKEN="$(cat ...)"`, which puts
    # it into docker's argv), and the engine binds 127.0.0.1:8000 for the SSH tunnel
    i = seed.index("HF_TOKEN=$(cat ~/.hf_token)")
    expected = seed[: i - 1] + ["--env-file", "~/.onechip/hf_token.env"] + seed[i + 1 :]
    assert ours == expected + ["--host", "127.0.0.1", "--port", "8000"]


def test_every_flag_has_a_reason(v5e_plan):
    spec = _seed_spec(v5e_plan)
    assert all(flag.reason for flag in spec.flags)
    assert all(group.reason for group in spec.docker)
    origins = {flag.flag: flag.origin for flag in spec.flags}
    assert origins["--max-num-batched-tokens"] == "plan"  # planner: 2,496-token MM floor -> 4096 bucket
    assert origins["--tool-call-parser"] == "family"


def test_gpu_host_golden(h100_plan):
    spec = launch.build_launch(h100_plan, "vllm")
    assert launch.shell_join(spec.serve_argv) == GOLDEN_H100


def test_gpu_docker_uses_the_image_entrypoint(h100_plan):
    spec = launch.build_launch(h100_plan, "vllm-docker", image="vllm/vllm-openai@sha256:" + "a" * 64)
    argv = spec.docker_argv
    assert argv[:5] == ["docker", "run", "-d", "--name", "onechip-vllm"]
    assert "--gpus" in argv and "~/.cache/vllm:/root/.cache/vllm" in argv
    image_at = argv.index("vllm/vllm-openai@sha256:" + "a" * 64)
    assert argv[image_at - 2 : image_at] == ["--entrypoint", "vllm"]
    assert argv[image_at + 1 : image_at + 3] == ["serve", "google/gemma-4-E2B-it"]
    assert not any("not pinned" in w for w in spec.warnings)


def test_sets_override_add_drop_and_env(v5e_plan):
    spec = launch.build_launch(
        v5e_plan,
        "vllm",
        sets=[
            "max-num-seqs=64",
            "enable-prefix-caching=",
            "--reasoning-parser=",
            "VLLM_TPU_BUCKET_PADDING_GAP=128",
            "gpu-memory-utilization=0.95",
        ],
    )
    flags = {f.flag: f for f in spec.flags}
    assert flags["--max-num-seqs"].value == "64" and flags["--max-num-seqs"].origin == "set"
    assert "--enable-prefix-caching" not in flags and "--reasoning-parser" not in flags
    assert spec.env["VLLM_TPU_BUCKET_PADDING_GAP"] == "128"
    assert any("--gpu-memory-utilization overrides" in w for w in spec.warnings)
    argv = spec.serve_argv
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.95"
    assert argv[-4:] == ["--host", "127.0.0.1", "--port", "8000"]


@pytest.mark.parametrize(
    "item", ["hf-token=hf_abcdefghijkl123", "HF_TOKEN=hf_abcdefghijkl123", "api-key=hf_abcdefghijkl123"]
)
def test_set_refuses_tokens_without_echoing_them(item):
    with pytest.raises(ConfigError) as info:
        launch.parse_sets([item])
    assert "hf_abcdefghijkl123" not in str(info.value)


def test_set_malformed():
    with pytest.raises(ConfigError):
        launch.parse_sets(["max model len=3"])
    with pytest.raises(ConfigError):
        launch.parse_sets(["VLLM_X"])


@pytest.mark.parametrize("host", ["-oProxyCommand=touch /tmp/pwned", "-p2222", "", " "])
def test_host_that_ssh_would_read_as_an_option_is_refused(v5e_plan, host):
    # Before: '--host -oProxyCommand=CMD' went into `ssh ... -L ... -oProxyCommand=CMD`, a local command.
    with pytest.raises(ConfigError, match="--host"):
        launch.build_launch(v5e_plan, "vllm", host=host)


def test_image_pins():
    assert docker.image_warnings("vllm/vllm-tpu@sha256:" + "0" * 64) == []
    (warning,) = docker.image_warnings("vllm/vllm-tpu:nightly")
    assert "nightly" in warning and "sha256" in warning
    assert docker.image_warnings("vllm/vllm-tpu")[0].startswith(
        "image vllm/vllm-tpu is not pinned: the tag 'latest'"
    )


def test_cpu_plan_serves_embedded_model_eagerly(tmp_path):
    plan = cpu_plan()
    spec = launch.build_launch(plan, "vllm", launcher=["python3", "-m", "vllm.entrypoints.openai.api_server"])
    argv = spec.serve_argv
    assert argv[:5] == [
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        plan.model,  # the checkpoint directory (factories.embedded_plan: named smollm2-135m-instruct)
    ]
    assert "--enforce-eager" in argv and argv[argv.index("--tool-call-parser") + 1] == "hermes"
    assert argv[argv.index("--served-model-name") + 1] == "SmolLM2-135M-Instruct"
    assert spec.env == {"VLLM_CPU_KVCACHE_SPACE": "2"}  # DESIGN.md: 2 GiB -> 46,592 tokens


def test_secret_never_prints(tmp_path):
    token = launch.Secret("hf_FAKEabcdefghijklmnop")
    assert "hf_FAKE" not in f"{token} {token!r} {[token]}"
    path = tmp_path / "tok"
    path.write_text("hf_FAKEabcdefghijklmnop\n")
    path.chmod(0o644)
    read, warnings = launch.read_hf_token(path)
    assert read is not None and read.reveal() == "hf_FAKEabcdefghijklmnop"
    assert warnings and "chmod 600" in warnings[0]
    with pytest.raises(ConfigError) as info:
        launch.read_hf_token(tmp_path / "missing")
    assert "missing" in str(info.value)
