"""The engine's own log on disk holds no secret, whatever the engine prints: vLLM before 0.34.0 logs every CLI
argument ('non-default args'), and a launcher's `env` or a crash dumps the environment, where the Hugging Face token
(given by `up` as HF_TOKEN, never in argv) and VLLM_API_KEY are. `logs` redacts on read; the file must not need it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from onechip.engines.local import LocalVllmEngine
from onechip.errors import EngineBootError

FAKE = Path(__file__).parents[2] / "fakes" / "vllm_server.py"
TOKEN = "tok-noshape-0123456789"  # a Hugging Face token of no known shape: known only as HF_TOKEN's value
KEY = "key-noshape-9876543210"  # vLLM's key ($VLLM_API_KEY, vllm/envs.py), inherited from onechip's environment
CLOUD = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example secret access key (IAM user guide)


class SecretPrinter(LocalVllmEngine):
    """The fake vLLM (tests/fakes/vllm_server.py) logging its argv and whole environment, and HF_TOKEN alone."""

    def __init__(self, log_path: Path, boot: str = "ok"):
        super().__init__(model_path=Path("."), served_name="fake", log_path=log_path, stop_grace_s=5.0)
        self.secret_env = {"HF_TOKEN": TOKEN}  # as LocalServeEngine hands the token read from --hf-token-file
        self.boot = boot

    def command(self) -> list[str]:
        return [sys.executable, str(FAKE), "--port", str(self.port), "--fake-print-secrets", "--fake-boot", self.boot]


def _cmdlines(pid: int) -> list[bytes]:
    """The argv (as `ps` shows it) of `pid` and of every process of its group."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pid:
                    out.append((entry / "cmdline").read_bytes())
            except (OSError, ProcessLookupError):
                continue
    return out


@pytest.fixture
def secrets_exported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CLOUD)


@pytest.mark.usefixtures("secrets_exported")
def test_the_log_on_disk_holds_no_secret_the_engine_prints(tmp_path: Path) -> None:
    engine = SecretPrinter(tmp_path / "engine.log")
    engine.start()
    try:
        engine.wait_ready(timeout_s=60)
        assert engine.pid is not None
        shown = b"\0".join(_cmdlines(engine.pid))
        assert shown and not any(s.encode() in shown for s in (TOKEN, KEY, CLOUD))  # nor in ps
    finally:
        engine.stop()
    text = (tmp_path / "engine.log").read_text()
    assert "non-default args" in text and "environ(" in text  # it printed them
    assert not [s for s in (TOKEN, KEY, CLOUD) if s in text]
    assert "'HF_TOKEN': '***'" in text  # the dump is kept, its values redacted


@pytest.mark.usefixtures("secrets_exported")
def test_a_boot_error_tail_and_the_log_hold_the_engine_s_last_line_and_no_secret(tmp_path: Path) -> None:
    # the engine's last line before it died ('ValueError: boom during boot', the fake's --fake-boot die) is the reason
    # `up` gives; it reaches the log through the writer, which `up` waits for before reading the tail
    engine = SecretPrinter(tmp_path / "engine.log", boot="die")
    engine.start()
    with pytest.raises(EngineBootError, match="boom during boot"):
        engine.wait_ready(timeout_s=60)
    engine.stop()
    text = (tmp_path / "engine.log").read_text()
    assert "ValueError: boom during boot" in text and TOKEN not in text and KEY not in text
