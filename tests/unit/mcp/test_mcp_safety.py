"""Issue 25, the MCP surface in an agent's hands: strict JSON types (a boolean is true/false, an integer is
never a boolean), the confirm gate opens only on JSON true, no input names a program to run, every failure
reaches the client as its one line (never "Error executing tool"), and the server keeps answering after."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from factories import SMOLLM2_CONFIG, sized_checkpoint
from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.engines import state as engine_state
from onechip.errors import ConfigError
from onechip.mcp import server as mcp_server
from onechip.mcp.server import build_server
from onechip.mcp.tools import TOOLS, UpToolRequest, always
from onechip.schemas import EngineState, EngineStatus
from onechip.schemas.bench import MAX_TOKENS, MAX_TURNS
from onechip.schemas.checks import MAX_PROBES, MAX_TIMEOUT_S
from onechip.schemas.common import GIB
from onechip.schemas.inputs import INT64_MAX, MAX_TEXT

E2B = {"model": "google/gemma-4-E2B-it", "chip": "v5e-1"}
UP = {"engine": "vllm", "model": "google/gemma-4-E2B-it", "chip": "l4", "dry_run": True}


def calls(*pairs: tuple[str, dict]) -> list:
    """Each (tool, arguments) called in order on ONE server session: what a client sees of each."""

    async def go():
        async with Client(build_server()) as client:
            return [await client.call_tool(name, args) for name, args in pairs]

    return anyio.run(go)


def text(result) -> str:
    line = result.content[0].text
    assert "\n" not in line and not line.startswith("Error executing tool"), line
    return line


@pytest.fixture
def engine(tmp_path, monkeypatch) -> list[int]:
    """A recorded engine, and `down` replaced by a recorder: the list grows by one per real stop."""
    log = tmp_path / "engine.log"
    log.write_text("INFO ready\n")
    engine_state.save(EngineState(engine="embedded", pid=999_999, base_url="http://127.0.0.1:1", model="smollm2",
                                  started_at="2026-12-01T00:00:00+00:00", log_path=str(log)))  # fmt: skip
    stopped: list[int] = []
    monkeypatch.setattr(engine_state, "down", lambda **_: stopped.append(1) or EngineStatus(running=False, note="x"))
    return stopped


@pytest.mark.parametrize("confirm", ["false", "no", "true", "yes", 1, 0, "", [True], {"value": True}])
def test_confirm_that_is_not_json_true_or_false_stops_nothing(engine, confirm) -> None:
    (result,) = calls(("down", {"confirm": confirm}))
    assert result.is_error and "'confirm': must be true or false" in text(result)
    assert engine == []


def test_a_long_confirm_is_refused_in_a_bounded_line(engine) -> None:
    """The refusal of a confirm that is not a boolean echoed it whole (repr): a 100,000-character string came back as
    a 100,000-character line, where every other refused value is cut (schemas.inputs.shown)."""
    (result,) = calls(("down", {"confirm": "x" * 100_000}))
    said = text(result)
    assert result.is_error and "'confirm': must be true or false" in said and len(said) < 300, len(said)
    assert engine == []


def test_only_confirm_true_stops_the_engine(engine) -> None:
    refused, done = calls(("down", {"confirm": False}), ("down", {"confirm": True}))
    assert refused.is_error and text(refused).startswith("not done: down would stop the embedded engine")
    assert not done.is_error and engine == [1]


def test_a_billable_tool_with_a_string_confirm_creates_nothing(monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")  # any cloud call would fail loudly
    created: list[object] = []
    monkeypatch.setattr(api, "cloud_up", lambda *a, **k: created.append(a))
    (result,) = calls(("cloud_up", {"chip": "v5e-1", "zones": ["us-west4-a"], "confirm": "no"}))
    assert result.is_error and "confirm" in text(result) and created == []


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ({**E2B, "max_model_len": True}, "max_model_len"),  # read as 1 before: "1 token per request"
        ({**E2B, "max_model_len": "4096"}, "max_model_len"),
        ({**E2B, "max_model_len": 4096.5}, "max_model_len"),
        ({**E2B, "multimodal": "false"}, "multimodal"),
        ({**E2B, "multimodal": 0}, "multimodal"),
        ({**E2B, "enforce_eager": 1}, "enforce_eager"),
        ({**E2B, "tensor_parallel_size": False}, "tensor_parallel_size"),
        ({**E2B, "tensor_parallel_size": True}, "tensor_parallel_size"),  # equal to the default 1, still refused
        ({**E2B, "utilization": "0.9"}, "utilization"),
        ({**E2B, "cpu_offload_gb": -1}, "cpu_offload_gb"),  # vLLM asserts cpu_offload_gb >= 0 (arg_utils.py)
        ({**E2B, "cpu_offload_gb": "4"}, "cpu_offload_gb"),
    ],
)
def test_strict_json_types(args, name) -> None:
    (result,) = calls(("plan", args))
    assert result.is_error and text(result).startswith(f"Invalid value for '{name}'")


def test_cpu_offload_off_the_gpu_engine_is_one_line() -> None:
    (result,) = calls(("plan", {**E2B, "cpu_offload_gb": 1}))
    assert result.is_error and text(result) == "cpu_offload_gb is planned for vLLM's GPU engine only, not vllm-tpu"


def test_json_numbers_and_arrays_work() -> None:
    # an integer where a number is asked is a number (JSON has one number type); a list is a JSON array (the
    # command line's one comma string is refused here: tests/unit/cli/test_bad_input_new_user.py)
    (result,) = calls(("plan", {**E2B, "utilization": 1, "contexts": [1024, 8192], "max_model_len": 16384}))
    # utilization 1 leaves a TPU's compiled programs no room: the plan is made and does not fit, a tool error that
    # keeps the plan (the CLI's exit 10), not a refusal of the arguments
    assert result.structured_content is not None, text(result)
    assert result.structured_content["utilization"] == 1.0 and result.structured_content["exit_code"] == 10
    assert [c["context_tokens"] for c in result.structured_content["concurrency"]] == [1024, 8192]


@pytest.mark.parametrize(
    "args",
    [
        {**UP, "launcher": "sh -c 'touch {marker}'"},
        {**UP, "ssh_options": ["ProxyCommand=sh -c 'touch {marker}'"]},
        {"model": "google/gemma-4-E2B-it", "chip": "l4", "launcher": "sh -c 'touch {marker}'"},
    ],
)
def test_no_argument_names_a_program(tmp_path, args) -> None:
    marker = tmp_path / "ran"
    args = {k: (v.format(marker=marker) if isinstance(v, str) else [x.format(marker=marker) for x in v])
            if k in ("launcher", "ssh_options") else v for k, v in args.items()}  # fmt: skip
    (result,) = calls(("up" if "engine" in args else "plan", args))
    assert result.is_error and "takes no argument" in text(result)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("sets", "why"),
    [
        (["LD_PRELOAD=/tmp/x.so"], "LD_PRELOAD is not an engine variable"),
        (["PATH=/tmp/bin"], "PATH is not an engine variable"),
        (["PYTHONPATH=/tmp"], "PYTHONPATH is not an engine variable"),
        (["trust-remote-code"], "--trust-remote-code loads code"),
        (["worker-cls=evil.Worker"], "--worker-cls loads code"),
        (["--tool-parser-plugin=/tmp/p.py"], "--tool-parser-plugin loads code"),
    ],
)
def test_sets_cannot_load_code_or_choose_the_program(sets, why) -> None:
    (result,) = calls(("up", {**UP, "sets": sets}))
    assert result.is_error and why in text(result)


@pytest.mark.parametrize("item", ["VLLM_X=a\x00b", "served-model-name=a\x00b"])
def test_a_set_with_a_nul_character_is_refused_before_anything_runs(item) -> None:
    # no command line can carry a NUL, but a JSON string can: the dry run showed the command, and `up` with confirm
    # failed in the launch with 'internal error (ValueError: embedded null byte); please report it'
    name = item.split("=")[0]
    (result,) = calls(("up", {**UP, "sets": [item]}))
    assert result.is_error and text(result) == (
        f"sets {name}: holds a NUL character, which no command line or environment variable can carry; remove it"
    ), text(result)


def test_engine_variables_and_vllm_images_pass_and_the_operator_widens_images(monkeypatch) -> None:
    docker = {**UP, "engine": "vllm-docker"}
    ok, other = calls(
        ("up", {**UP, "sets": ["VLLM_CPU_KVCACHE_SPACE=4", "max-num-seqs=8"]}),
        ("up", {**docker, "image": "evil/image:latest"}),
    )
    assert not ok.is_error, text(ok)
    assert other.is_error and "image 'evil/image:latest' is not allowed" in text(other)
    monkeypatch.setenv("ONECHIP_MCP_IMAGES", "vllm/,registry.example.com/vllm/")
    (allowed,) = calls(("up", {**docker, "image": "registry.example.com/vllm/vllm-openai:v0.19.0"}))
    assert not allowed.is_error, text(allowed)


def test_every_failure_is_its_one_line_and_the_server_keeps_answering(monkeypatch) -> None:
    def crash():
        raise ZeroDivisionError("division by zero")

    def hog(request):
        raise MemoryError

    monkeypatch.setattr(api, "status", crash)  # the tools call api.* at call time
    monkeypatch.setattr(api, "cost", hog)
    long_name, crashed, out_of_memory, after = calls(
        ("plan", {"model": "x" * 1_000_000, "chip": "v5e-1"}),
        ("status", {}),
        ("cost", {"chip": "v5e-1", "output_tok_per_s": 10}),
        ("plan", E2B),
    )
    assert long_name.is_error and "at most 4096 characters" in text(long_name) and len(text(long_name)) < 300
    assert text(crashed) == "internal error (ZeroDivisionError: division by zero); please report it"
    assert text(out_of_memory).startswith("out of memory: the job needed more than this server may hold")
    assert not after.is_error  # the same session still answers


def test_bench_bounds_are_refused_before_any_request(tmp_path) -> None:
    base = {"base_url": "http://127.0.0.1:9", "workload": "agent", "out_dir": str(tmp_path / "run")}
    huge, many, slow = calls(
        ("bench", {**base, "user_tokens": 10**12}),
        ("bench", {**base, "turns": 10**9}),
        ("bench", {**base, "think_time_s": 1e308}),
    )
    assert "Invalid value for 'user_tokens'" in text(huge) and "less than or equal to 16777216" in text(huge)
    assert "Invalid value for 'turns'" in text(many)
    assert "Invalid value for 'think_time_s'" in text(slow)
    assert not (tmp_path / "run").exists()


def test_memory_limit_from_the_environment() -> None:
    assert mcp_server.memory_limit_bytes({"ONECHIP_MCP_MEMORY_GIB": "2"}) == 2 * GIB
    assert mcp_server.memory_limit_bytes({}) > 0
    for bad in ("0", "-1", "nan", "inf", "lots"):
        with pytest.raises(ConfigError, match="ONECHIP_MCP_MEMORY_GIB must be a positive number"):
            mcp_server.memory_limit_bytes({"ONECHIP_MCP_MEMORY_GIB": bad})


def test_the_memory_guard_turns_a_runaway_allocation_into_memory_error_and_spares_engines() -> None:
    # in a child: the cap is per process, and this one must keep its own. An engine it starts gets the old
    # limit back (limits are inherited; vLLM holds weights and KV cache in host memory)
    script = textwrap.dedent(
        """
        import resource, subprocess, sys
        from onechip.procs import cap_heap, uncap_child
        before = resource.getrlimit(resource.RLIMIT_DATA)
        cap_heap(512 << 20)
        try:
            hog = bytearray(2 << 30)
        except MemoryError:
            print("MemoryError")
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
        capped = resource.prlimit(child.pid, resource.RLIMIT_DATA)
        uncap_child(child.pid)
        print(capped[0] == 512 << 20, resource.prlimit(child.pid, resource.RLIMIT_DATA) == before)
        child.kill()
        child.wait()
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["MemoryError", "True", "True"], out.stderr


