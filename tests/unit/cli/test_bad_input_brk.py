"""The brk session (2026-12-05), a new user trying to break onechip: one regression test per finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")

# an HF user access token's shape, hf_ and 34 letters and digits (errors.HF_TOKEN_SHAPE); not a real token
TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"


def test_bench_out_holding_a_token_is_refused_and_makes_no_folder(run, tmp_path: Path) -> None:
    # `bench URL --out runs/<token>` made a folder named after the token (the URL was never reached)
    out = tmp_path / "runs" / TOKEN
    said = one_error_line(run, "bench", "http://127.0.0.1:9", "--out", str(out))
    assert said == f"--out: '{tmp_path}/runs/***' holds a secret (a token or key); choose a path without one"
    assert not (tmp_path / "runs").exists()
