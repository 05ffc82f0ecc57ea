"""A vLLM built from a clone whose history holds no tag (a shallow clone, `git clone --depth 1`): setuptools_scm numbers
it from the tag '0.0' it assumes when `git describe` finds none, so guess-next-dev writes '0.1.dev<commits>+g<hash>'
(setuptools_scm 8.1.0 git.py _git_parse_inner: tag = "0.0", distance = every commit; vLLM's pyproject.toml
[tool.setuptools_scm], 0.34.0 sdist). That number says nothing of the release the code comes after. Before, it was
planned as vLLM 0.0.1 under the oldest rule (the V0 engine before 0.6.5); vLLM's own version.py takes a version it
cannot read as a dev tree that matches anything (_prev_minor_version_was, 0.34.0 sdist), so it is planned under the
newest rules, and the plan says it cannot tell the release."""

from __future__ import annotations

from onechip.planner import plan_model

UNTAGGED = "0.1.dev15312+g1d2e3f4a5"  # 15,312 commits, no tag reached: setuptools_scm's number for it


def test_an_untagged_build_is_planned_under_the_newest_rules_and_says_it_cannot_tell_the_release() -> None:
    untagged = plan_model("SmolLM2-135M-Instruct", "h100", "vllm-gpu", max_model_len=2048, engine_version=UNTAGGED)
    newest = plan_model("SmolLM2-135M-Instruct", "h100", "vllm-gpu", max_model_len=2048)
    assert untagged.kv_tokens == newest.kv_tokens and untagged.engine_version == newest.engine_version
    codes = {w.code for w in untagged.warnings}
    assert "engine-version-prerelease" not in codes and "engine-version-older" not in codes, codes
    (said,) = [w.message for w in untagged.warnings if w.code == "engine-version-untagged"]
    assert said.startswith(f"vLLM {UNTAGGED} cannot tell its release") and newest.engine_version in said, said


def test_a_dev_build_of_a_tagged_release_is_still_planned_as_the_release_before() -> None:
    # 0.26.1rc1.dev125 is 125 commits past a tag: the number is the release's (test_versions_said)
    dev = plan_model("SmolLM2-135M-Instruct", "h100", "vllm-gpu", max_model_len=2048, engine_version="0.26.1rc1.dev125")
    assert "engine-version-untagged" not in {w.code for w in dev.warnings}
    assert dev.engine_version == "0.26.1rc1.dev125"