def test_a_required_argument_left_out_is_one_line() -> None:
    # a new-user test sent bench {"url": ...}: the SDK answered with a multi-line pydantic report on base_url
    missing, wrong_name = calls(("bench", {}), ("bench", {"url": "http://127.0.0.1:9"}))
    assert "base_url" in text(missing) and "required" in text(missing)
    assert text(wrong_name) == "bench takes no argument 'url'; nothing was done"


# --- files: an MCP call names files and folders only inside $ONECHIP_MCP_FILES


def test_files_outside_the_allowed_folders_are_refused_before_any_work(tmp_path):
    secret = tmp_path.parent / "outside-token"
    secret.write_text("hf_outsidevalue\n")
    link = tmp_path / "looks-inside"
    link.symlink_to(secret)  # a link inside the folder to a file outside it is outside
    up = {**UP, "dry_run": True}
    results = calls(
        ("summarize_logs", {"path": "/etc/passwd"}),
        ("up", {**up, "hf_token_file": str(secret)}),
        ("up", {**up, "hf_token_file": str(link)}),
        ("bench", {"base_url": "http://127.0.0.1:9", "out_dir": str(tmp_path / ".." / "elsewhere")}),
        ("status", {}),
    )
    lines = [text(r) for r in results[:4]]
    assert all(r.is_error for r in results[:4]) and not results[4].is_error
    assert lines[0].startswith("path: /etc/passwd is outside the folders an MCP call may use ($ONECHIP_MCP_FILES: ")
    assert all(line.startswith("hf_token_file: ") for line in lines[1:3])
    assert lines[3].startswith("out_dir: ")
    assert not any("hf_outsidevalue" in line for line in lines)
    assert not (tmp_path.parent / "elsewhere").exists()


