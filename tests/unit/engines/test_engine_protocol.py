"""engines/base.py: every engine class implements the whole Engine protocol, so api.py drives them all the
same way (no `Any`, no isinstance on engine classes), and each says how `status`/`down` find it again."""

from __future__ import annotations

import sys
from pathlib import Path

from factories import embedded_plan as cpu_plan
from onechip.engines import EmbeddedEngine, launch, remote
from onechip.engines.base import Engine
from onechip.engines.launch import LocalServeEngine
from onechip.engines.local import LocalVllmEngine
from onechip.schemas import ServeTarget
from onechip.vllm import flags


def _engines(tmp_path: Path) -> list[Engine]:
    log = tmp_path / "engine.log"
    local = ServeTarget(kind="vllm", port=8123, launcher=[sys.executable, "-m", "vllm"])
    spec = launch.LaunchSpec(command=flags.serve_command(cpu_plan(), local))
    in_docker = ServeTarget(kind="vllm-docker", port=8124, image="vllm/vllm-openai:test")
    docker = launch.LaunchSpec(command=flags.serve_command(cpu_plan(), in_docker))
    return [
        EmbeddedEngine(log, port=8120, model_path=tmp_path),
        LocalVllmEngine(tmp_path, "served", log, port=8121),
        LocalServeEngine(spec, log, None),
        remote.HostEngine(docker, remote.Shell(None), log),
    ]


def test_every_engine_is_an_engine_and_knows_its_state(tmp_path: Path) -> None:
    engines = _engines(tmp_path)
    for engine in engines:
        assert isinstance(engine, Engine), type(engine).__name__
        state = engine.state()  # what `up` saves for status/logs/down
        assert (state.engine, state.mode, state.model) == (engine.kind, engine.mode, engine.served_name)
        assert state.base_url == engine.base_url and state.log_path == str(engine.log_path)
    assert [e.kind for e in engines] == ["embedded-vllm-cpu", "vllm", "vllm", "vllm-docker"]
    assert [e.mode for e in engines] == ["process", "process", "process", "docker"]
