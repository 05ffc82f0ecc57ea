"""Regression tests for the items the 2026-12-02 closing note listed as noticed and not fixed, and for what a
new user's bad inputs turned up afterwards: each a one-line error naming what the user typed, or a value
printed as the user wrote it."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import gpt_oss_checkpoint, one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")


def test_an_unknown_chip_names_the_flag_it_came_by(run) -> None:
    # advise takes --chips (a list); plan takes --chip: the shared resolver named --chip for both
    line = one_error_line(run, "advise", "google/gemma-4-E2B-it", "--chips", "v5e-1,nonexistent")
    assert line.startswith("unknown chip 'nonexistent' (--chips):") and line.endswith(
        "or local for the host's own card"
    )
    assert "--chip)" not in line and "--chip " not in line
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", "nonexistent")
    assert line.startswith("unknown chip 'nonexistent' (--chip):") and line.endswith("or local for the host's own card")


@pytest.mark.parametrize(("typed", "printed"), [("30", "30"), ("2.5", "2.5"), ("0.75", "0.75")])
def test_cpu_offload_gb_is_printed_as_typed(run, typed: str, printed: str) -> None:
    # the float field held 30.0 and the command said --cpu-offload-gb 30.0 where the user wrote 30
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--cpu-offload-gb", typed)
    assert code == 0, err
    said = [line.split("#")[0].strip() for line in out.splitlines() if "--cpu-offload-gb" in line]
    assert f"--cpu-offload-gb {printed}" in said, said  # the serve flag's own line
    assert f"--cpu-offload-gb {printed}.0" not in out


@pytest.mark.parametrize(
    "argv",
    [
        ("cost", "--chip", "tpu7x", "--output-tok-per-s", "100"),
        ("prices", "--chip", "tpu7x"),  # an alias, as cost takes it (prices did not resolve aliases)
    ],
)
def test_tpu7x_has_no_price_and_says_why(run, argv) -> None:
    # no public list price exists (cloud.google.com/tpu/docs/tpu7x: GKE only, 'contact your account team'):
    # the one line says so rather than only listing the priced chips, and no price is made up
    line = one_error_line(run, *argv)
    assert "'tpu7x-1'" in line and "Google publishes no list price for TPU7x" in line
    assert "contact your account team" in line and "onechip prices refresh" in line


def test_prices_of_a_slice_are_its_one_chip_siblings_as_cost_bills_them(run) -> None:
    # accelerators.json v5e-8 price_chip v5e-1 (cost.billed_as): `cost --chip v5e-8` priced 8 x v5e-1, and
    # `prices --chip "tpu v5e-8"` said 'no price for chip v5e-8' (found by helper break7)
    code, out, err = run("prices", "--chip", "tpu v5e-8")
    assert code == 0, err
    assert "v5e-8 is billed as 8 x v5e-1 per chip-hour" in out and "v5e-1" in out.split("prices on")[1]
    # a region without its sibling's price names the slice asked for too (it named only v5e-1)
    line = one_error_line(run, "prices", "--chip", "v5e-8", "--region", "europe-west4")
    assert "no price for chip 'v5e-1' in region 'europe-west4'" in line
    assert line.endswith("; v5e-8 is billed as 8 x v5e-1 per chip-hour")


def test_a_release_before_the_architecture_is_one_line(run, tmp_path: Path) -> None:
    # vLLM's model registry (catalog/vllm_architectures.json, generated from each release's sdist): Gemma 4 first
    # in 0.19.0, gpt-oss in 0.10.1; 0.7.1 was planned as if it served Gemma 4, and 0.9.2 refused gpt-oss with the
    # V0 engine's reason, as if the release had the model
    line = one_error_line(run, "plan", "google/gemma-4-E2B-it", "--chip", "l4", "--engine-version", "0.7.1")
    assert line.startswith("vLLM 0.7.1 does not serve Gemma4ForConditionalGeneration: ")
    assert "first in vLLM 0.19.0" in line and line.endswith("plan --engine-version 0.19.0 or later")
    model = str(gpt_oss_checkpoint(tmp_path / "gpt-oss-20b"))
    line = one_error_line(run, "plan", model, "--chip", "h100", "--engine-version", "0.9.2")
    assert line.startswith("vLLM 0.9.2 does not serve GptOssForCausalLM: ") and "first in vLLM 0.10.1" in line
    assert "V0" not in line


@pytest.mark.parametrize("item", ["=5", ""])
def test_a_set_with_no_flag_name_says_so(run, item: str) -> None:
    # new-user test of 2026-12-02: `--set =5` answered "--set '': expected ...", naming an empty flag
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--set", item)
    assert line == "--set: an item with no flag name: expected FLAG=VALUE, FLAG, FLAG= or ENV_NAME=VALUE"