def test_a_checkpoint_directory_outside_the_allowed_folders_is_refused_as_a_model(tmp_path):
    # plan read /tmp/.../config.json and the safetensors headers of any folder the server could read
    outside = sized_checkpoint(tmp_path.parent / "outside-model", SMOLLM2_CONFIG, 2 * GIB)
    inside = sized_checkpoint(tmp_path / "model", SMOLLM2_CONFIG, 2 * GIB)
    results = calls(
        ("plan", {"model": str(outside), "chip": "l4"}),
        ("advise", {"model": str(outside), "chips": ["l4"]}),
        ("up", {**UP, "model": str(outside)}),
        ("plan", {"model": str(inside), "chip": "l4"}),
        ("plan", {"model": "google/gemma-4-E2B-it", "chip": "l4"}),  # a catalog name / Hub id is no path
        ("bench", {"base_url": "http://127.0.0.1:9", "model": "/models/served-name", "out_dir": str(tmp_path / "b")}),
    )
    assert all(text(r).startswith(f"model: {outside} is outside the folders") for r in results[:3])
    assert not results[3].is_error and not results[4].is_error, text(results[3])
    assert "outside the folders" not in results[5].content[0].text  # bench's model is the served name


def test_a_set_naming_a_file_outside_the_allowed_folders_is_refused(tmp_path):
    # an engine flag's file bypassed the rule: up ran vLLM with --chat-template=/etc/passwd, --ssl-keyfile=KEY or
    # --tokenizer=DIR of any folder the server could read; every value naming an existing path is checked, no list
    outside = tmp_path.parent / "outside-dir"
    outside.mkdir(exist_ok=True)
    key = outside / "server.key"
    key.write_text("PRIVATE KEY TEXT\n")
    link = tmp_path / "template.jinja"
    link.symlink_to(key)  # inside by name, outside once resolved
    refused = {
        "--chat-template": "chat-template=/etc/passwd",
        "--ssl-keyfile": f"ssl-keyfile={key}",
        "--allowed-local-media-path": f"allowed-local-media-path={tmp_path}:{outside}",
        "--tokenizer": f"tokenizer={outside}",
        "--chat-template ": f"--chat-template={link}",
        "--speculative-config": json_set("speculative-config", {"model": str(outside), "num_speculative_tokens": 2}),
    }
    results = calls(*[("up", {**UP, "sets": [item]}) for item in refused.values()])
    for (flag, item), result in zip(refused.items(), results, strict=True):
        line = text(result)
        assert result.is_error and line.startswith(f"sets: {flag.strip()} names "), (item, line)
        assert "outside the folders an MCP call may use" in line and "root:" not in line and "PRIVATE" not in line


