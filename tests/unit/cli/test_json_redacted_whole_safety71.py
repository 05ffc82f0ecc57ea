"""Every --json command prints its document redacted whole (helper safety71, 2026-12-07): the CLI printed
model_dump_json as it came, so a secret in a field its source did not redact (a server's message, a note, a path)
reached stdout, where the MCP server redacted the whole JSON of the same result (mcp.bridge). One helper now,
errors.redacted_json, for both (cli.render.print_json)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from onechip import api

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # GitHub's shape, made up (errors._GH_TOKEN)


class _Planted(BaseModel):
    """A result whose field no source redacted: the API's stand-in (the CLI prints whatever model api returns)."""

    note: str
    api_key: str = "opaque-value-of-no-shape"  # hidden by its key's name alone (errors._QUOTED_VALUE)


def _clean(out: str) -> None:
    assert TOKEN not in out and "A1b2C3d4" not in out and "opaque-value" not in out  # not printed: out is the secret


def test_a_one_result_json_is_redacted_whole(run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "cost", lambda request: _Planted(note=f"priced with token {TOKEN}"))
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "100", "--json")
    assert code == 0, err
    _clean(out)
    assert json.loads(out) == {"note": "priced with token ***", "api_key": "***"}


def test_a_list_json_is_redacted_whole(run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "cloud_zones", lambda request: [_Planted(note=f"seen by {TOKEN}")])
    code, out, err = run("cloud", "zones", "--chip", "v5e-1", "--json")
    assert code == 0, err
    _clean(out)
    assert json.loads(out) == [{"note": "seen by ***", "api_key": "***"}]
