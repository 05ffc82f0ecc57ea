"""The router's metrics port claim (port_claims) is taken before its launch and handed to its pid after it, so another
`up` that claimed that port meanwhile makes this router fail at once, in one line naming the port. Before, the hand-over
after the launch was skipped without a word when another live `up` held the port (RouterEngine.start suppressed the
PortInUseError): both routers then bound one metrics port, and the second's exporter panicked ('Address already in
use', vllm-router 0.1.17), or `up --replicas` revived / `--router-policy` restarted a router on another's port."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from onechip.engines import port_claims, router
from onechip.engines.local import free_port
from onechip.errors import PortInUseError
from onechip.procs import start_ticks

pytestmark = pytest.mark.skipif(
    shutil.which(router.router_program()) is None and not Path(router.router_program()).is_file(),
    reason="vllm-router is not installed",
)


def test_a_router_whose_metrics_port_another_up_claimed_fails_naming_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(port_claims, "claims_dir", lambda: tmp_path / "claims")  # this test's, not the machine's
    metrics = free_port()
    command = router.router_command(["http://127.0.0.1:9"], "round_robin", free_port(), metrics)
    engine = router.RouterEngine(command, tmp_path / "router.log", "m")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        port_claims.claim("127.0.0.1", metrics, other.pid, start_ticks(other.pid))  # the other `up`, the same instant
        with pytest.raises(PortInUseError) as refused:
            engine.start()
        held = (tmp_path / "claims" / f"127.0.0.1:{metrics}").read_text().split()[0]
    finally:
        engine.stop()
        other.kill()
        other.wait()
    said = str(refused.value)
    assert "\n" not in said and f"metrics port {metrics} on 127.0.0.1" in said and f"pid {other.pid}" in said, said
    assert engine.pid is None  # no router was launched
    assert held == str(other.pid)  # the other's claim stands
