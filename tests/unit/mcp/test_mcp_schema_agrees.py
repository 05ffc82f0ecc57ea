"""What a tool's published input schema says is what the tool does (the brk session, 2026-12-05): a bound a JSON
Schema validator reads (utilization's (0, 1], vLLM's own), null where the schema takes none, a hint that names the
tool's own arguments (bench's resume), and no folder named after a secret."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from mcp import Client

from onechip.mcp.server import build_server

E2B = {"model": "google/gemma-4-E2B-it", "chip": "v5e-1"}
# an HF user access token's shape, hf_ and 34 letters and digits (errors.HF_TOKEN_SHAPE); not a real token
TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"


def session(*pairs: tuple[str, dict]) -> tuple[dict, list]:
    """The tools' input schemas by name, and each (tool, arguments) called in order on one server session."""

    async def go():
        async with Client(build_server()) as client:
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            return schemas, [await client.call_tool(name, args) for name, args in pairs]

    return anyio.run(go)


def line(result) -> str:
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text, text
    return text


def test_utilization_bound_is_in_the_schema_and_enforced() -> None:
    # vLLM's bound: gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1) (vllm/config/cache.py, 0.19.0);
    # it was in the description only, so a schema validator passed 0 and 1.5
    schemas, (zero, over, one) = session(
        ("plan", {**E2B, "utilization": 0}), ("plan", {**E2B, "utilization": 1.5}), ("plan", {**E2B, "utilization": 1})
    )
    (number,) = [s for s in schemas["plan"]["properties"]["utilization"]["anyOf"] if s.get("type") == "number"]
    assert number["exclusiveMinimum"] == 0 and number["maximum"] == 1
    assert line(zero) == "Invalid value for 'utilization': Input should be greater than 0 (got 0)"
    assert line(over) == "Invalid value for 'utilization': Input should be less than or equal to 1 (got 1.5)"
    # accepted: the plan is made (on a TPU it does not fit at 1, a tool error keeping the plan: the CLI's exit 10)
    assert one.structured_content is not None and one.structured_content["utilization"] == 1.0


def null_admitted(schema: dict) -> bool:
    return schema.get("type") == "null" or any(s.get("type") == "null" for s in schema.get("anyOf", []))


def test_null_for_a_required_field_is_refused() -> None:
    schemas, (result,) = session(("plan", {"chip": "v5e-1", "model": None}))  # was 'Field required (got {...})'
    assert not null_admitted(schemas["plan"]["properties"]["model"])
    assert line(result) == "Invalid value for 'model': Input should be a valid string (got null)"


@pytest.mark.parametrize(
    ("tool", "args", "name", "default"),
    [
        ("plan", E2B, "tensor_parallel_size", 1),  # PlanRequest's default (schemas.requests)
        ("plan", E2B, "kv_cache_dtype", "auto"),
        ("bench", {"base_url": "http://127.0.0.1:9"}, "reps", 2),  # BenchConfig's
    ],
)
def test_null_for_an_optional_field_is_its_published_default(tool, args, name, default) -> None:
    # an optional field whose type takes no null is published nullable, default null, its own default in its
    # description (mcp.bridge.signature_of: a client filling in every default sends what leaving them out does); null
    # was refused as no value of its type, and before that taken silently as the default the schema did not say
    schemas, (result,) = session((tool, {**args, name: None}))
    published = schemas[tool]["properties"][name]
    assert null_admitted(published) and published["default"] is None
    assert published["description"].endswith(f"Default (left out or null): {json.dumps(default)}.")
    if tool == "plan":
        assert not result.is_error, line(result)
        assert result.structured_content["request"][name] == default
    else:  # judged as the bare call: on to the unreachable URL (port 9: nothing listens)
        assert line(result).startswith("cannot reach http://127.0.0.1:9/v1/models"), line(result)


def test_null_where_the_schema_admits_it_is_that_value() -> None:
    # enable_prefix_caching is nullable, None being 'the engine version's default' (its description); null read as
    # 'not given' was its default True
    schemas, (result,) = session(("plan", {**E2B, "enable_prefix_caching": None, "utilization": None}))
    assert null_admitted(schemas["plan"]["properties"]["enable_prefix_caching"])
    assert not result.is_error, line(result)
    assert result.structured_content["request"]["enable_prefix_caching"] is None


def test_the_resume_hint_names_the_tool_and_its_arguments(tmp_path, monkeypatch) -> None:
    # bench's runner says 'resume it (--resume DIR)'; over MCP it read 'resume it (resume DIR)', no call a client
    # can make (resume is a boolean, the directory is out_dir)
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "sec1"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    _, (result,) = session(("bench", {"base_url": "http://127.0.0.1:9", "out_dir": "sec1"}))
    assert line(result) == (
        "sec1 already holds a bench run; resume it (call bench again with resume: true, out_dir: sec1) "
        "or choose another out_dir"
    )


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("simulate", {"plan": "plan.json"}),
        ("bench", {"base_url": "http://127.0.0.1:9"}),
        ("check", {"base_url": "http://127.0.0.1:9"}),
    ],
)
@pytest.mark.parametrize("secret", [TOKEN, "AKIA" + "ABCDEFGHIJKLMNOP"])  # an AWS access key id's shape
def test_a_secret_shaped_out_dir_is_refused_without_echoing_it(tmp_path, monkeypatch, tool, args, secret) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.json").write_text(json.dumps({}))
    _, (result,) = session((tool, {**args, "out_dir": f"runs/{secret}"}))
    assert result.is_error
    assert line(result) == "out_dir: 'runs/***' holds a secret (a token or key); choose a path without one"
    assert not any(secret in name for _, dirs, files in os.walk(tmp_path) for name in dirs + files)
    assert not Path("runs").exists()