def json_set(flag: str, value: dict) -> str:
    return f"{flag}={json.dumps(value)}"


def test_a_set_naming_a_hub_id_or_a_file_inside_the_allowed_folders_passes(tmp_path, monkeypatch):
    template = tmp_path / "chat.jinja"
    template.write_text("{{ messages }}")
    monkeypatch.chdir(tmp_path)
    results = calls(
        ("up", {**UP, "sets": ["tokenizer=Qwen/Qwen3-8B", "max-num-seqs=8", "VLLM_CPU_KVCACHE_SPACE=4"]}),
        ("up", {**UP, "sets": [f"chat-template={template}"]}),
        ("up", {**UP, "sets": ["chat-template=chat.jinja"]}),  # relative: the server's working folder
    )
    assert [r.is_error for r in results] == [False] * 3, [text(r) for r in results]


def test_a_number_or_switch_value_is_no_path_even_where_a_file_has_its_name(tmp_path, monkeypatch):
    # max-num-seqs=8 was refused as 'names 8, outside the folders' when the server's working folder (outside
    # $ONECHIP_MCP_FILES) held a file named 8: a flag the table reads as a number, a switch or counts takes no path
    work = tmp_path.parent / f"{tmp_path.name}-work"
    work.mkdir()
    for name in ("8", "4", "0.5", "true"):
        (work / name).write_text("x")
    monkeypatch.chdir(work)
    sets = ["max-num-seqs=8", "VLLM_CPU_KVCACHE_SPACE=4", "gpu-memory-utilization=0.5", "enforce-eager=true"]
    results = calls(*[("up", {**UP, "sets": [item]}) for item in sets])
    assert [r.is_error for r in results] == [False] * len(sets), [text(r) for r in results]
    (refused,) = calls(("up", {**UP, "sets": ["chat-template=8"]}))  # a text flag still names the file
    assert refused.is_error and text(refused).startswith("sets: --chat-template names "), text(refused)


