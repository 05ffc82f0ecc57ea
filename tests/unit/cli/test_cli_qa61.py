"""The CLI and MCP as a new user and as an agent (helper cliqa61): one regression test per finding, each failing
before its fix."""

from __future__ import annotations

import json
import re

import pytest
import typer

from factories import one_error_line
from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.cli.main import app
from onechip.errors import ConfigError
from onechip.schemas.requests import DeployK8sRequest, PlanRequest, UpRequest
from onechip.vllm import flag_table

pytestmark = pytest.mark.usefixtures("offline_home")

# The seed's deployment (gemma-4-E2B-it on v5e-1), as test conftest's SEED_PLAN plans it.
SEED = ["google/gemma-4-E2B-it", "--chip", "v5e-1", "--max-model-len", "32768"]
# Llama-3.1-8B-Instruct on one L4 at its 131,072-token length: one request needs 16.00 GiB of KV, the pool holds
# 3.41 GiB (the plan's verdict; planner test_a_length_that_does_not_fit_names_the_longest_that_does)
UNFIT = ["Llama-3.1-8B-Instruct", "--chip", "l4"]


@pytest.mark.parametrize(
    ("items", "named"),
    [
        (["max-num-seqs=64", "max_num_seqs=32"], "max-num-seqs"),  # vLLM reads '_' in a flag name as '-'
        (["enforce-eager", "--enforce-eager=false"], "enforce-eager"),
        (["block-size=", "block-size=32"], "block-size"),
        (["VLLM_TPU_BUCKET_PADDING_GAP=64", "VLLM_TPU_BUCKET_PADDING_GAP=128"], "VLLM_TPU_BUCKET_PADDING_GAP"),
    ],
)
def test_one_flag_twice_in_sets_is_refused_naming_both(run, items: list[str], named: str) -> None:
    # `plan --set max-num-seqs=64 --set max-num-seqs=32` planned 32 without a word (vLLM's argparse keeps the last
    # of a flag given twice, so the first was silently dropped)
    argv = [arg for item in items for arg in ("--set", item)]
    line = one_error_line(run, "plan", *SEED, *argv)
    assert line == f"--set {named} is given twice ({items[0]!r} and {items[1]!r}); give it once", line


def test_a_plan_parses_its_sets_once(monkeypatch) -> None:
    # planner_values, with_sets, auto_max_model_len, the planner's gdn and quantization reads and serve_flags each
    # parsed the same `--set` list again (6 times a call); secret_finder runs once a parse
    parses = []
    real = flag_table.secret_finder
    monkeypatch.setattr(flag_table, "secret_finder", lambda *given: parses.append(1) or real(*given))
    sets = ["max-num-seqs=48", "disable-log-stats", "VLLM_CLIQA61_ONCE=1"]  # a list no other test parses
    api.plan(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=32768, sets=sets))
    assert len(parses) == 1


