"""The new-user test of the sixth session (2026-12-02), one regression test per finding: a config.json or
safetensors header of the wrong JSON shape is one line naming the file and the field (each was an
`internal error` or a silent plan), and a checkpoint whose headers hold no tensor is refused, not planned with
no weights."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, one_error_line, sized_checkpoint

pytestmark = pytest.mark.usefixtures("offline_home")

LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        # was internal error (AttributeError: 'str' object has no attribute 'get') in the RoPE cache rule
        ("rope_scaling", "yes", "field 'rope_scaling' must be an object, got 'yes'"),
        ("rope_parameters", "abc", "field 'rope_parameters' must be an object, got 'abc'"),
        # was internal error (TypeError: 'int' object is not iterable)
        ("architectures", -1, "field 'architectures' must be a list of class names, got -1"),
        # was planned as if the string were a list of one-letter class names
        ("architectures", "LlamaForCausalLM", "field 'architectures' must be a list of class names"),
        # was internal error (ValueError: could not convert string to float)
        ("partial_rotary_factor", "abc", "field 'partial_rotary_factor' must be a number in (0, 1], got 'abc'"),
        # was planned as an unquantized checkpoint; vLLM calls .get on it and fails
        ("quantization_config", "fp8", "field 'quantization_config' must be an object, got 'fp8'"),
        ("quantization_config", {"quant_method": 8}, "field 'quantization_config.quant_method' must be a string"),
        ("image_processor_config", "abc", "field 'image_processor_config' must be an object"),
    ],
)
def test_a_config_field_of_the_wrong_json_shape_is_one_line(run, tmp_path: Path, field: str, value: Any, said: str):
    path = sized_checkpoint(tmp_path / "m", {**LLAMA, field: value}, 1024)
    line = one_error_line(run, "plan", str(path), "--chip", "l4", "--max-model-len", "4096")
    assert line.startswith(f"{path}/config.json: ") and said in line


def _header_only(directory: Path, header: Any) -> Path:
    """sized_checkpoint's config.json, with model.safetensors replaced by `header` as its JSON header."""
    sized_checkpoint(directory, LLAMA, 1024)
    text = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text)
    return directory


TENSOR = "model.layers.0.mlp.up_proj.weight"


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ([1, 2], "safetensors header is not a JSON object"),  # was internal error (AttributeError: 'list' ...)
        ({TENSOR: "x"}, f"tensor '{TENSOR}' has no shape of non-negative integers (got None)"),  # was a TypeError
        ({TENSOR: {"dtype": "BF16", "shape": [-5]}}, "has no shape of non-negative integers (got [-5])"),
        ({TENSOR: {"dtype": "BF16", "shape": ["5"]}}, "has no shape of non-negative integers (got ['5'])"),
        ({TENSOR: {"shape": [5]}}, f"tensor '{TENSOR}' has no dtype string (got None)"),  # was a KeyError
    ],
)
def test_a_safetensors_header_of_the_wrong_shape_is_one_line(run, tmp_path: Path, header: Any, said: str):
    path = _header_only(tmp_path / "m", header)
    line = one_error_line(run, "plan", str(path), "--chip", "l4", "--max-model-len", "4096")
    assert line.startswith(f"{path}/model.safetensors: ") and line.endswith(said)


@pytest.mark.parametrize("header", [{}, {"__metadata__": {"format": "pt"}}])
def test_a_checkpoint_without_tensors_is_refused_not_planned_weightless(run, tmp_path: Path, header: Any):
    # was 'verdict: fits' with 0.00 GiB of weights, exit 0
    path = _header_only(tmp_path / "m", header)
    line = one_error_line(run, "plan", str(path), "--chip", "l4", "--max-model-len", "4096")
    assert line == f"{path}: its *.safetensors files hold no tensors; the planner counts weights from them"


@pytest.mark.parametrize("command", ["check", "bench"])
@pytest.mark.parametrize(
    ("url", "said", "shown"),
    [
        # was: bench stored http://alice:<password>@... in summary.json and report.md, and an unreachable URL's
        # error line printed the password
        (
            "http://alice:S3cr3tPassw0rd@127.0.0.1:9",
            "the URL holds a password (user:password@)",
            "http://***@127.0.0.1:9",  # the whole userinfo: a key may stand as the user name (url_shown)
        ),
        # was: 'cannot reach http://127.0.0.1:9/?api_key=<key>/v1/models' (the path appended after the query), the
        # key printed; a server that answered had it recorded in summary.json and report.md
        (
            "http://127.0.0.1:9/?api_key=S3cr3tPassw0rd",
            "a server URL has no ?query or #fragment",
            "http://127.0.0.1:9/?***",
        ),
    ],
    ids=["password", "query"],
)
def test_a_secret_in_the_url_is_refused_and_never_printed(
    run, tmp_path: Path, command: str, url: str, said: str, shown: str
):
    line = one_error_line(run, command, url, "--out", str(tmp_path / "out"))
    assert said in line and "OPENAI_API_KEY or VLLM_API_KEY" in line  # both are read (vllm.wire.api_key_from_env)
    assert "S3cr3tPassw0rd" not in line and shown in line
    assert not (tmp_path / "out").exists()


