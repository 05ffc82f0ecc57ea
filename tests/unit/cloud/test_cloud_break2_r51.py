"""Break pass r51 on the cloud layer's credentials: GOOGLE_APPLICATION_CREDENTIALS naming what is no file."""

from __future__ import annotations

import os
import threading

import pytest

from factories import one_error_line
from onechip.cloud import auth
from onechip.errors import CloudError

P = "proj-1"


@pytest.fixture
def adc(monkeypatch, tmp_path):
    """Application Default Credentials read for real (no endpoint override), in a fresh home."""
    monkeypatch.delenv("ONECHIP_TPU_API_ENDPOINT", raising=False)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_credentials_that_are_a_directory_are_one_auth_line_naming_the_variable(adc, monkeypatch, run):
    # was exit 1 'error: ***: Is a directory' (google-auth's IsADirectoryError, the path redacted as the value of a
    # secret-named variable): neither the variable nor the remedy was named; now both, and the path (not a secret)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    line = one_error_line(run, "cloud", "down", "--name", "x", "--zone", "us-west4-a", "--project", P, "--yes", code=7)
    assert line.startswith(f"GOOGLE_APPLICATION_CREDENTIALS={adc} names a directory: fix or unset it"), line


def test_credentials_that_are_a_fifo_are_refused_not_waited_on(adc, monkeypatch):
    # google-auth's open() of a FIFO waited for a writer without end: `onechip cloud ...` hung
    fifo = adc / "adc.json"
    os.mkfifo(fifo)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fifo))
    said: list[BaseException] = []

    def read() -> None:
        try:
            auth.Credentials(use_adc=True)
        except CloudError as exc:
            said.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(20)
    if thread.is_alive():  # free the hung reader before failing
        with open(fifo, "w"):
            pass
        pytest.fail("reading the credentials waited on a FIFO")
    assert len(said) == 1 and getattr(said[0], "reason", None) == "auth"
    assert str(said[0]).startswith(f"GOOGLE_APPLICATION_CREDENTIALS={fifo} names a FIFO: fix or unset it")
