"""cli/main.py: every error a user can cause is one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # typer >= 0.2x raises its own (vendored click) exceptions: these used to escape as tracebacks
        (
            ["plan", "gemma-4-E2B-it", "--chip", "v5e-1", "--gpu-memory-utilization", "abc"],
            "Invalid value for '--gpu-memory-utilization'",
        ),
        (["plan"], "Missing argument 'MODEL'"),
        (["plan", "x", "--chip", "cpu", "--bogus"], "No such option: --bogus"),
        (["nosuchcmd"], "No such command 'nosuchcmd'"),
        (["bench", "http://127.0.0.1:9", "--reps", "0"], "Invalid value for '--reps'"),
        # these passed the parser and failed later: a pydantic traceback, or a launch on port 0
        (["bench", "http://127.0.0.1:9", "--timeout-s", "-1"], "Invalid value for '--timeout-s'"),
        (["up", "--dry-run", "--port", "0"], "Invalid value for '--port'"),
        (["up", "--dry-run", "--kv-cache-space-gib", "0"], "Invalid value for '--kv-cache-space-gib'"),
    ],
)
def test_usage_errors_are_one_line_not_tracebacks(run, argv: list[str], expected: str) -> None:
    code, out, err = run(*argv)
    assert code == 2
    assert "Traceback" not in err and expected in err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_long_onechip_errors_are_not_wrapped_and_markup_is_not_interpreted(run, tmp_path) -> None:
    # Before: rich hard-wrapped long messages at 80 columns, and a '[/x]' in user input raised MarkupError.
    code, _, err = run("report", str(tmp_path / ("a-long-missing-run-directory-name-" * 3)), "--format", "md")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "does not exist" in err
    code, _, err = run("report", str(tmp_path / "[/x]"))
    assert code == 2 and "[/x]" in err and "Traceback" not in err


def test_version_and_bare_group(run) -> None:
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("onechip ")
    code, out, err = run()
    assert code == 2 and "Usage" in out + err and "Traceback" not in err


def test_plan_shows_a_long_warning_source_cut_and_says_where_the_rest_is(run) -> None:
    # the engine-version warning's source (catalog/engines.json, ~6,000 characters) filled 60 lines of every plan
    import json

    code, out, err = run("plan", "google/gemma-4-E2B-it", "--chip", "h100", "--max-model-len", "8192", "--json")
    assert code == 0, err
    (source,) = [w["source"] for w in json.loads(out)["warnings"] if w["code"] == "engine-version"]
    assert len(source) > 1000
    code, out, err = run("plan", "google/gemma-4-E2B-it", "--chip", "h100", "--max-model-len", "8192")
    text = " ".join(out.split())
    line = text[text.index("warning engine-version") :].split(" warning ")[0]
    assert line.endswith("... (the whole source: plan --json))") and len(line) < 900, line


def test_a_bug_is_one_line_too_and_its_traceback_only_on_request(run, monkeypatch) -> None:
    """An exception onechip did not raise on purpose (a cloud Attempt the schema refused was one) reads as
    over MCP: one line, exit 1; ONECHIP_DEBUG=1 lets the traceback through for the bug report."""
    from onechip import api

    def crash(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(api, "cloud_zones", crash)
    code, _, err = run("cloud", "zones")
    assert code == 1 and err == "error: internal error (ZeroDivisionError: division by zero); please report it\n"
    monkeypatch.setenv("ONECHIP_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        run("cloud", "zones")


@pytest.mark.parametrize(
    ("argv", "suggested"),
    [
        # onechip's top-level group loads its commands lazily (cli.commands.LazyGroup): typer's "Did you mean"
        # read the group's `commands` dict, empty there, so a typo'd command got none while `cloud stauts` did
        (["plna"], "'plan'"),
        (["advice"], "'advise'"),
        (["cloud", "stauts"], "'status'"),
    ],
)
def test_a_typod_command_gets_a_suggestion(run, argv: list[str], suggested: str) -> None:
    code, _, err = run(*argv)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert f"Did you mean {suggested}?" in err, err
