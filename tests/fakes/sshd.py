"""A throwaway sshd on 127.0.0.1 for the tests that drive a host over plain SSH (`up --host`, the cloud demo).

    with local_sshd(work_dir, extra_config) as (options, client_key): ...

It accepts root with a fresh ed25519 key, forwards TCP (the engine tunnel), and takes `extra_config` lines
(e.g. `SetEnv PATH=...` to put a fake `docker` first). Skips the test when openssh is not installed, when not
root (sshd's privilege separation), or when sshd does not accept a login within 10 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from onechip.engines.local import free_port

SSHD = "/usr/sbin/sshd"


def _require() -> None:
    if not Path(SSHD).exists() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.skip("openssh-server/openssh-client not installed (apt-get install -y openssh-server)")
    if os.geteuid() != 0:
        pytest.skip("sshd needs root here (privilege separation directory, login as root@127.0.0.1)")


def _config(work: Path, port: int, extra_config: str) -> Path:
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / key)], check=True)
    shutil.copy(work / "client_key.pub", work / "authorized_keys")
    config = work / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {work / 'host_key'}\n"
        f"AuthorizedKeysFile {work / 'authorized_keys'}\nPidFile {work / 'sshd.pid'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "UsePAM no\nStrictModes no\nAllowTcpForwarding yes\n" + extra_config
    )
    return config


@contextmanager
def local_sshd(work: Path, extra_config: str = "") -> Iterator[tuple[list[str], Path]]:
    """Run sshd from `work` (keys, config and sshd.log go there); yield (ssh -o options, client key path)."""
    _require()
    port = free_port()
    config = _config(work, port, extra_config)
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    options = [f"Port={port}", "IdentitiesOnly=yes", "UserKnownHostsFile=/dev/null", "StrictHostKeyChecking=no",
               "LogLevel=ERROR"]  # fmt: skip
    key = work / "client_key"
    probe = ["ssh", "-o", "BatchMode=yes", "-i", str(key), *sum((["-o", o] for o in options), []), "root@127.0.0.1"]
    with open(work / "sshd.log", "wb") as log:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=log)
        try:
            for _ in range(50):
                if subprocess.run([*probe, "true"], capture_output=True).returncode == 0:
                    break
                if proc.poll() is not None:
                    pytest.skip(f"sshd could not start: {(work / 'sshd.log').read_text()[-300:]}")
                time.sleep(0.2)
            else:
                pytest.skip("sshd did not accept a login within 10 s")
            yield options, key
        finally:
            proc.terminate()
            proc.wait(10)
