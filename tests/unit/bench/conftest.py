"""Fixtures for the bench tests: the one fake vLLM server (tests/fakes/vllm_server.py) on 127.0.0.1 port 0."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.vllm_server import FakeVllm


@pytest.fixture
def fake_server() -> Iterator[FakeVllm]:
    # older vLLM's flat error body ({"object": "error", "message": ...}): the bench's error parsing reads both
    # shapes, and the checks' tests use the OpenAI one
    with FakeVllm(error_shape="flat") as srv:
        yield srv
