"""The CLI as a user would break it (helper qa61b): one regression test per finding, each failing before its fix."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("offline_home")

# The seed's deployment (gemma-4-E2B-it on v5e-1), as test_cli_qa61's SEED
SEED = ["google/gemma-4-E2B-it", "--chip", "v5e-1", "--max-model-len", "32768"]


def test_up_with_a_plan_file_takes_the_no_form_of_a_switch_the_plan_was_printed_with(run, tmp_path) -> None:
    # a plan printed with --set enable-prefix-caching, served by `up --plan P --set no-enable-prefix-caching`: the
    # --no- form sets the same flag (vLLM's argparse.BooleanOptionalAction), so up's wins as for any flag given again
    # (flag_table.set_name), not both passed with vLLM keeping whichever came last
    code, out, err = run("plan", *SEED, "--set", "enable-prefix-caching", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(out)
    code, out, err = run("up", "--engine", "vllm", "--plan", str(tmp_path / "plan.json"), "--set",
                         "no-enable-prefix-caching", "--dry-run", "--json")  # fmt: skip
    assert code == 0, err
    words = json.loads(out)["launch"]["commands"][-1].split()
    assert "--no-enable-prefix-caching" in words and "--enable-prefix-caching" not in words
