"""The MCP plan summary's weights (helper cards62b): one figure, the one the verdict and `onechip plan` print. One
regression test per finding, each failing before its fix."""

from __future__ import annotations

import re

import anyio
from mcp import Client

from onechip.mcp.server import build_server

# Llama-3.1-8B-Instruct in bf16 on an 8 GB card: its weights alone exceed what vLLM requests (the plan's verdict)
WEIGHTS_BOUND = {"model": "meta-llama/Llama-3.1-8B-Instruct", "chip": "rtx-4060-ti-8gb"}


def call(name: str, args: dict):
    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool(name, args)

    return anyio.run(go)


def test_a_weights_bound_plan_says_one_weights_figure(monkeypatch):
    # the line said 'weights 14.99 GiB per GPU exceed the requested 7.24 GiB; weights 14.96 GiB, ...': the verdict's
    # figure is what one GPU holds (the checkpoint's share plus the buffers vLLM allocates with it, as its 'Model
    # loading took' line counts), the second the checkpoint's 16,060,522,496 bytes, unnamed. Now the one per-GPU
    # figure, which vLLM 0.19.0 logged for this model on an H100: 'model_weights_gib': 14.99 (corpus.json
    # h100-llama31-8b-tp1-v0190). On this 7.87 GiB card the weights exceed the card itself, so the verdict is the load
    # OOM (corpus69d, binding 'weights-load'), still naming the one per-GPU figure
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = call("plan", WEIGHTS_BOUND).content[0].text
    assert "does not fit: weights 14.99 GiB per GPU and the " in line, line
    assert "held beside them as they load are more than the card's 7.87 GiB" in line, line
    assert set(re.findall(r"weights (\d+\.\d+) GiB", line)) == {"14.99"}, line
