"""The MCP `up` tool refuses a plan file a newer onechip wrote (its schema_version) in one line, as `up --plan` does,
and the `plan` tool's plan names its version (helper twins65)."""

from __future__ import annotations

import json

from test_mcp_safety import calls

from onechip.schemas.common import SCHEMA_VERSION

PLAN = {"model": "google/gemma-4-E2B-it", "chip": "l4"}


def test_the_up_tool_refuses_a_plan_of_a_newer_schema(tmp_path) -> None:
    (planned,) = calls(("plan", PLAN))
    doc = planned.structured_content  # the Plan, as `onechip plan --json` writes it
    assert doc["schema_version"] == SCHEMA_VERSION  # schemas.common: what every stored result writes
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**doc, "schema_version": "2"}))
    (result,) = calls(("up", {"engine": "vllm", "plan": str(newer), "dry_run": True}))
    assert result.is_error
    # schemas.common.known_schema's words, after the file named by its argument (the CLI's '--plan', as_parameters)
    assert result.content[0].text == (
        f"plan {newer}: schema_version '2' is newer than the '{SCHEMA_VERSION}' this onechip reads; upgrade onechip "
        "to read it"
    )