def test_up_with_a_plan_file_takes_a_new_set_of_a_flag_the_plan_was_printed_with(run, tmp_path) -> None:
    # a plan printed with --set max-num-seqs=64, served by `up --plan P --set max-num-seqs=32`: the new value wins (it
    # re-plans), not a 'given twice' refusal of items the user typed on two command lines
    code, out, err = run("plan", *SEED, "--set", "max-num-seqs=64", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(out)
    code, out, err = run("up", "--engine", "vllm", "--plan", str(tmp_path / "plan.json"), "--set", "max-num-seqs=32",
                         "--dry-run", "--json")  # fmt: skip
    assert code == 0, err
    words = json.loads(out)["launch"]["commands"][-1].split()
    assert words[words.index("--max-num-seqs") + 1] == "32" and words.count("--max-num-seqs") == 1


def test_plan_exits_10_when_the_verdict_is_does_not_fit(run) -> None:
    # `plan M --chip C && up ...` went on to boot what the plan itself says the engine refuses: exit 0 for 'does not
    # fit'. As `check` gates a pipeline (exit 10: it ran and a verdict did not pass), the plan is printed whole and
    # then the exit is 10; with --json stdout holds the Plan alone
    code, out, err = run("plan", *UNFIT)
    assert code == 10 and "verdict: does not fit" in out, err
    assert err.strip().splitlines()[-1].startswith("error: the plan does not fit"), err
    code, out, err = run("plan", *UNFIT, "--json")
    assert code == 10 and json.loads(out)["fits"] is False
    code, _, err = run("plan", *SEED)
    assert code == 0, err


def test_plan_help_and_readme_say_its_exit_codes(run) -> None:
    from pathlib import Path

    code, out, _ = run("plan", "--help")
    words = " ".join(re.sub("[│╭╮╰╯─]", " ", out).split())
    assert code == 0 and "Exit 0: it fits; 10: the verdict is does not fit" in words, words[:400]
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    assert "`onechip plan` exits **10** when its verdict is 'does not fit'" in readme


def test_refusals_of_a_plan_that_does_not_fit_name_the_longest_length_that_fits(run, tmp_path) -> None:
    # `up` / `deploy k8s` ended 'change the flags' where the plan's note max-model-len-longest-fit names the length
    # (27,904 tokens for Llama-3.1-8B on an L4: the planner's auto-fit search, as vLLM's own refusal names it)
    plan = api.plan(PlanRequest(model="Llama-3.1-8B-Instruct", chip="l4"))
    longest = plan.longest_fit_max_model_len
    note = next(w.message for w in plan.warnings if w.code == flag_table.LONGEST_FIT)
    assert longest is not None and f"the longest that fits is {longest:,} tokens" in note
    said = f"give --set max-model-len={longest}, the longest length that fits"
    with pytest.raises(ConfigError, match=re.escape(said)):
        api.up(UpRequest(engine="vllm", model="Llama-3.1-8B-Instruct", chip="l4"))
    with pytest.raises(ConfigError, match=re.escape(said)):
        api.up(UpRequest(engine="vllm", model="Llama-3.1-8B-Instruct", chip="l4", replicas=2, host="a@h1,a@h2"))
    request = DeployK8sRequest(model="Llama-3.1-8B-Instruct", chip="l4", replicas=1, out=tmp_path / "k8s")
    with pytest.raises(ConfigError, match=re.escape(said)):
        api.deploy_k8s(request)
    # the demo has no length flag: it names the `up` that serves the longest length, before anything is created
    code, _, err = run("demo", "--engine", "vllm", "--model", "Llama-3.1-8B-Instruct", "--chip", "l4",
                       "--out", str(tmp_path / "demo"))  # fmt: skip
    assert (
        code == 2
        and (
            f"the longest length that fits is {longest:,} tokens, which the demo cannot set: serve it with `onechip up "
            f"--engine vllm --model Llama-3.1-8B-Instruct --chip l4 --set max-model-len={longest}`"
        )
        in err
    ), err
    assert not (tmp_path / "demo").exists()
    # refused where no length is known to fit: the words say what limits it, not 'change the flags'
    with pytest.raises(ConfigError) as other:
        api.up(UpRequest(engine="vllm", model="gemma-4-E2B-it", chip="v5e-1", sets=["gpu-memory-utilization=0.1"]))
    assert "change the flags" not in str(other.value) and "binding limit: weights" in str(other.value)


def test_progress_lines_count_one_request_and_one_client_in_the_singular(run, tmp_path) -> None:
    # '[bench] context 16 x 1 clients', '16 x 1: 1 requests, ...': plurals (schemas.common.plural)
    with FakeVllm(ttft_s=0.001, itl_s=0.001) as srv:
        argv = ["--contexts", "16", "--clients", "1", "--reps", "1", "--output-tokens", "2"]
        argv += ["--requests-per-client", "1", "--warmup-requests", "0", "--out", str(tmp_path / "b")]
        code, _, err = run("bench", srv.url, *argv)
    assert code == 0, err
    assert re.search(r"x 1 client[,:]", err) and ": 1 request, " in err, err
    assert not re.search(r"\b1 (clients|requests)\b", err), err


def _flags(command: list[str]) -> list[str]:
    root = typer.main.get_command(app)
    ctx = root.make_context("onechip", [*command, "--help"], resilient_parsing=True)
    group = root
    for word in command:
        group = group.get_command(ctx, word)  # type: ignore[attr-defined]
    return [f for p in group.params for f in (*p.opts, *p.secondary_opts) if "--" in f]


@pytest.mark.parametrize(
    "command",
    [["plan"], ["up"], ["bench"], ["cost"], ["simulate"], ["advise"], ["check"], ["cloud", "up"], ["deploy", "k8s"]],
)
def test_help_at_40_columns_shows_every_flag_whole(run, monkeypatch, command: list[str]) -> None:
    # COLUMNS=40 (laid out at render.MIN_WIDTH, 50): typer's name column got 10 characters, '--router-p…', '--tensor-p…'
    flags = _flags(command)
    monkeypatch.setenv("COLUMNS", "40")
    code, out, _ = run(*command, "--help")
    assert code == 0
    cut = [f for f in flags if not re.search(re.escape(f) + r"(?![\w…-])", out)]
    assert not cut and "…" not in out, (cut, out)


def test_plan_help_says_nothing_of_code_a_user_does_not_write(run) -> None:
    # --enable-prefix-caching's help said 'None (a PlanRequest built in code)': no CLI user builds one
    code, out, _ = run("plan", "--help")
    assert code == 0 and "PlanRequest" not in out


def test_a_set_of_what_each_replica_is_pinned_by_is_refused_naming_it(run) -> None:
    # `--replicas 4 --set TPU_VISIBLE_CHIPS=0` on a v5e-4: each replica's own pin followed it, so the variable was
    # given twice and the user's value dropped without a word (replicas.pins sets it per replica)
    line = one_error_line(run, "plan", "gemma-4-E2B-it", "--chip", "v5e-4", "--replicas", "4",
                          "--set", "TPU_VISIBLE_CHIPS=0")  # fmt: skip
    assert line == (
        "--set TPU_VISIBLE_CHIPS=0: onechip sets TPU_VISIBLE_CHIPS for each of the 4 replicas itself (its share of "
        "this machine); leave it out"
    )


@pytest.mark.parametrize("item", ["-1", "0", "1e300", "5parsecs"])
def test_a_set_item_that_is_a_number_is_no_flag(run, item: str) -> None:
    # `--set -1` printed the command with '--1' ('--set 1e300': '--1e300'), a flag vLLM does not have and no flag
    # name can be (a flag begins with a letter)
    line = one_error_line(run, "plan", *SEED, "--set", item)
    assert line == f"--set {item!r}: expected FLAG=VALUE, FLAG, FLAG= or ENV_NAME=VALUE", line
