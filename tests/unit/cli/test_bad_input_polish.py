"""Polish of 2026-12-02 (third session), one regression test per finding: `up` takes the sizing options `plan`
takes (one definition), list options refuse an empty list, `cost` prices a multi-chip slice as `advise` does,
a version older than every rule is said."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from factories import one_error_line

SMOL = ("SmolLM2-135M-Instruct", "--chip", "l4")  # a bundled inventory: plans offline


pytestmark = pytest.mark.usefixtures("offline_home")


def _serve_line(text: str) -> str:
    """The `vllm serve` words of the docker command in `text` (plan prints it, `up --dry-run` wraps it)."""
    flat = " ".join(text.split())
    found = re.search(r"--entrypoint vllm (\S+ serve .*?--port \d+)", flat)
    assert found, flat
    return found.group(1)


@pytest.mark.parametrize(
    "sizing",
    [("--tensor-parallel-size", "3"), ("--enforce-eager",), ("--text-only",),
     ("--tensor-parallel-size", "3", "--enforce-eager", "--text-only")],
)  # fmt: skip
def test_up_takes_the_sizing_options_plan_takes_and_prints_the_same_command(run, sizing) -> None:
    # SmolLM2 has 9 heads: TP 3 divides them. `up` used to say "No such option" for all three, so a plan made
    # with them printed a command `up` could not be asked for
    code, plan_out, err = run("plan", *SMOL, "--launch", "vllm-docker", *sizing)
    assert code == 0, err
    code, up_out, err = run("up", "--engine", "vllm-docker", "--model", *SMOL, "--dry-run", *sizing)
    assert code == 0, err
    assert _serve_line(up_out + err) == _serve_line(plan_out)
    if "--tensor-parallel-size" in sizing:
        assert "--tensor-parallel-size 3" in _serve_line(up_out)
    if "--enforce-eager" in sizing:
        assert "--enforce-eager" in _serve_line(up_out)


def test_up_sizing_option_and_a_disagreeing_set_is_one_line(run) -> None:
    line = one_error_line(
        run, "up", "--engine", "vllm-docker", "--model", *SMOL, "--dry-run",
        "--tensor-parallel-size", "3", "--set", "tensor-parallel-size=9",
    )  # fmt: skip
    assert "--tensor-parallel-size 3 and --set tensor-parallel-size=9 disagree" in line


@pytest.mark.parametrize(
    "argv",
    [("up", "--dry-run", "--enforce-eager"),  # the embedded engine plans nothing
     ("up", "--dry-run", "--engine", "vllm", "--plan", "plan.json", "--text-only")],
)  # fmt: skip
def test_up_sizing_option_without_a_plan_to_make_is_one_line(run, argv) -> None:
    Path("plan.json").write_text("{}")
    line = one_error_line(run, *argv)
    assert "plans --model on --chip" in line


@pytest.mark.parametrize("empty", ["", ",,", " , "])
@pytest.mark.parametrize(
    ("argv", "flag"),
    [(("advise", "SmolLM2-135M-Instruct"), "--chips"),
     (("cost",), "--pricing"),
     (("bench", "http://127.0.0.1:9"), "--contexts"),
     (("check", "http://127.0.0.1:9"), "--only"),
     (("report", "run"), "--format"),
     (("cloud", "down"), "--zone")],
)  # fmt: skip
def test_a_list_option_that_lists_nothing_is_one_line_naming_it(run, argv, flag, empty) -> None:
    # `advise --chips ",,"` (or "") read as the option not given: every chip was ranked
    line = one_error_line(run, *argv, flag, empty)
    assert line.startswith(f"{flag} lists nothing (got {empty!r})"), line


@pytest.mark.parametrize(
    ("argv", "flag", "given", "words"),
    [(("cost",), "--pricing", "spot,,3y", "words"),
     (("cost",), "--pricing", "spot,", "words"),
     (("bench", "http://127.0.0.1:9"), "--contexts", "128,,1024", "token counts (8192, 8k or 8K)")],
)  # fmt: skip
def test_a_list_option_with_an_empty_entry_is_one_line_naming_it(run, argv, flag, given, words) -> None:
    # `cost --pricing spot,,3y` priced spot and 3y and said nothing of the empty entry between them
    line = one_error_line(run, *argv, flag, given)
    assert line == f"{flag} has an empty entry (got {given!r}): give comma-separated {words}, none empty", line


def test_parse_pricing_refuses_an_empty_entry_as_mcp_sends_it() -> None:
    from onechip.cost import parse_pricing
    from onechip.errors import ConfigError

    assert parse_pricing(["spot", "3y"]) == ["spot", "3y"]
    assert parse_pricing("SPOT, On-Demand,3Y") == ["spot", "on-demand", "3y"]  # any case, as regions (helper break7)
    assert parse_pricing("spot,SPOT") == ["spot"]  # once: it printed two identical spot lines
    with pytest.raises(ConfigError, match=r"^pricing \['spot', '', '3y'\] has an empty entry"):
        parse_pricing(["spot", "", "3y"])


def test_a_version_older_than_any_release_read_is_said_and_its_missing_image_too(run) -> None:
    # --engine-version 0.0.1 (on PyPI, a placeholder) planned under the oldest rule with no word, and `up` named
    # vllm/vllm-openai:v0.0.1, which does not exist: the image was first pushed for v0.2.2 (vllm-project/vllm PR
    # #1709, 2023-11-19: 'Pushed v0.2.2 here: https://hub.docker.com/r/vllm/vllm-openai/tags'); onechip's oldest
    # release read is 0.1.4 (catalog/vllm_architectures.json releases_read)
    code, out, err = run("up", "--engine", "vllm-docker", "--model", *SMOL, "--dry-run", "--engine-version", "0.0.1")
    assert code == 0, err
    text = " ".join((out + err).split())
    assert "vLLM 0.0.1, older than any release onechip read (the oldest: 0.1.4" in text
    assert "under the engines.json rule for V0 engine before 0.6.5" in text
    assert "vllm/vllm-openai:v0.0.1 does not exist: vllm/vllm-openai was first published for vLLM 0.2.2" in text
    for version in ("0.2.2", "0.5.0"):  # an image exists, and the release is not older than what was read
        code, out, err = run(
            "up", "--engine", "vllm-docker", "--model", *SMOL, "--dry-run", "--engine-version", version
        )
        text = " ".join((out + err).split())
        assert code == 0 and "does not exist" not in text and "older than any release" not in text, text


@pytest.mark.parametrize("empty", ["", ",", " "])
@pytest.mark.parametrize(
    ("argv", "flag", "example"),
    [(("advise", "SmolLM2-135M-Instruct"), "--slo", "ttft_ms=500,tpot_ms=50"),
     (("advise", "SmolLM2-135M-Instruct"), "--workload", "ctx=1024,clients=16"),
     (("bench", "http://127.0.0.1:9"), "--slo", "ttft_ms=500,tpot_ms=50"),
     (("bench", "http://127.0.0.1:9", "--find-max", "clients"), "--slo", "ttft_ms=500,tpot_ms=50")],
)  # fmt: skip
def test_a_key_value_option_that_lists_nothing_is_one_line_naming_it(run, argv, flag, example, empty) -> None:
    # `advise --slo ''` ranked with no SLO and `advise --workload ''` predicted bench's default cell: an
    # explicitly empty value read as the option not given (simulate's and bench's --workload is a word: '' is
    # refused as not one of its choices)
    line = one_error_line(run, *argv, flag, empty)
    assert line == f"{flag} lists nothing (got {empty!r}): give key=value pairs such as {example}", line


@pytest.mark.parametrize(
    ("argv", "choices"),
    [(("simulate", "--plan", "plan.json"), "'grid' or 'agent'"),
     (("bench", "http://127.0.0.1:9"), "'grid', 'agent' or 'trace'")],
)  # fmt: skip
def test_an_empty_workload_word_is_one_line_naming_the_choices(run, argv, choices) -> None:
    # simulate's and bench's --workload is a word (advise's is key=value pairs, above): '' is not one of them
    line = one_error_line(run, *argv, "--workload", "")
    assert line == f"Invalid value for '--workload': workload: Input should be {choices} (got '')", line


@pytest.mark.parametrize(
    ("argv", "flag", "given", "key"),
    [(("advise", "SmolLM2-135M-Instruct"), "--workload", "ctx=1024,ctx=2048", "ctx"),
     (("advise", "SmolLM2-135M-Instruct", "--workload", "ctx=1024"), "--slo", "ttft_ms=1,ttft_ms=2", "ttft_ms"),
     (("bench", "http://127.0.0.1:9"), "--slo", "tpot_ms=50, tpot_ms=10", "tpot_ms")],
)  # fmt: skip
def test_a_key_given_twice_is_one_line_naming_it(run, argv, flag, given, key) -> None:
    # a dict kept the last silently: `advise --workload ctx=1024,ctx=2048` predicted 2,048 tokens
    line = one_error_line(run, *argv, flag, given)
    assert line == f"{flag} gives {key} twice (got {given!r}); give each key once", line


@pytest.mark.parametrize("slo", ["ttft_ms=0", "ttft_ms=-1", "tpot_ms=500,e2e_ms=-5"])
@pytest.mark.parametrize("extra", [(), ("--find-max", "clients")])
def test_bench_slo_no_request_can_meet_is_refused_before_the_server_is_asked(run, slo, extra) -> None:
    # it reached the server (exit 6 here) and, against a live one, measured a whole grid at goodput 0
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--slo", slo, *extra)
    assert line.startswith("Invalid value for '--slo': slo: ") and "must be positive, finite milliseconds" in line


@pytest.mark.parametrize("chip", ["h100", "mi300x"])
def test_plan_and_up_print_the_same_command_for_a_release_that_sizes_the_pool_after_warmup(run, chip) -> None:
    # vLLM 0.34 on CUDA and ROCm sizes the KV cache after warmup unless told otherwise (vllm/config/vllm.py
    # _resolve_extensible_kv_cache, the 0.34.0 sdist): the plan's pool is the profiled one, so both commands carry
    # --no-enable-extensible-kv-cache; `up` launched without it while the plan only warned
    where = ("SmolLM2-135M-Instruct", "--chip", chip, "--engine-version", "0.34.0")
    code, plan_out, err = run("plan", *where, "--launch", "vllm")
    assert code == 0, err
    code, up_out, err = run("up", "--engine", "vllm", "--model", *where, "--dry-run")
    assert code == 0, err
    planned = plan_out.split("command:\n", 1)[1].splitlines()[0]
    ran = up_out.split("commands:\n", 1)[1].splitlines()[0]
    assert planned == ran and " --no-enable-extensible-kv-cache " in ran
    code, older, err = run("plan", *where[:3], "--engine-version", "0.33.0", "--launch", "vllm")
    assert code == 0 and "extensible" not in older.split("command:\n", 1)[1].splitlines()[0]
