"""The new-user break pass cli55 (2026-12-05), one regression test per finding, each failing before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")


def test_deploy_out_naming_a_file_is_refused_as_such(run, tmp_path: Path):
    # `deploy k8s --out FILE` failed at the mkdir after planning, as the OS error 'error: FILE: File exists' (exit 1):
    # read as a refusal to overwrite, not as a --out that is not a directory; bench, simulate and demo say that (exit 2)
    out = tmp_path / "notes.txt"
    out.write_text("mine\n")
    line = one_error_line(run, "deploy", "k8s", "SmolLM2-135M-Instruct", "--chip", "l4", "--out", str(out))
    assert "--out" in line and f"{out} is a file, not a directory" in line, line
    assert out.read_text() == "mine\n"