def test_files_inside_the_allowed_folders_are_used(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.19.0\n")
    (result,) = calls(("summarize_logs", {"path": str(log)}))
    assert not result.is_error, text(result)
    assert result.structured_content["total_lines"] == 1


def test_default_allowed_folders_are_the_working_folder_and_onechip_home(tmp_path, monkeypatch, onechip_home):
    onechip_home.mkdir()
    from onechip.mcp.tools import refuse_paths
    from onechip.schemas.logs import SummarizeLogsRequest

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    refuse_paths(SummarizeLogsRequest, {"path": Path("a.log")}, {})
    refuse_paths(SummarizeLogsRequest, {"path": onechip_home / "engine" / "a.log"}, {})
    with pytest.raises(ConfigError, match="^path: " + re.escape(str(tmp_path / "a.log"))):
        refuse_paths(SummarizeLogsRequest, {"path": tmp_path / "a.log"}, {})
    with pytest.raises(ConfigError, match="^path: ../a.log "):
        refuse_paths(SummarizeLogsRequest, {"path": Path("../a.log")}, {})
    with pytest.raises(ConfigError, match="none"):  # an empty allow-list allows nothing
        refuse_paths(SummarizeLogsRequest, {"path": tmp_path / "a.log"}, {"ONECHIP_MCP_FILES": ""})


# --- cancellation: a job that reports no progress still stops when its call is cancelled


def test_cancelled_call_interrupts_a_job_that_reports_no_progress():
    from onechip.mcp.bridge import run_job

    state = {"stopped": None, "iterations": 0}

    def silent_job(on_progress):  # a boot wait or one long request: no progress event for a long time
        try:
            while True:
                state["iterations"] += 1
                time.sleep(0.005)
        except KeyboardInterrupt:
            state["stopped"] = time.monotonic()
            raise

    async def go():
        with anyio.move_on_after(0.3):
            await run_job(None, silent_job)
        return time.monotonic()

    cancelled_at = anyio.run(go)
    deadline = time.monotonic() + 5
    while state["stopped"] is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert state["stopped"] is not None and state["stopped"] - cancelled_at < 1.0
    n = state["iterations"]
    time.sleep(0.1)
    assert state["iterations"] == n  # the thread left the job


@pytest.mark.parametrize(
    ("tool", "args", "said"),
    [  # raised by a request's own rule, by the planner, by the cloud layer: each names the argument
        ("plan", {**E2B, "tensor_parallel_size": 3}, "tensor_parallel_size 3 must be between 1 and the 1 chip(s)"),
        ("cloud_up", {"chip": "v5e-1", "provisioning": "spot", "zones": ["us-west4-a"]}, "give max_hours H"),
        ("cloud_up", {"chip": "v5e-1", "replicas": 3, "name": "a" * 57, "zones": ["us-west4-a"]},
         "; give a shorter name"),
        ("cost", {"chip": "v5e-1", "output_tok_per_s": "fast"}, "Invalid value for 'output_tok_per_s'"),
    ],
)  # fmt: skip
def test_an_error_names_the_tools_argument_not_the_cli_flag(monkeypatch, tool, args, said) -> None:
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")  # nothing reaches a cloud
    (result,) = calls((tool, args))
    assert result.is_error and said in text(result), text(result)
    assert not re.search(r"(?<![\w-])--[a-z]", text(result)), text(result)


def test_flags_become_arguments_but_commands_to_type_keep_theirs() -> None:
    from onechip.schemas.cloud import CloudUpRequest
    from onechip.schemas.inputs import as_parameters
    from onechip.schemas.requests import PlanRequest

    line = ("--valid-until passed; --no-such-flag stays; delete it: onechip cloud down --name x --zone z --yes; "
            "or run `onechip cloud status --name x`")  # fmt: skip
    assert as_parameters(CloudUpRequest, line) == (
        "valid_until_s passed; --no-such-flag stays; delete it: onechip cloud down --name x --zone z --yes; "
        "or run `onechip cloud status --name x`"
    )
    assert as_parameters(PlanRequest, "--text-only drops the towers; --gpu-memory-utilization 0.9") == (
        "multimodal: false drops the towers; utilization 0.9"
    )


@pytest.mark.parametrize(
    ("tool", "args", "name", "kind"),
    [("advise", {"model": "SmolLM2-135M-Instruct", "chips": []}, "chips", 'strings such as ["a", "b"]'),
     ("plan", {**E2B, "contexts": []}, "contexts", "integers such as [128, 1024]"),
     ("cost", {"pricing": []}, "pricing", 'strings such as ["a", "b"]')],
)  # fmt: skip
def test_an_empty_json_array_where_the_default_is_null_is_refused(tool, args, name, kind) -> None:
    # the JSON form of `--chips ''` (refused on the command line): advise `chips: []` ranked every chip. A field
    # whose published default is [] or {} (zones, slo) takes that default as not sent, as the schema says
    (result,) = calls((tool, args))
    assert result.is_error and text(result) == f"{name} lists nothing (got []): give a JSON array of {kind}"


@pytest.mark.parametrize(
    ("tool", "args", "name"),
    [("bench", {"base_url": "http://127.0.0.1:9", "contexts": []}, "contexts"),
     ("bench", {"base_url": "http://127.0.0.1:9", "clients": []}, "clients"),
     ("check", {"base_url": "http://127.0.0.1:9", "tool_choice": []}, "tool_choice")],
)  # fmt: skip
def test_an_empty_json_array_where_the_default_lists_something_is_refused(tool, args, name) -> None:
    # `--contexts ''` is refused on the command line; over MCP `contexts: []` was read as not sent (server._given took
    # any [] of a list field for its default) and bench measured the default grid, 128 and 1,024 tokens
    (result,) = calls((tool, args))
    assert result.is_error and text(result).startswith(f"{name} lists nothing (got []): give a JSON array of")


def test_a_key_value_field_as_an_empty_string_is_refused_as_not_an_object() -> None:
    # the JSON form of `--slo ''`: a string is never the object the schema publishes
    (result,) = calls(("advise", {"model": "SmolLM2-135M-Instruct", "slo": ""}))
    assert result.is_error and text(result).startswith("slo must be a JSON object such as")


def test_one_gate_predicate_holds_the_costly_calls_and_lets_a_dry_run_through() -> None:
    # ToolSpec.gate replaces gated + ungated: None is no confirm, `always` every call, up's `not dry_run`
    gated = {spec.name: spec.gate for spec in TOOLS if spec.gated}
    assert set(gated) == {"up", "down", "demo", "cloud_probe", "cloud_up", "cloud_down"}
    assert all(gate is always for name, gate in gated.items() if name not in ("up", "down", "cloud_down"))
    up = gated["up"]
    assert up is not None and not up(UpToolRequest(**UP)) and up(UpToolRequest(**{**UP, "dry_run": False}))
    (dry,) = calls(("up", UP))  # no confirm: a dry run starts nothing and is answered
    assert not dry.is_error and "not done" not in text(dry)


def test_a_file_read_while_the_request_is_built_is_refused_outside_the_folders_first(tmp_path):
    # bench's request reads its workload_file as it is built: /etc/shadow came back as "unknown key 'root:$6$...'"
    # because the folders were checked only on the built request
    shadow = tmp_path.parent / "shadow"
    shadow.write_text("root:$6$saltsalt$hashhashhash:20228:0:99999:7:::\n")
    base = {"base_url": "http://127.0.0.1:9", "out_dir": str(tmp_path / "run")}
    outside, wrong_type = calls(("bench", {**base, "workload_file": str(shadow)}),
                                ("bench", {**base, "workload_file": [1]}))  # fmt: skip
    assert text(outside) == (
        f"workload_file: {shadow} is outside the folders an MCP call may use ($ONECHIP_MCP_FILES: {tmp_path})"
    )
    # a list is no path: the field's own refusal, not "arguments are not JSON values"
    assert text(wrong_type) == "Invalid value for 'workload_file': Input should be a valid string (got [1])"


@pytest.mark.parametrize(
    ("tool", "args", "said"),
    [("summarize_logs", {"path": "a\x00b"}, "path: 'a\\x00b'"), ("cost", {"run_dir": "\x00"}, "run_dir: '\\x00'"),
     ("report", {"run_dir": "loop"}, "run_dir: loop"), ("plan", {"model": "./\x00", "chip": "l4"}, "model: './\\x00'")],
)  # fmt: skip
def test_a_path_that_cannot_be_resolved_is_refused_in_one_line(tmp_path, monkeypatch, tool, args, said):
    # Path.resolve raises ValueError on a NUL and RuntimeError on a symlink loop (Python 3.11): the SDK answered
    # "Error executing tool summarize_logs" and logged a traceback
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    refused, after = calls((tool, args), ("status", {}))
    assert refused.is_error and text(refused).startswith(f"{said} is not a path that can be resolved (")
    assert not after.is_error


def test_a_value_with_a_newline_is_echoed_on_one_line(tmp_path):
    runs = tmp_path / "a\nb"
    bench = {"base_url": "http://127.0.0.1:9", "workload_file": str(tmp_path / "x\ny")}
    demo, workload = calls(("demo", {"runs_root": str(runs)}), ("bench", bench))
    assert text(demo).startswith("not done: demo would start") and f"{tmp_path}/a b/<run-id>" in text(demo)
    assert text(workload) == f"workload_file {tmp_path}/x y: No such file or directory"


@pytest.mark.parametrize(
    ("field", "value", "bound"),
    [("agent_cases", 10**9, MAX_PROBES), ("agent_runs", 10**9, MAX_PROBES), ("determinism_prompts", 10**9, MAX_PROBES),
     ("agent_max_turns", 10**6, MAX_TURNS), ("max_model_len", 2**70, MAX_TOKENS),
     ("tool_max_tokens", 2**70, MAX_TOKENS), ("kv_tokens", 2**70, INT64_MAX),
     ("over_limit_timeout_s", 1e308, MAX_TIMEOUT_S)],
)  # fmt: skip
def test_check_counts_are_bounded_before_any_request(field, value, bound) -> None:
    # unbounded, each of these hung the call: a billion agent cases built in memory, a billion determinism prompts,
    # an over-limit prompt of max_model_len + 1 = 2**70 + 1 tokens
    with FakeVllm([Reply("Paris.")]) as srv:
        (result,) = calls(("check", {"base_url": srv.url, field: value}))
        assert srv.chat_requests == []
    assert text(result).startswith(f"Invalid value for '{field}': Input should be less than or equal to {bound}")


def test_a_workload_file_name_of_100000_characters_is_not_echoed_whole(tmp_path, monkeypatch) -> None:
    # bench reads workload_file while its request is built, before the field's bound: the OS's 'File name too
    # long' came back with the whole name (100,034 characters)
    monkeypatch.chdir(tmp_path)
    (result,) = calls(("bench", {"base_url": "http://127.0.0.1:9", "workload_file": "x" * 100_000}))
    assert text(result).startswith(f"workload_file is longer than {MAX_TEXT:,} characters (got 'xxx")
    assert len(text(result)) < 200


def test_a_check_argument_as_sent_is_bounded_like_any_request() -> None:
    # CheckRequest took StrictModel's config: no text bound (a model name of 100,000 characters went to the server)
    (result,) = calls(("check", {"base_url": "http://127.0.0.1:9", "model": "x" * 100_000}))
    assert text(result).startswith("Invalid value for 'model': String should have at most 4096 characters")
    assert len(text(result)) < 300


@pytest.mark.parametrize(
    ("tool", "args", "name"),
    [("prices", {"region": ""}, "region"), ("prices", {"chip": " "}, "chip"),
     ("cloud_zones", {"chip": ""}, "chip"), ("plan", {**E2B, "engine": ""}, "engine"),
     ("summarize_logs", {"path": ""}, "path")],
)  # fmt: skip
def test_a_blank_text_value_is_refused_not_read_as_not_sent(tool, args, name) -> None:
    # `prices region: ""` answered "0 prices" and `chip: ""` every chip's, as a success
    (result,) = calls((tool, args))
    assert text(result) == f"{name} is empty (got {args[name]!r}): give a value, or leave {name} out"


def test_a_blank_required_path_is_refused_not_read_as_the_working_folder() -> None:
    # Path('') is '.': `report run_dir: ""` rendered the working folder as a run ("wrote report.md")
    (result,) = calls(("report", {"run_dir": ""}))
    assert text(result) == "run_dir is empty (got ''): give a value"


@pytest.mark.parametrize("host", ["user@host -o ProxyCommand=x", "host\tname", "a\x00b"])
def test_a_host_with_a_space_or_control_character_is_refused(host) -> None:
    # 'user@host -o ProxyCommand=x' was planned and printed as one ssh target (a dry run's success)
    (result,) = calls(("up", {**UP, "host": host}))
    assert text(result).startswith(f"host {host!r}: expected user@addr or addr (not empty, not starting with '-'")


@pytest.mark.parametrize("extra", [{"sets": ["VLLM_X=plainEnvSecretValue42"]}, {"host": "me:plainEnvSecretValue42@h"}])
def test_a_secret_in_an_up_argument_is_refused_in_a_line_that_never_repeats_it(monkeypatch, extra) -> None:
    # HF_TOKEN's own value (no known shape) in an engine variable, or a password in the ssh target: the dry run's
    # commands carried it; now refused as the CLI refuses it, the tool result never naming it
    monkeypatch.setenv("HF_TOKEN", "plainEnvSecretValue42")
    (result,) = calls(("up", {**UP, **extra}))
    line = text(result)
    assert result.is_error and "plainEnvSecretValue42" not in line and "never goes on" in line
    assert "plainEnvSecretValue42" not in str(result.structured_content)


def test_a_control_character_in_a_value_is_echoed_escaped_not_as_itself(tmp_path, monkeypatch):
    # a run_dir with a terminal escape and a bidirectional override came back inside the refusal as the raw characters
    monkeypatch.chdir(tmp_path)
    (refused,) = calls(("report", {"run_dir": "r\x1b[2J\u202eun"}))
    assert refused.is_error
    assert text(refused) == "run directory r\\x1b[2J\\u202eun does not exist or is not a directory"


def test_a_success_summary_that_echoes_a_value_is_one_line_with_control_characters_escaped(tmp_path):
    # refusals were one line (errors.one_line), but a result's summary was sent as built: a bench into an out_dir
    # holding a newline, a terminal escape and a bidirectional override answered a two-line summary carrying them raw
    out = tmp_path / "r\n\x1b[2J\u202eun"
    grid = {"contexts": [64], "clients": [1], "reps": 1, "output_tokens": 2, "requests_per_client": 1}
    with FakeVllm() as srv:
        bench, report = calls(("bench", {"base_url": srv.url, **grid, "out_dir": str(out)}),
                              ("report", {"run_dir": str(out), "formats": ["md"]}))  # fmt: skip
    shown = f"{tmp_path}/r \\x1b[2J\\u202eun"
    assert not bench.is_error and text(bench).startswith(f"{shown}: 1 cell (output tok/s"), text(bench)
    assert not report.is_error and text(report) == f"wrote {shown}/report.md", text(report)
    assert bench.structured_content["run_dir"] == str(out)  # the structured result keeps the path as it is


def test_arguments_are_checked_off_the_event_loop_so_a_long_check_blocks_no_other_call(monkeypatch):
    # checking a call's arguments ran on the server's event loop: 20,000 bench contexts held every other call (and
    # any cancellation) for 10 s, 200,000 for minutes. Checked in a worker thread, as the job itself runs
    threads: list[threading.Thread] = []
    checked = mcp_server._checked

    def recorded(spec, kwargs):
        threads.append(threading.current_thread())
        return checked(spec, kwargs)

    monkeypatch.setattr(mcp_server, "_checked", recorded)
    (refused,) = calls(("bench", {"base_url": "http://127.0.0.1:9", "reps": 0}))
    assert text(refused).startswith("Invalid value for 'reps'")
    assert threads and threads[0] is not threading.main_thread()  # anyio.run runs the server's loop in this thread


@pytest.mark.parametrize("tool", ["bench", "find_max"])
@pytest.mark.parametrize(
    "internal", [{"input_sha256": {"trace_file": "0" * 64}}, {"replica_urls": ["http://127.0.0.1:9"]}]
)
def test_a_field_onechip_sets_itself_is_no_tool_input(tool, internal) -> None:
    """bench's input_sha256 (the digest of its input files a resume compares) and replica_urls (the replicas it
    reads /metrics of, from `up --replicas N`) are set by bench, hidden from the command line: the tools published
    them and took them, so a caller could hand bench the digest a resume checks against."""
    (result,) = calls((tool, {"base_url": "http://127.0.0.1:9", **internal}))
    name = next(iter(internal))
    assert result.is_error and text(result) == f"{tool} takes no argument {name!r}; nothing was done"
    spec = next(s for s in TOOLS if s.name == tool)
    assert name in spec.request.model_fields  # still a field of the config bench saves, not an input

    async def schema():
        async with Client(build_server()) as client:
            return next(t for t in (await client.list_tools()).tools if t.name == tool).input_schema

    assert name not in anyio.run(schema)["properties"]


@pytest.mark.parametrize(
    ("interval", "said"), [(1e308, "less than or equal to 604800"), (1e-300, "greater than or equal to 0.01")]
)
def test_a_metrics_interval_out_of_bounds_is_refused_before_any_request(tmp_path, interval, said) -> None:
    """metrics_interval_s had no upper bound and no floor: 1e308 crashed the metrics-sampler thread
    (OverflowError, a traceback on the server's stderr) and the run lost its /metrics peaks unsaid; 1e-300 scraped
    /metrics in a loop without a pause through every cell, load on the server measured, samples held without end."""
    base = {"base_url": "http://127.0.0.1:9", "out_dir": str(tmp_path / "run")}
    (result,) = calls(("bench", {**base, "metrics_interval_s": interval}))
    assert result.is_error and text(result).startswith("Invalid value for 'metrics_interval_s'"), text(result)
    assert said in text(result)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("boot_timeout_s", [0.5, 100_000.0])
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("demo", {}),
        ("demo", {"cloud": "gcp", "chip": "v5e-1", "model": "google/gemma-4-E2B-it", "max_hours": 1.0}),
        ("cloud_up", {"chip": "v5e-1", "model": "google/gemma-4-E2B-it", "project": "my-project-123"}),
    ],
)
def test_a_boot_timeout_up_would_refuse_is_refused_as_the_argument_sent(
    monkeypatch, tmp_path, tool, args, boot_timeout_s
):
    """demo's and cloud_up's boot_timeout_s is handed to `up` (its timeout_s, 1 to 86,400 s), but took any positive
    number (demo's without an upper bound): 0.5 or 100,000 came back as 'internal error (ValidationError: 1
    validation error for UpRequest); please report it', for a cloud demo already at its preview, for a demo on a host
    after the image pull; the embedded demo waited without end for an engine that never came up."""
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")  # any cloud call would fail loudly
    monkeypatch.chdir(tmp_path)  # the default runs_root, runs/, lies within $ONECHIP_MCP_FILES
    (result,) = calls((tool, {**args, "boot_timeout_s": boot_timeout_s}))  # refused before the gate: no confirm
    assert result.is_error and text(result).startswith("Invalid value for 'boot_timeout_s'"), text(result)
