"""Tidy-ups after pass 58 on `onechip cloud`, against the loopback fake TPU API: every place that names the TPU of a
request uses one rule (provision.tpu_name), so a demo that names its chip as Google does finds the TPU `cloud up`
named; the MCP `cloud_up` and `demo` previews and the `demo --cloud` question say when a live TPU of ours is reused."""

from __future__ import annotations

import sys

import anyio
from mcp import Client

from onechip import api
from onechip.api._demo_host import _provisioned, _recorded
from onechip.mcp.server import build_server
from onechip.schemas.requests import DemoRequest

P = "proj-1"
OK = "us-west4-a"


def _demo(**extra) -> DemoRequest:
    return DemoRequest(cloud="gcp", engine="vllm-docker", model="google/gemma-4-E2B-it", project=P, zones=[OK],
                       provisioning="spot", max_hours=1.0, **extra)  # fmt: skip


def test_a_demo_naming_its_chip_as_google_does_finds_the_tpu_cloud_up_named(fast):
    # was: `demo --cloud gcp --chip v5litepod-1` got its TPU from `cloud up`, which names it after onechip's key
    # (cloud_target: v5litepod-1 -> v5e-1, so 'onechip-v5e-1'), while the demo looked for 'onechip-v5litepod-1' to
    # delete after a failure (_provisioned), for --again and for --keep's line: the TPU it created was never found
    request = _demo(chip="v5litepod-1")
    before = _recorded(request)  # as api.demo takes it at its start
    created = api.cloud_up(api.demo_cloud_request(request)).resource
    assert created.name == "onechip-v5e-1"  # catalog/cloud_tpu.json: v5litepod-1 is Google's name of v5e-1
    found = _provisioned(request, before)
    assert found is not None and found.name == created.name


def _previews(*pairs: tuple[str, dict]) -> list[str]:
    async def go():
        async with Client(build_server()) as client:
            return [await client.call_tool(name, args) for name, args in pairs]

    return [r.content[0].text for r in anyio.run(go)]


def test_the_mcp_previews_say_the_live_tpu_of_ours_they_would_reuse(fast, tmp_path):
    # was: over onechip's live TPU of the name asked for, which `cloud_up` (and the demo's `cloud up`) resumes, the
    # previews said 'would create a spot v5e-1 TPU ($0.58/h ...)': nothing is created then (api.cloud_up_quote)
    api.cloud_up(api.demo_cloud_request(_demo(chip="v5e-1")))
    spot = {"chip": "v5e-1", "project": P, "zones": [OK], "provisioning": "spot", "max_hours": 3.0}
    demo = {
        **spot,
        "cloud": "gcp",
        "engine": "vllm-docker",
        "model": "google/gemma-4-E2B-it",
        "runs_root": str(tmp_path / "home" / "runs"),
    }
    up, other, demo_text = _previews(("cloud_up", spot), ("cloud_up", {**spot, "name": "other"}), ("demo", demo))
    # the TPU's own quote: its --max-hours 1 (the one it was created with), not the 3 asked now
    assert up.startswith("not done: cloud_up would reuse onechip-v5e-1 (onechip's live TPU of that name; nothing is "
                         "created): a spot v5e-1 TPU ($0.58/h for 1 chip(s)"), up  # fmt: skip
    assert other.startswith("not done: cloud_up would create a spot v5e-1 TPU ($0.58/h"), other  # another name
    assert demo_text.startswith("not done: demo would reuse onechip-v5e-1 (onechip's live TPU of that name"), demo_text
    assert [m for m, _, _ in fast.requests if m != "GET"] == ["POST"]  # the previews only read


def test_the_demo_question_says_the_live_tpu_of_ours_it_would_reuse(fast, run, monkeypatch):
    # was: `demo --cloud gcp` over onechip's live TPU onechip-v5e-1 printed 'will create v5e-1 spot: ...' and asked
    # to 'create v5e-1 (spot) for the demo', where its `cloud up` resumes that TPU (as `cloud up` says since 032542a7)
    api.cloud_up(api.demo_cloud_request(_demo(chip="v5e-1")))
    with open("/dev/null") as devnull:
        monkeypatch.setattr(sys, "stdin", devnull)  # no terminal: the question is refused after it is printed
        rc, out, err = run("demo", "--cloud", "gcp", "--engine", "vllm-docker", "--model", "google/gemma-4-E2B-it",
                           "--chip", "v5e-1", "--project", P, "--zone", OK, "--provisioning", "spot",
                           "--max-hours", "3")  # fmt: skip
    assert rc == 2 and "add --yes" in err, err
    said = next(line for line in err.splitlines() if line.startswith("will "))
    assert said.startswith("will reuse onechip-v5e-1 (onechip's live TPU of that name; nothing is created): "), said
    assert "limit 1 h" in said, said  # that TPU's own --max-hours
    assert [m for m, _, _ in fast.requests if m != "GET"] == ["POST"]
