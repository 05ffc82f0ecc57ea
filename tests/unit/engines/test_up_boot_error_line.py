"""`up` whose engine exits at once says the engine's own error line, not the noise written after it as it exited."""

from __future__ import annotations

from factories import embedded_plan, one_error_line
from onechip.engines.local import free_port

EXITS = """#!/bin/bash
echo "INFO 12-05 22:50:00 [api_server.py:100] vLLM API server version 0.11.0"
echo "ERROR 12-05 22:50:01 [cuda.py:70] CUDA driver initialization failed, you might not have a CUDA gpu." >&2
echo "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: resource_tracker: There appear to be 1 \
leaked shared_memory objects to clean up at shutdown" >&2
echo "  warnings.warn('resource_tracker: There appear to be %d '" >&2
exit 1
"""


def test_an_engine_that_exits_at_once_is_said_with_its_own_error_line(tmp_path, monkeypatch, run):
    """Before: the log's last line was taken: 'engine exited with code 1 during boot: warnings.warn('resource_tracker:
    There appear to be %d ' (full log: ...)', Python's exit-time warning in place of vLLM's error."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    plan, launcher = tmp_path / "plan.json", tmp_path / "vllm-exits"
    plan.write_text(embedded_plan().model_dump_json())
    launcher.write_text(EXITS)
    launcher.chmod(0o755)
    message = one_error_line(run, "up", "--engine", "vllm", "--plan", str(plan), "--launcher", str(launcher),
                             "--port", str(free_port()), "--force", "--timeout-s", "30", code=5)  # fmt: skip
    log = tmp_path / "home" / "engine" / "engine.log"
    assert message == (
        "engine exited with code 1 during boot: ERROR 12-05 22:50:01 [cuda.py:70] CUDA driver initialization failed, "
        f"you might not have a CUDA gpu. (full log: {log})"
    ), message
