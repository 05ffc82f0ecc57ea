"""Chat smoke probe and run_checks plumbing, against the fake vLLM server with scripted replies."""

from __future__ import annotations

import json

import pytest

from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.checks import run_checks
from onechip.errors import ConfigError, EndpointError
from onechip.schemas.requests import CheckRequest


def test_smoke_passes_on_text_and_notes_empty_raw_completions(tmp_path):
    with FakeVllm([Reply("The capital of France is Paris.")], model="scripted", completion_text="") as srv:
        report = run_checks(srv.url, only=["smoke"], out_dir=tmp_path)
    (chat,) = report.results
    assert report.model == "scripted"  # resolved from /v1/models
    assert chat.domain == "chat" and chat.verdict == "pass"
    probes = {p.name: p for p in chat.probes}
    assert probes["chat_nonempty"].observed["text"] == "The capital of France is Paris."
    raw = probes["completions_raw"]
    assert raw.informational and "empty text" in raw.note  # noted, and the domain still passes
    saved = json.loads((tmp_path / "checks.json").read_text())
    assert saved["results"][0]["verdict"] == "pass"


def test_smoke_fails_on_empty_chat_text():
    with FakeVllm([Reply("")]) as srv:
        report = api.check(CheckRequest(base_url=srv.url, only=["smoke"]))
    assert report.results[0].verdict == "fail"
    assert report.results[0].probes[0].note == "chat completion returned empty text"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_smoke_passes_an_answer_in_reasoning_only_saying_so(field: str) -> None:
    """A reasoning parser (vLLM: `reasoning_content`, newer `reasoning`) holds the first 16 tokens of a thinking
    model (Qwen3 with --reasoning-parser qwen3) while content is null: text was generated, the probe failed it."""
    with FakeVllm([Reply("", reasoning="Okay, the user asks about France.")], reasoning_field=field) as srv:
        report = run_checks(srv.url, only=["smoke"])
    probe = report.results[0].probes[0]
    assert (probe.verdict, probe.note) == ("pass", "answered in reasoning only")
    assert probe.observed["reasoning"] == "Okay, the user asks about France."


def test_smoke_fails_with_server_message_on_http_error():
    with FakeVllm([Reply(status=500, error="engine dead")]) as srv:
        report = run_checks(srv.url, only=["smoke"])
    assert report.results[0].verdict == "fail"
    assert "engine dead" in report.results[0].probes[0].note


def test_unknown_check_name_and_bad_option_are_config_errors():
    with pytest.raises(ConfigError, match="unknown check"):
        run_checks("http://127.0.0.1:9", only=["smok"])
    with pytest.raises(ConfigError, match="bad check options"):
        run_checks("http://127.0.0.1:9", agent_cases=-1)
    with pytest.raises(ConfigError, match="bad check options"):
        run_checks("http://127.0.0.1:9", no_such_option=1)


def test_unserved_model_and_unreachable_endpoint_are_endpoint_errors():
    with FakeVllm([]) as srv:
        with pytest.raises(EndpointError, match="not served"):
            run_checks(srv.url, model="other", only=["smoke"])
    with pytest.raises(EndpointError, match="cannot reach"):
        run_checks("http://127.0.0.1:9", only=["smoke"])


@pytest.mark.parametrize("openai_key", [None, "sk-openaiKEYabcdefghijklmnopqrstuvwxyz"], ids=["alone", "both"])
def test_a_local_servers_key_in_vllm_api_key_is_sent(monkeypatch: pytest.MonkeyPatch, openai_key: str | None) -> None:
    """VLLM_API_KEY, which `onechip up` says to export and vLLM requires when --api-key is not given
    (vllm/entrypoints/serve/middleware/register.py, 0.32.0 wheel; the fake's 401 is vLLM's), is sent to a server on
    this host, also beside an OPENAI_API_KEY (the user's key for OpenAI; vllm.wire.api_key_from_env). check sent no
    key with VLLM_API_KEY alone, and the OpenAI key beside it: 'HTTP 401: Unauthorized' from the engine `up` or `demo`
    started."""
    key = "sk-checkKEYabcdefghijklmnopqrstuvwxyz"
    if openai_key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", openai_key)
    monkeypatch.setenv("VLLM_API_KEY", key)
    with FakeVllm([Reply("The capital of France is Paris.")], api_key=key) as srv:
        report = run_checks(srv.url, only=["smoke"])
    assert report.results[0].verdict == "pass"