def test_redact_hides_a_url_password_and_keeps_the_rest():
    from onechip.errors import redact

    assert (
        redact("cannot reach https://bob:p4ss@proxy:8443/v1/models")
        == "cannot reach https://bob:***@proxy:8443/v1/models"
    )
    assert (
        redact("http://bob@proxy:8443/v1 and http://127.0.0.1:8000/v1")
        == "http://bob@proxy:8443/v1 and http://127.0.0.1:8000/v1"
    )


def test_prices_refresh_says_what_it_waits_on_before_its_retries(run, monkeypatch):
    # was silent for 3 min 20 s (7 tries with backoff) against an unreachable catalog, then one error line; the
    # heartbeat that repeats a line every 10 s off a terminal had no line to repeat
    from onechip.cloud import billing

    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    code, _, err = run("prices", "refresh", "--chip", "v5e-1")
    lines = err.splitlines()
    assert code != 0 and lines[-1].startswith(
        "error: services/6F81-5844-456A/skus page 1 of the Cloud Billing Catalog: no answer from http://127.0.0.1:9"
    ), err
    assert lines[0].startswith("[prices] reading the Cloud Billing Catalog"), err


def _run_with(directory: Path, files: dict[str, str | None]) -> Path:
    """A run directory holding `files` (text; None: a directory of that name)."""
    directory.mkdir()
    for name, text in files.items():
        if text is None:
            (directory / name).mkdir()
        else:
            (directory / name).write_text(text, encoding="utf-8")
    return directory


def test_report_names_a_summary_that_is_a_directory(run, tmp_path: Path):
    # was exit 0 and "No benchmark summary in this run": the reader skipped what was not a plain file
    path = _run_with(tmp_path / "r", {"summary.json": None, "requests.jsonl": '{"ok": true}\n'})
    line = one_error_line(run, "report", str(path))
    assert line.startswith(f"summary.json could not be read: {path / 'summary.json'} is not a regular file")
    assert line.endswith(f"the report in {path} shows what could be read")


def test_report_says_requests_without_their_summary(run, tmp_path: Path):
    # was exit 0 with "No benchmark summary in this run", the measured requests.jsonl beside it unmentioned
    path = _run_with(tmp_path / "r", {"requests.jsonl": '{"ok": true}\n'})
    line = one_error_line(run, "report", str(path))
    assert line.startswith("summary.json is missing beside requests.jsonl, so its requests are not summarized")
    assert f"`onechip bench URL --resume {path}` measures it again" in line
    assert (path / "requests.jsonl").read_text(encoding="utf-8") == '{"ok": true}\n'  # kept as it was


@pytest.mark.parametrize(("given", "named"), [(["--model", "other/model"], "--model"), (["--chip", "v5e-1"], "--chip")])
def test_up_with_a_plan_refuses_a_model_or_chip_it_would_drop(run, tmp_path: Path, given: list[str], named: str):
    # was exit 0: `up --plan P --model X` served the plan's model, --model dropped without a word
    code, plan_json, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(plan_json, encoding="utf-8")
    argv = ("up", "--dry-run", "--engine", "vllm", "--plan", str(tmp_path / "plan.json"), *given)
    line = one_error_line(run, *argv)
    assert line.endswith(
        f"{named} with --plan: the plan records the model and chip it was made for; give one or the other"
    )
    code, out, err = run(*argv[:6])  # the plan alone still runs
    assert code == 0 and "--tool-call-parser hermes" in out, err


@pytest.mark.parametrize("name", ["Bad_Name!", "-token", "HF"])
def test_deploy_k8s_refuses_a_secret_name_kubernetes_would(run, tmp_path: Path, name: str):
    # was exit 0 with the name written into the Deployment's secretKeyRef, refused by the API server at apply
    line = one_error_line(run, "deploy", "k8s", "SmolLM2-135M-Instruct", "--chip", "l4", "--hf-token-secret", name,
                          "--out", str(tmp_path / "k"))  # fmt: skip
    assert "a Secret name is lower-case letters, digits, '-' and '.'" in line and not (tmp_path / "k").exists()


@pytest.mark.parametrize("flag", ["--turns", "--user-tokens", "--sessions-per-client"])
def test_simulate_refuses_agent_flags_on_a_grid_as_bench_does(run, tmp_path: Path, flag: str):
    # was exit 0: the grid was predicted and the agent flag dropped (bench refuses the same command line)
    code, plan_json, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(plan_json, encoding="utf-8")
    line = one_error_line(
        run, "simulate", "--plan", str(tmp_path / "plan.json"), flag, "3", "--out", str(tmp_path / "s")
    )
    assert line == f"{flag} shapes agent sessions: give --workload agent too" and not (tmp_path / "s").exists()


def test_mcp_help_names_the_jobs_beyond_the_first_ten(run):
    # was "Serve plan/up/status/logs/down/check/bench/cost/report/demo": 10 of the 21 tools (docs/mcp-tools.md)
    code, out, _ = run("mcp", "--help")
    assert code == 0 and all(job in out for job in ("simulate", "advise", "prices", "cloud_"))
