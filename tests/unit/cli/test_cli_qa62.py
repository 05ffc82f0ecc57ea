"""The CLI as a user finds it (helper cliqa62): one regression test per finding, each failing before its fix."""

from __future__ import annotations

import re

import pytest

from factories import one_error_line
from onechip.cli.check_cmd import check_tables
from onechip.schemas.checks import CheckReport, CheckResult

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.fixture
def plan_file(run, tmp_path):
    code, out, err = run("plan", "gemma-4-E2B-it", "--chip", "v5e-1", "--max-model-len", "8192", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(out)
    return tmp_path / "plan.json"


@pytest.mark.parametrize("where", ["missing", "file"])
def test_a_run_directory_that_is_not_one_names_the_flag_it_came_from(run, tmp_path, plan_file, where):
    # 'run directory nope does not exist or is not a directory': every other refusal of --calibrate / --run /
    # --compare names the flag ('--calibrate D: no bench summary.json there'); this one did not say which
    path = str(tmp_path / "nope") if where == "missing" else str(plan_file)
    argvs = {
        "--calibrate": ["simulate", "--plan", str(plan_file), "--calibrate", path, "--out", str(tmp_path / "s")],
        "--run": ["cost", "--chip", "v5e-1", "--run", path],
        "--compare": ["report", str(tmp_path), "--compare", path],
    }
    for flag, argv in argvs.items():
        line = one_error_line(run, *argv)
        assert line.startswith(f"{flag} {path}: "), line


def test_advise_says_one_client_and_one_output_token_in_the_singular(run) -> None:
    # 'gemma-4-E2B-it: 1 tokens x 1 clients, 1 output tokens': plurals (schemas.common.plural)
    code, out, err = run("advise", "gemma-4-E2B-it", "--chips", "v5e-1",
                         "--workload", "ctx=1,clients=1,output_tokens=1")  # fmt: skip
    assert code == 0, err
    text = " ".join(out.split())
    assert "gemma-4-E2B-it: 1 token x 1 client, 1 output token" in text, text
    assert not re.search(r"\b1 (tokens|clients|output tokens)\b", text), text


def test_a_long_check_note_is_cut_at_a_word_with_an_ellipsis_and_kept_whole_in_the_report() -> None:
    # the verdict table cut a note at 90 characters mid-word ('... your prompt con'), with no mark it was cut
    note = "This model's maximum context length is 4096 tokens. However, your prompt contains 5000 tokens in all."
    report = CheckReport(base_url="http://127.0.0.1:1", model="m", results=[
        CheckResult(domain="tool_calling", verdict="blocked", note=note)])  # fmt: skip
    cell = check_tables(report)[0].columns[3]._cells[0]
    assert cell.endswith("…") and len(cell) <= 90, cell
    assert note.startswith(cell.removesuffix("…")) and note[len(cell) - 1] == " ", cell  # cut where a word ends
    assert report.results[0].note == note  # checks.json keeps it whole
