"""engines/launch.py: the Hugging Face token as a Secret that never prints, and the LaunchSpec that carries a
ServeCommand to the process that runs it."""

from __future__ import annotations

import pytest

from factories import embedded_plan as cpu_plan
from onechip.engines import launch
from onechip.errors import ConfigError
from onechip.schemas import ServeTarget
from onechip.vllm import flags


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


def test_launch_spec_reads_its_serve_command(tmp_path):
    command = flags.serve_command(cpu_plan(), ServeTarget(kind="vllm", port=8123, launcher=["python3", "x.py"]))
    spec = launch.LaunchSpec(command=command, commands=[command.shell])
    assert (spec.engine, spec.command.engine_rules, spec.port, spec.base_port) == ("vllm", "vllm-cpu", 8123, 8123)
    assert spec.serve_argv == command.argv and spec.env == command.env and spec.docker_argv == []
    engine = launch.LocalServeEngine(spec, tmp_path / "engine.log")
    assert engine.command() == command.argv  # what runs is the command, word for word
