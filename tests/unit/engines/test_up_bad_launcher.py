"""`up --launcher PROGRAM` with a program this machine does not have is bad input, refused before anything starts."""

from __future__ import annotations

from factories import embedded_plan, one_error_line
from onechip.engines.local import free_port


def test_up_with_a_launcher_not_on_path_is_refused_naming_launcher(tmp_path, monkeypatch, run):
    """Before: the launch itself failed, 'error: no-such-binary: No such file or directory', exit 1, naming no
    option, after the last engine's log had been moved aside."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    plan = tmp_path / "plan.json"
    plan.write_text(embedded_plan().model_dump_json())
    message = one_error_line(run, "up", "--engine", "vllm", "--plan", str(plan), "--launcher", "no-such-binary --x",
                             "--port", str(free_port()), "--force", "--timeout-s", "20")  # fmt: skip
    assert message == "--launcher no-such-binary: no such program on PATH (or not an executable file)", message
    assert not (tmp_path / "home" / "engine").exists()  # nothing started, nothing written
