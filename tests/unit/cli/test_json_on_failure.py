"""--json on a failure: stdout held nothing (the one line went to stderr alone), so a caller parsing stdout as JSON
got a decode error instead of the reason. It now holds {"error": the line, "exit_code": N}; a command that printed
its JSON before exiting non-zero (status with no engine: 1) prints nothing more."""

from __future__ import annotations

import json

from onechip import api


def test_a_refused_input_with_json_prints_an_error_object_on_stdout(run, offline_home):
    code, out, err = run("plan", "google/gemma-4-E2B-it", "--chip", "zz", "--json")
    said = json.loads(out)
    assert code == 2 and said["exit_code"] == 2 and said["error"].startswith("unknown chip 'zz'"), out
    assert said["error"] in " ".join(err.split())  # the stderr line is still said


def test_a_usage_error_with_json_prints_an_error_object(run, offline_home):
    code, out, _ = run("cost", "--json", "--no-such-flag")
    said = json.loads(out)
    assert code == 2 and said["exit_code"] == 2 and "--no-such-flag" in said["error"], out


def test_an_interrupted_command_with_json_prints_an_error_object(run, offline_home, monkeypatch):
    def stopped(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "plan", stopped)
    code, out, _ = run("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1", "--json")
    assert code == 130 and json.loads(out) == {"error": "interrupted", "exit_code": 130}, out


def test_json_printed_before_a_non_zero_exit_is_stdout_alone(run, offline_home):
    code, out, _ = run("status", "--json")
    assert code == 1 and json.loads(out)["running"] is False, out  # one document: no error object after it


def test_the_error_object_never_repeats_a_secret(run, offline_home, monkeypatch):
    token = "hf_" + "a1b2c3d4e5" * 4
    monkeypatch.setenv("HF_TOKEN", token)
    code, out, err = run("plan", token, "--chip", "l4", "--json")
    assert code == 2 and "***" in json.loads(out)["error"], out
    assert token not in out and token not in err
