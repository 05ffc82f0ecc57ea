"""The new-user break pass r51 (2026-12-05), one regression test per finding, each failing before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize("command", ["status", "logs", "down"])
def test_onechip_home_naming_a_file_is_said_as_such(run, tmp_path: Path, monkeypatch, command: str):
    # with ONECHIP_HOME pointing at a file, the engine state read raised NotADirectoryError, taken as 'engine state
    # HOME/engine.json is unreadable; check `ps` for a vLLM server, stop it, then delete the file' (exit 5): a file
    # that is not there, and nothing about the home
    home = tmp_path / "home-file"
    home.write_text("not a folder\n")
    monkeypatch.setenv("ONECHIP_HOME", str(home))
    line = one_error_line(run, command)
    assert f"{home} is a file, not a folder; point ONECHIP_HOME at a folder" in line, line
    assert home.read_text() == "not a folder\n"


LOG = Path(__file__).parents[2] / "fixtures" / "bootlogs" / "a100-llama31-8b-len131072-util092-v0310.log"
DEPLOYMENT = ("plan", "llama-3.1-8b-instruct", "--chip", "a100-80gb", "--engine-version", "0.31.0")


def test_a_plan_that_does_not_fit_is_compared_with_a_log_that_did(run):
    # a plan of 0 KV tokens (utilization 0.1 leaves no pool) against a real boot: internal error (ZeroDivisionError)
    # in the cross-check's share of the difference, exit 1
    code, out, err = run(*DEPLOYMENT, "--set", "gpu-memory-utilization=0.1", "--against", str(LOG))
    assert code == 10 and "Traceback" not in err and "internal error" not in err, err
    assert "KV tokens: planned 0, reported 460,496 (+460,496)" in " ".join(out.split()), out


def test_a_token_line_of_no_token_is_not_remembered(run, tmp_path: Path, offline_home: Path):
    # a log whose token line says 0 tokens was stored as the deployment's measured boot: every later plan of it
    # said 'does not fit: ... the pool holds 0.00 GiB (0 tokens)', and one --against a real log then crashed
    log = tmp_path / "zero.log"
    log.write_text(LOG.read_text().replace("460,496 tokens", "0 tokens"))
    code, out, _ = run(*DEPLOYMENT, "--set", "gpu-memory-utilization=0.92", "--against", str(log))
    assert code == 0 and "its KV token line holds no token" in " ".join(out.split()), out
    assert not (offline_home / "measured-boots").exists() or not any((offline_home / "measured-boots").iterdir())
    code, out, _ = run(*DEPLOYMENT, "--set", "gpu-memory-utilization=0.92", "--json")
    assert code == 0 and '"fits": true' in out


def test_a_stored_boot_of_no_token_is_not_read(tmp_path: Path):
    # one an earlier onechip stored (above) is ignored, not planned from
    from onechip.planner import calibration
    from onechip.schemas.plan import MeasuredBoot

    boot = MeasuredBoot(
        key="k", date="2026-12-05", utilization=0.92, requested_bytes=78_188_720_947, weights_bytes=16_094_076_928,
        kv_cache_bytes=0, kv_cache_tokens=0, overhead_bytes=62_094_644_019,
    )  # fmt: skip
    (tmp_path / calibration.file_name("k")).write_text(boot.model_dump_json())
    assert calibration.load(tmp_path, "k") is None
    (tmp_path / calibration.file_name("k")).write_text(
        boot.model_copy(update={"kv_cache_tokens": 16}).model_dump_json()
    )
    assert calibration.load(tmp_path, "k") is not None


@pytest.mark.parametrize("chip", ["gpu:0.00000000001GiB", "gpu:0.0000000001GB"])
def test_a_card_of_less_than_a_byte_is_no_size(run, chip: str):
    # rounded to 0 bytes, it was planned as a catalog card without a figure: 'chip gpu:...GiB has no memory figure in
    # accelerators.json; pass --kv-cache-memory'
    line = one_error_line(run, "plan", "llama-3.1-8b-instruct", "--chip", chip)
    assert line == f"chip '{chip}': a card's memory is more than 0 GiB; give the size it has, e.g. gpu:24GiB", line


def test_a_tpu_plan_short_of_one_request_writes_its_numbers_as_every_other_figure():
    # the TPU verdict wrote 'the KV pool holds 112896 tokens, less than one 131072-token request' where every other
    # line of the plan (and the GPU verdict) groups thousands: 112,896 and 131,072
    from onechip import api
    from onechip.schemas.requests import PlanRequest

    plan = api.plan(PlanRequest(model="llama-3.1-8b-instruct", chip="v6e-1"))
    assert plan.verdict == (
        f"does not fit: the KV pool holds {plan.kv_tokens:,} tokens, less than one {plan.max_model_len:,}-token request"
    )
    assert plan.kv_tokens >= 1000 and plan.max_model_len == 131_072  # Llama 3.1's max_position_embeddings


def test_advise_writes_a_thousand_clients_as_one_thousand(run):
    # the title read '16 tokens x 1000 clients'
    code, out, err = run(
        "advise", "llama-3.1-8b-instruct", "--workload", "ctx=16,clients=1000,output_tokens=1", "--chips", "h100"
    )
    assert code == 0, err
    assert "16 tokens x 1,000 clients, 1 output token" in out and "1 output tokens" not in out, out  # plural


@pytest.mark.parametrize(("option", "value"), [("--kv-cache-memory", "10GiB"), ("--kv-cache-memory", "8 GB"),
                                               ("--max-model-len", "32KiB")])  # fmt: skip
def test_a_size_with_a_unit_word_says_how_vllm_writes_it(run, option: str, value: str):
    # '--kv-cache-memory 10GiB' (as --chip gpu:24GiB is written) was 'Input should be a valid integer, unable to parse
    # string as an integer'; `--set kv-cache-memory=10GiB` already said how vLLM's human_readable_int reads it
    line = one_error_line(run, "plan", "llama-3.1-8b-instruct", "--chip", "h100", option, value)
    assert "write a whole number, or one with a suffix k, m, g, t (10**3 ...) or K, M, G, T (2**10 ..." in line, line


def test_an_mcp_heap_cap_below_what_the_server_holds_is_refused_in_one_line(tmp_path: Path):
    # ONECHIP_MCP_MEMORY_GIB=0.0001 capped the heap below what the process held: 'memory allocation of 1 bytes failed'
    # twice and SIGABRT (exit 134) before the server answered anything
    import os
    import subprocess
    import sys

    src = Path(__file__).parents[3] / "src"  # this checkout's onechip, wherever the test runs from
    env = {**os.environ, "PYTHONPATH": str(src), "ONECHIP_MCP_MEMORY_GIB": "0.0001", "ONECHIP_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "onechip", "mcp"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: $ONECHIP_MCP_MEMORY_GIB caps the server at 0.0001 GiB, less than the ")
    assert done.stderr.count("\n") == 1 and "(VmData); give more" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("text", "why"), [('{"garbage":', "not JSON"), ('{"schema_version": "1"}', "not a catalog read this onechip reads")]
)
def test_a_stored_catalog_read_that_cannot_be_read_is_said(run, text: str, why: str):
    # `prices` said 'no catalog read stored: prices.json only' of a damaged read (or one another onechip wrote) and
    # priced from prices.json without a word about the file
    from onechip.cloud import billing

    path = billing.store_path()  # conftest points it into a tmp dir
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    code, out, err = run("prices")
    said = " ".join(out.split())
    assert code == 0 and "no catalog read stored" not in said, out
    assert f"warning the catalog read stored at {path} cannot be read ({why}), so prices.json alone prices" in said
    assert path.read_text() == text  # kept as it was, for the user to look at
