"""Issue 25, one regression test per wrong result (the fuzz table, test_fuzz_bad_inputs.py, checks that each
is one line; these check the line says the right thing and nothing is left half-written): a GGUF file, a
UTF-16 config, a config with 10**9 layers, a binary or endless trace, a plan JSON with block_size 0 or that
does not fit, `advise` when nothing fits, `report --compare` on a damaged run and NaN in a compared run, a
full disk under `check --out` and under every atomic write, and the locks."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path

import pytest

from factories import one_error_line
from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.bench import trace
from onechip.errors import BusyError, ConfigError
from onechip.paths import exclusive, write_text_atomic
from onechip.report.compare import _cell_row, within_noise
from onechip.schemas import CellResult
from onechip.schemas.requests import PlanRequest
from onechip.schemas.run import RUN_FILES

LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}


pytestmark = pytest.mark.usefixtures("offline_home")


def _plan_file(tmp_path: Path, name: str, **change: object) -> Path:
    plan = json.loads(api.plan(PlanRequest(model="gemma-4-E2B-it", chip="v5e-1")).model_dump_json())
    path = tmp_path / name
    path.write_text(json.dumps({**plan, **change}))
    return path


def test_a_gguf_file_is_named_as_gguf_with_what_to_do(run, tmp_path: Path) -> None:
    gguf = tmp_path / "smollm2.q8"  # known by its magic (ggml docs/gguf.md), whatever its name
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(16))
    line = one_error_line(run, "plan", str(gguf), "--chip", "cpu")
    assert line.startswith(f"model '{gguf}' is a GGUF file (llama.cpp's format)") and "save_pretrained" in line


def test_a_utf16_config_is_one_line_saying_utf16(run, tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(LLAMA), encoding="utf-16")
    line = one_error_line(run, "plan", str(tmp_path / "m"), "--chip", "l4")
    assert (
        line
        == f"{tmp_path / 'm' / 'config.json'}: UTF-16 text; transformers and vLLM read it as UTF-8: save it as UTF-8"
    )


def test_a_config_with_a_billion_layers_is_refused_before_any_allocation(run, tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({**LLAMA, "num_hidden_layers": 10**9}))
    line = one_error_line(run, "plan", str(tmp_path / "m"), "--chip", "l4")
    assert "field 'num_hidden_layers' is 1,000,000,000" in line and "at most 1,024" in line


def test_traces_that_are_binary_endless_or_too_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "t.bin"
    binary.write_bytes(b"\x00\x01\xff\xfe")
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 2\); a trace is JSONL"):
        trace.load_trace(binary)
    endless = tmp_path / "t.jsonl"
    endless.write_text(
        '{"timestamp": 0, "input_length": 8, "output_length": 4}\n'
        '{"timestamp": 1000000, "input_length": 8, "output_length": 4}\n'
    )
    items = trace.load_trace(endless)
    assert trace.offsets_s(items, 1.0) == [0.0, 1000.0]  # 10**6 ms
    with pytest.raises(ConfigError, match=r"replays over 1,000,000 s at --trace-speed 0.001; at most 604,800 s"):
        trace.offsets_s(items, 0.001)
    monkeypatch.setattr(trace, "MAX_REQUESTS", 1)
    with pytest.raises(ConfigError, match="2 lines; at most 1 requests"):
        trace.load_trace(endless)


def test_simulate_refuses_a_plan_with_block_size_0_or_one_that_does_not_fit(run, tmp_path: Path) -> None:
    zero = _plan_file(tmp_path, "b0.json", block_size=0)
    assert one_error_line(run, "simulate", "--plan", str(zero)) == (
        f"--plan {zero}: not a usable plan: block_size 0 (at least 1); make it again with `onechip plan`"
    )
    real = api.plan(PlanRequest(model="gemma-4-E2B-it", chip="v5e-1", utilization=0.3))
    assert not real.fits and real.kv_pool_bytes < 0  # a real plan that does not fit: a negative pool is fine
    nofit = tmp_path / "nofit.json"
    nofit.write_text(real.model_dump_json())
    assert one_error_line(run, "simulate", "--plan", str(nofit)) == (
        f"--plan {nofit}: the plan does not fit ({real.verdict}); nothing to predict: plan it again and "
        f"{real.fit_hint('--max-model-len {}')}"
    )
    assert not (tmp_path / "runs").exists()


def test_advise_exits_non_zero_when_nothing_fits(run) -> None:
    # a 10M-token context is past Gemma 4 E2B's 131,072 max_position_embeddings: no chip can serve it
    line = one_error_line(
        run, "advise", "gemma-4-E2B-it", "--workload", "ctx=10000000,clients=4096", "--chips", "v5e-1"
    )
    # two deployments considered on v5e-1: one engine, and two one-chip replicas (advise's replicas row)
    assert line == "gemma-4-E2B-it: none of the 2 deployments considered fits; reasons above"


def test_advise_where_no_plan_fits_exits_10_as_plan_does(run) -> None:
    # Llama 3.1 8B's 14.96 GiB of bf16 weights exceed v5e-1's 14.49 GiB cap: `plan` says 'does not fit' and exits 10
    # (README's exit codes, errors.DoesNotFit); advise said the same of both deployments and exited 2, bad input's
    # code (fp8load69). A request past the model's positions (the test above) is bad input to both: exit 2
    argv = ("Llama-3.1-8B-Instruct", "--workload", "ctx=1024,clients=4", "--chips", "v5e-1")
    assert one_error_line(run, "plan", argv[0], "--chip", "v5e-1", code=10).startswith("the plan does not fit")
    line = one_error_line(run, "advise", *argv, code=10)
    assert line == "Llama-3.1-8B-Instruct: none of the 2 deployments considered fits; reasons above"
    # --json: the Advice is printed first, and nothing is added after it (cli.main: stdout stays one JSON document)
    code, out, _ = run("advise", *argv, "--json")
    rows = json.loads(out)["rows"]
    assert code == 10 and len(rows) == 2 and [r["planned_fits"] for r in rows] == [False, False]


def test_advise_tells_plans_that_fit_but_were_not_predicted_from_no_fit(run) -> None:
    # GB10 has no peak_bf16_tflops (accelerators.json): both deployments plan (at the start utilization) and
    # fit, but no roofline prior predicts them; the line said 'fits no chip' and counted 2 for one chip given
    line = one_error_line(run, "advise", "Llama-3.1-8B-Instruct", "--workload", "ctx=1024,clients=4", "--chips", "gb10")
    assert (
        line == "Llama-3.1-8B-Instruct: none of the 2 deployments considered could be predicted (2 fit); reasons above"
    )


def test_report_compare_refuses_a_truncated_summary(run, tmp_path: Path) -> None:
    this = tmp_path / "this"
    this.mkdir()
    (this / RUN_FILES["manifest"]).write_text('{"run_id": "this"}')
    other = tmp_path / "other"
    other.mkdir()
    (other / RUN_FILES["bench"]).write_text('{"tool_version": "0.1", "cells": [')
    line = one_error_line(run, "report", str(this), "--compare", str(other))
    assert line.startswith(f"--compare {other}: summary.json")
    assert not (this / "report.md").exists()  # refused before anything was written


def test_nan_is_never_beyond_cv() -> None:
    ok = CellResult(context_tokens=128, clients=1, status="ok", output_tok_per_s=100.0, cv_output_tok_per_s=0.02)
    nan = ok.model_copy(update={"output_tok_per_s": math.nan})
    assert _cell_row(128, 1, ok, nan)[-1] == "not comparable"
    assert within_noise(math.nan, 0.02, 0.02) is None and within_noise(1.5, math.nan, 0.02) is None
    assert within_noise(1.5, 0.02, 0.02) is False  # a real difference still is one


def _disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)


def test_a_full_disk_leaves_the_old_file_and_names_the_path(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old")
    _disk_full(monkeypatch)
    with pytest.raises(OSError) as info:
        write_text_atomic(target, "new")
    assert info.value.filename == str(target) and info.value.strerror == "No space left on device"
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_check_out_on_a_full_disk_leaves_no_checks_json_to_block_the_directory(run, tmp_path, monkeypatch) -> None:
    out = tmp_path / "out"
    with FakeVllm([Reply("The capital of France is Paris.")] * 4) as srv:
        _disk_full(monkeypatch)
        line = one_error_line(run, "check", srv.url, "--only", "smoke", "--out", str(out), code=1)
        monkeypatch.undo()
        assert line == f"{out / 'checks.json'}: No space left on device"
        assert not (out / "checks.json").exists() and not list(out.glob(".*tmp"))
        code, _, err = run("check", srv.url, "--only", "smoke", "--out", str(out))  # the directory is usable
    assert (out / "checks.json").is_file(), err


def test_the_lock_refuses_a_second_holder_and_frees_on_exit(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with exclusive(run_dir, "busy: run"):  # a directory is locked as itself: nothing is written into it
        with pytest.raises(BusyError, match="^busy: run$"), exclusive(run_dir, "busy: run"):
            pass
        assert list(run_dir.iterdir()) == []
    with exclusive(run_dir, "busy: run"):  # released
        pass
    with exclusive(tmp_path / "home" / "engine.lock", "busy: state"):  # a file path is a lock file
        with pytest.raises(BusyError), exclusive(tmp_path / "home" / "engine.lock", "busy: state"):
            pass


def test_simulate_refusing_a_plan_that_does_not_fit_names_the_longest_length_that_fits(run, tmp_path: Path) -> None:
    # cards63: `simulate --plan` said only 'nothing to predict' where the plan knows the length that fits (its
    # longest_fit_max_model_len: 27,904 tokens for Llama-3.1-8B on an L4, the planner's auto-fit search), which
    # `plan`'s own refusal names (Plan.fit_hint): the same words, spelled as `plan` takes the length
    real = api.plan(PlanRequest(model="Llama-3.1-8B-Instruct", chip="l4"))
    longest = real.longest_fit_max_model_len
    assert not real.fits and longest is not None
    nofit = tmp_path / "nofit.json"
    nofit.write_text(real.model_dump_json())
    assert one_error_line(run, "simulate", "--plan", str(nofit)) == (
        f"--plan {nofit}: the plan does not fit ({real.verdict}); nothing to predict: plan it again and give "
        f"--max-model-len {longest}, the longest length that fits"
    )
