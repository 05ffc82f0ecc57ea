"""A report never carries a secret its run's files hold: text onechip did not write (a server's error, a model's
answer) or files from an onechip that did not redact them."""

from __future__ import annotations

from pathlib import Path

import pytest
from seed_run_files import seed_files, write_run

from onechip.report import write_report
from onechip.report.compare import render_compare_files
from onechip.report.rundir import read_run

TOKEN = "hf_FAKEtoken0123456789abcdefghijklmnop"  # shapes only (errors.HF_TOKEN_SHAPE), not a real token
KEY = "sk-FAKEsecretABCDEFGHIJ0123456789"
ENV_TOKEN = "plainEnvSecretValue42"  # HF_TOKEN's value in this test: known by its source, of no shape


def _leaky_run(path: Path) -> Path:
    files = seed_files()
    files["boot.json"]["command"] = ["vllm", "serve", "m", "--api-key", KEY]
    files["boot.json"]["base_url"] = "http://me:s3cretpw99@127.0.0.1:8000"
    files["checks.json"]["results"][1]["probes"][1]["note"] = f"the model echoed {TOKEN}"
    files["summary.json"]["cells"][-1]["reason"] = f"HTTP 401: bad token {ENV_TOKEN}"
    files["run.json"]["command"] = f"demo --hf-token {TOKEN}"
    return write_run(path, files)


@pytest.mark.parametrize("fmt", ["md", "html", "json", "serving-report"])
def test_every_report_format_redacts_what_the_run_files_hold(tmp_path: Path, monkeypatch, fmt: str) -> None:
    # was written as read: report.md/.html printed the token, the key, the URL's password and HF_TOKEN's value
    monkeypatch.setenv("HF_TOKEN", ENV_TOKEN)
    (written,) = write_report(_leaky_run(tmp_path / "run"), fmt)
    text = written.read_text(encoding="utf-8")
    assert not [s for s in (TOKEN, KEY, "s3cretpw99", ENV_TOKEN) if s in text]
    assert "***" in text


def test_a_comparison_redacts_too(tmp_path: Path, monkeypatch) -> None:
    # the Setup table prints each run's model and engine as recorded (a boot.json from an onechip that did not redact)
    monkeypatch.setenv("HF_TOKEN", ENV_TOKEN)
    files = seed_files()
    files["boot.json"]["engine_version"] = f"0.26.1rc1 {ENV_TOKEN}"
    text = render_compare_files(read_run(write_run(tmp_path / "a", files)), read_run(_leaky_run(tmp_path / "b")))
    assert ENV_TOKEN not in text and "0.26.1rc1 ***" in text
