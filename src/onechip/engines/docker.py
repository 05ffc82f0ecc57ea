"""The `docker run` line for vLLM in a container, as the seed article runs it on a TPU VM, and image pins.

Seed command (article-en-single-tpu-agent-backend, "This is the configuration the rest of the article
defends"):
    sudo docker run -d --name vllm-gemma4 --privileged --net=host \\
      -v /dev/shm:/dev/shm --shm-size 10gb \\
      -v ~/.cache/vllm:/root/.cache/vllm \\
      -e HF_HOME=/dev/shm -e HF_TOKEN="$(cat ~/.hf_token)" \\
      vllm/vllm-tpu:nightly \\
      vllm serve google/gemma-4-E2B-it ...
onechip's line is that one with one change: the token goes in with `--env-file` (a 0600 file holding
HF_TOKEN=...), because `-e HF_TOKEN="$(cat ...)"` expands into docker's own argv, where `ps` shows it.
"""

from __future__ import annotations

import re

COMPILE_CACHE = "~/.cache/vllm:/root/.cache/vllm"
DEFAULT_CONTAINER = "onechip-vllm"
# Defaults when --image is not given; both are moving tags and draw the pin warning.
DEFAULT_IMAGES = {
    "vllm-tpu": "vllm/vllm-tpu:nightly",  # the seed article's image
    "vllm-gpu": "vllm/vllm-openai:latest",  # vLLM docs, 'Using Docker'
}
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_warnings(image: str) -> list[str]:
    """Warnings for an image reference that is not pinned by manifest digest."""
    if _DIGEST.search(image):
        return []
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else "latest"
    return [
        f"image {image} is not pinned: the tag '{tag}' can move under you (a moving nightly tag broke "
        "builds in the seed articles); pin it as IMAGE@sha256:<manifest digest> from `docker buildx "
        "imagetools inspect` or the registry - not the config-blob ID `docker images` shows, which "
        "`docker pull` rejects ('unexpected media type')"
    ]


def docker_run_argv(
    *,
    engine: str,
    image: str,
    serve: list[str],
    name: str = DEFAULT_CONTAINER,
    env: dict[str, str] | None = None,
    env_file: str | None = None,
    sudo: bool = False,
) -> list[tuple[list[str], str]]:
    """`docker run` as (words, reason) groups; flatten the words for the argv.

    engine 'vllm-tpu': the seed's --privileged (TPU device access), HF_HOME on /dev/shm.
    engine 'vllm-gpu': --gpus all --ipc=host and the Hugging Face cache mounted from the host; the
    vllm/vllm-openai image's entrypoint already runs the server, so `--entrypoint vllm` + `serve ...`.
    `env_file` is a path on the docker host (never the token itself).
    """
    groups: list[tuple[list[str], str]] = []
    if sudo:
        groups.append((["sudo"], "docker needs root on the host (seed: TPU VM default user)"))
    groups.append((["docker", "run", "-d", "--name", name], "detached, named so logs/down find it"))
    if engine == "vllm-gpu":
        groups.append(
            (
                ["--gpus", "all", "--ipc=host", "--net=host"],
                "GPU access; host IPC for PyTorch shared memory; host network so the port is the engine's",
            )
        )
        groups.append(
            (
                ["-v", "~/.cache/huggingface:/root/.cache/huggingface"],
                "weights downloaded once, kept across container restarts",
            )
        )
    else:
        groups.append((["--privileged", "--net=host"], "TPU device access; host network (seed)"))
        groups.append(
            (["-v", "/dev/shm:/dev/shm", "--shm-size", "10gb"], "shared memory for the engine (seed)")
        )
    groups.append(
        (
            ["-v", COMPILE_CACHE],
            "compile cache survives `docker rm`: the seed's most valuable "
            "flag, a TPU restart went from 857 s to 497 s",
        )
    )
    if engine != "vllm-gpu":
        groups.append(
            (["-e", "HF_HOME=/dev/shm"], "Hugging Face cache on a fast path (seed: 9.54 GiB in ~10 s)")
        )
    if env_file:
        groups.append((["--env-file", env_file], "HF_TOKEN from a 0600 file: never in docker's argv or `ps`"))
    for key, value in (env or {}).items():
        groups.append((["-e", f"{key}={value}"], "engine environment (plan or --set)"))
    groups.append(([image], "the image (pin it by digest)"))
    if engine == "vllm-gpu" and serve[:2] == ["vllm", "serve"]:
        groups.insert(-1, (["--entrypoint", "vllm"], "the vllm-openai image already starts the server"))
        serve = serve[1:]
    groups.append((serve, "the serve command"))
    return groups
