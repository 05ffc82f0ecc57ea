"""A typed planner option and a `--set` of the same vLLM flag (onechip.vllm.flag_table.with_sets): one line when
they disagree, even when the typed value is the option's default; nothing when they agree; and a switch left
untyped is not given (cli.options passes None for it), so a `--set` of it is planned without a word."""

from __future__ import annotations

import json

import pytest

from factories import one_error_line

SMOL = ("SmolLM2-135M-Instruct", "--chip", "l4")  # a bundled inventory: plans offline
PLAN = ("plan", *SMOL)
UP = ("up", "--engine", "vllm-docker", "--model", *SMOL, "--dry-run")  # takes the sizing options plan takes

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize(
    ("command", "typed", "item", "said"),
    [(PLAN, ("--kv-cache-dtype", "auto"), "kv-cache-dtype=fp8", "--kv-cache-dtype auto and --set kv-cache-dtype=fp8"),
     (PLAN, ("--enable-prefix-caching",), "no-enable-prefix-caching",
      "--enable-prefix-caching and --set no-enable-prefix-caching"),
     (UP, ("--no-enable-prefix-caching",), "enable-prefix-caching",
      "--no-enable-prefix-caching and --set enable-prefix-caching"),
     (UP, ("--tensor-parallel-size", "1"), "tensor-parallel-size=3",
      "--tensor-parallel-size 1 and --set tensor-parallel-size=3")],
)  # fmt: skip
def test_a_typed_option_at_its_default_and_a_disagreeing_set_is_one_line(run, command, typed, item, said) -> None:
    assert one_error_line(run, *command, *typed, "--set", item) == f"{said} disagree"


@pytest.mark.parametrize(
    ("argv", "field", "planned"),
    [(("--kv-cache-dtype", "auto", "--set", "kv-cache-dtype=auto"), "kv_cache_dtype", "auto"),
     (("--kv-cache-dtype", "fp8", "--set", "kv-cache-dtype=fp8"), "kv_cache_dtype", "fp8"),
     (("--set", "kv-cache-dtype=fp8"), "kv_cache_dtype", "fp8"),
     (("--set", "enforce-eager"), "enforce_eager", True),
     (("--set", "no-enable-prefix-caching"), "enable_prefix_caching", False)],
)  # fmt: skip
def test_an_agreeing_or_untyped_option_beside_a_set_is_planned(run, argv, field, planned) -> None:
    code, out, err = run(*PLAN, *argv, "--json")
    assert code == 0, err
    assert json.loads(out)["request"][field] == planned
