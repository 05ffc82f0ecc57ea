"""A second break pass on `onechip plan` (2026-12-04, helper plan): one regression test per finding, each failing
before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, sized_checkpoint
from onechip.planner import source

pytestmark = pytest.mark.usefixtures("offline_home")

LLAMA = "Llama-3.1-8B-Instruct"  # a catalog model with its tensors bundled: plans offline


@pytest.mark.parametrize("field", ["dtype", "torch_dtype"])
def test_a_config_dtype_no_engine_loads_is_refused_naming_the_field(run, tmp_path: Path, field: str) -> None:
    # was a plan in bfloat16: an unknown name fell back to float32, downcast as vLLM's 'auto' does; transformers
    # resolves the name as getattr(torch, 'banana') loading config.json (AttributeError), so the engine never boots
    config = {**{k: v for k, v in SMOLLM2_CONFIG.items() if k != "dtype"}, field: "banana"}
    model = sized_checkpoint(tmp_path / "banana", config, 270_000_000)
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    assert line == (
        f"{model}/config.json: field '{field}' = 'banana': not a dtype vLLM serves a checkpoint in (one of "
        "bfloat16, float16, half, float32, float)"
    )


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("a/b/c", "Repo id must be in the form 'repo_name' or 'namespace/repo_name': 'a/b/c'."),
        ("a//b", "Repo id must be in the form 'repo_name' or 'namespace/repo_name': 'a//b'."),
        (
            "org/na me",
            "Repo id must use alphanumeric chars, '-', '_' or '.'. The name cannot start or end with '-' or "
            "'.' and the maximum length is 96: 'org/na me'.",
        ),  # fmt: skip
    ],
)
def test_a_malformed_hub_id_is_refused_without_asking_the_hub(run, monkeypatch, model: str, why: str) -> None:
    # was sent to the Hub (a probe of its endpoint, then hf_hub_download): the line said the Hub could not be reached
    # or that HF_HUB_OFFLINE was set, as if a well-formed id; the words are huggingface_hub's validate_repo_id's
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(source.httpx, "head", lambda *a, **k: pytest.fail("the Hub was asked"))
    line = one_error_line(run, "plan", model, "--chip", "l4")
    assert line == f"model {model!r}: not a local directory and not a Hub id: {why}"
