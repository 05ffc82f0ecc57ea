"""Shared by the CLI tests: run the console script's main() in-process."""

from __future__ import annotations

import signal

import pytest

from onechip.cli.main import main


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]):
    """Call the console script's main(argv); return (exit code, stdout, stderr)."""
    previous = signal.getsignal(signal.SIGTERM)

    def _run(*argv: str) -> tuple[int, str, str]:
        try:
            with pytest.raises(SystemExit) as info:
                main(list(argv))
        finally:
            signal.signal(signal.SIGTERM, previous)
        out, err = capsys.readouterr()
        return int(info.value.code or 0), out, err

    return _run
