"""Polish of 2026-12-02 (third session), one regression test per finding: `up` takes the sizing options `plan`
takes (one definition), list options refuse an empty list, `cost` prices a multi-chip slice as `advise` does,
a version older than every rule is said."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from factories import one_error_line

SMOL = ("SmolLM2-135M-Instruct", "--chip", "l4")  # a bundled inventory: plans offline


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


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
