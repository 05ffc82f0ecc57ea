"""An engine that dies during boot while a process it started still holds its output (vLLM's EngineCore, a
launcher's child): its last line, not ended, is the reason `up` gives, though its output has not ended."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.engines.local import LocalVllmEngine
from onechip.errors import EngineBootError


class DiesLeavingAChild(LocalVllmEngine):
    """A shell that starts a child holding its output (in its process group, as `stop` finds it), prints its last
    words without a newline, and exits 7."""

    def __init__(self, log_path: Path):
        super().__init__(model_path=Path("."), served_name="fake", log_path=log_path, stop_grace_s=5.0)

    def command(self) -> list[str]:
        return ["/bin/sh", "-c", "sleep 600 & printf 'RuntimeError: out of memory'; exit 7"]


def test_the_last_line_of_an_engine_that_died_is_its_reason_while_a_child_holds_its_output(tmp_path: Path) -> None:
    engine = DiesLeavingAChild(tmp_path / "engine.log")
    engine.start()
    try:
        with pytest.raises(EngineBootError, match="exited with code 7 during boot: RuntimeError: out of memory"):
            engine.wait_ready(timeout_s=60)
    finally:
        engine.stop()
    assert (tmp_path / "engine.log").read_text().endswith("RuntimeError: out of memory")
