"""`up`'s readiness check against an engine that asks for a key: vLLM requires $VLLM_API_KEY on its /v1 routes when
--api-key is not given (vllm/entrypoints/serve/middleware/register.py, 0.32.0 wheel), and a local engine inherits
onechip's environment, where the plan's refusal of `--set api-key=...` tells the user to export it."""

from __future__ import annotations

import pytest

from fakes.vllm_server import FakeVllm
from onechip.engines.ready import confirm_ready
from onechip.errors import EngineError

KEY = "sk-readyKEYabcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize("openai_key", [None, "sk-openaiKEYabcdefghijklmnopqrstuvwxyz"], ids=["alone", "both"])
def test_an_engine_started_with_vllm_api_key_is_confirmed_with_it(
    monkeypatch: pytest.MonkeyPatch, openai_key: str | None
) -> None:
    # the smoke chat went without the key: a 401, and `up` of such an engine failed as 'first chat completion failed';
    # an OPENAI_API_KEY beside it (the user's key for OpenAI) is not the engine's: VLLM_API_KEY comes first for it
    # (vllm.wire.api_key_from_env: a loopback URL), where a client of another host reads OPENAI_API_KEY first
    if openai_key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", openai_key)
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    with FakeVllm(api_key=KEY) as srv:
        assert confirm_ready(srv.url, srv.model)


def test_without_the_key_the_readiness_check_says_why_and_never_shows_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrongKEYabcdefghijklmnopqrstuvwxyz")
    with FakeVllm(api_key=KEY) as srv, pytest.raises(EngineError, match="401") as e:
        confirm_ready(srv.url, srv.model)
    assert KEY not in str(e.value) and "wrongKEY" not in str(e.value)
