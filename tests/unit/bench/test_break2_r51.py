"""Break pass r51 on `onechip bench`: a server started with `vllm serve --api-key`."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.vllm_server import FakeVllm
from onechip.bench.runner import load_samples, run_grid
from onechip.errors import EndpointError
from onechip.schemas.bench import BenchConfig

KEY = "sk-benchKEYabcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(("name", "other"), [("OPENAI_API_KEY", "VLLM_API_KEY"), ("VLLM_API_KEY", "OPENAI_API_KEY")])
def test_the_server_key_in_openai_or_vllm_api_key_is_sent_with_every_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, name: str, other: str
) -> None:
    """OPENAI_API_KEY or VLLM_API_KEY is where bench's refusal of a user:password@ URL says the key goes (as `check`
    sends it); bench sent it nowhere, so against `vllm serve --api-key` the probe was a 401 and nothing could be
    measured. Now every request carries it (from worker processes too), in its header only: never in a run file.
    VLLM_API_KEY alone (what `onechip up` says to export, and vLLM reads when --api-key is not given:
    vllm/entrypoints/serve/middleware/register.py, 0.32.0 wheel) was sent nowhere: a 401."""
    monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, KEY)
    with FakeVllm(api_key=KEY) as srv:
        config = BenchConfig(
            base_url=srv.url,
            contexts=[64],
            clients=[2],
            reps=1,
            requests_per_client=2,
            output_tokens=4,
            workers=workers,
        )
        run = run_grid(config, tmp_path / "run")
    cell = run.cells[0]
    assert (cell.status, cell.requests_sent, cell.requests_ok) == ("ok", 4, 4)
    assert all(s.status == "ok" for s in load_samples(tmp_path / "run" / "requests.jsonl"))
    assert not [p.name for p in (tmp_path / "run").iterdir() if KEY in p.read_text()]


def test_without_the_key_the_server_refusal_is_one_endpoint_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake's 401 is vLLM's: the check above fails for the key, not for a fake that lets anything through."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    with FakeVllm(api_key=KEY) as srv, pytest.raises(EndpointError, match="401"):
        config = BenchConfig(
            base_url=srv.url, contexts=[64], clients=[1], reps=1, requests_per_client=1, output_tokens=4
        )
        run_grid(config, tmp_path / "run")
