"""Each surface says its own names (helper cli59): a tool's published input schema names the tool's arguments where
the request model's description, shared with the CLI's --help, names the CLI's flags; and the `logs` page past the
log's end says the offset it was asked for."""

from __future__ import annotations

import anyio
from mcp import Client
from test_mcp_server import _fake_state, call

from onechip.mcp.server import build_server


def _schemas() -> dict[str, dict]:
    async def go():
        async with Client(build_server()) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    return anyio.run(go)


def _description(schema: dict, name: str) -> str:
    return schema["properties"][name]["description"]


def test_a_published_description_names_the_tools_arguments_not_the_clis_flags() -> None:
    # BenchConfig's requests_per_client says '--rate' on the CLI (its flag for rate_per_s) and 'unless --duration-s';
    # the bench tool takes rate_per_s and duration_s (schemas.inputs.as_parameters, as the tool's errors say them)
    schemas = _schemas()
    bench = _description(schemas["bench"], "requests_per_client")
    assert bench.startswith("Measured requests each stream sends per rep (unless duration_s). With rate_per_s: ")
    assert "--rate" not in bench and "--duration-s" not in bench
    # a flag named as vLLM's own (the engine's option, onechip's flag spelt alike) stays vLLM's
    assert _description(schemas["plan"], "enforce_eager").startswith("vLLM --enforce-eager: ")


def test_a_logs_page_past_the_end_is_the_offset_asked_for(tmp_path) -> None:
    # LogTail.first_line is 'the `offset` of this page'; past the end it was total_lines (10 for offset 20), and the
    # summary said 'no lines from offset 10', an offset the caller never sent
    _fake_state(tmp_path, "".join(f"INFO line {n}\n" for n in range(1, 11)))
    past = call("logs", {"offset": 20})
    assert past.structured_content == {"lines": [], "total_lines": 10, "first_line": 20, "note": ""}
    assert past.content[0].text == "no lines from offset 20: the log has 10 lines (offsets 0-9)"
