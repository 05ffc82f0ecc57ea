"""Cloud pass 71: the failure paths a fake API scenario can reach, each right by construction: `cloud down --name X
--json` on a TPU another process holds prints down's whole document; a Ctrl-C or SIGTERM at each stage of `cloud up
--model` and `demo --cloud` names what exists and bills and releases the claim; two users of one TPU name; MCP
cloud_down asks each TPU's engine once per call."""

from __future__ import annotations

import json
import os

import pytest
from test_cloud_failures import OK, P, ours, up
from test_cloud_mcp import calls

from onechip.api import _cloud
from onechip.cloud import records
from onechip.engines import remote
from onechip.engines import state as engine_state
from onechip.schemas.boot import EngineState
from onechip.schemas.cloud import CloudDownResult

NAME = "onechip-v5e-1"  # the name cloud up --chip v5e-1 gives its TPU (provision.tpu_name)


def test_down_name_json_on_a_held_tpu_prints_downs_whole_document(fast, run):
    # Before: the BusyError of a --name down went out as the CLI's bare {error, exit_code}: no deleted / held / failed
    # lists, unlike every other `cloud down --json`, so a script reading `held` found nothing
    up(zones=[OK], provisioning="spot", no_limit=True)
    with records.claimed(P, NAME):  # another holder: flock conflicts between two descriptors of one process too
        rc, out, err = run("cloud", "down", "--project", P, "--name", NAME, "--yes", "--json")
    doc = json.loads(out)
    assert rc == 8 and doc["exit_code"] == 8, (rc, out, err)
    assert set(CloudDownResult.model_fields) <= set(doc), doc
    assert doc["deleted"] == [] and doc["failed"] == [], doc
    (held,) = doc["held"]
    assert held.startswith(f"left node {NAME} ({OK}): its claim held by ") and "this onechip process" in held, held
    assert f"delete it once that ends: onechip cloud down --name {NAME} --zone {OK}" in held, held
    assert f"pid {os.getpid()}" in doc["error"] and "nothing was deleted" in doc["error"], doc
    assert err.strip().splitlines()[-1].endswith(doc["error"]) and "Traceback" not in err, err
    assert {n for _, _, n in ours(fast)} == {NAME}  # nothing deleted


# --- gap 4: MCP cloud_down asks each TPU's engine whether it lives once per call

STARTED = "2026-12-07T19:00:00+00:00"
URL = "http://127.0.0.1:9"  # the tunnel `cloud up --model` opened to the engine on the TPU (nothing answers: the
# discard port, so /health fails at once and only the ssh check counts)


def _engine_on(ip: str, monkeypatch) -> tuple[list[str], list[str]]:
    """An engine `up` started over ssh on `ip` (as cloud up --model records it); its host's ssh liveness check
    (remote.host_status) counted, read as alive; `onechip down` stubbed. Returns (hosts asked, downs run)."""
    state = EngineState(engine="vllm", pid=1, base_url=URL, model="m", started_at=STARTED, log_path="engine.log",
                        mode="remote-process", host=f"onechip@{ip}")  # fmt: skip
    engine_state.save(state)
    asked: list[str] = []

    def host_status(saved):
        asked.append(saved.host)
        return True, ""

    monkeypatch.setattr(remote, "host_status", host_status)
    stopped: list[str] = []
    monkeypatch.setattr(_cloud, "engines_down", lambda on_progress: stopped.append("down"))
    return asked, stopped


@pytest.mark.parametrize("named", [False, True])
def test_mcp_cloud_down_checks_each_engine_once_per_call(fast, monkeypatch, named):
    # Before: the gate, the preview, the confirmed call's listing and its stop each asked the engine whether it lives
    # over ssh: 2 checks of one host in the call that previews, 2 in the confirmed call (4 across the pair)
    tpu = up(zones=[OK], provisioning="spot", no_limit=True).resource
    asked, stopped = _engine_on(tpu.external_ip or "", monkeypatch)
    args = {"project": P, **({"name": NAME} if named else {})}
    ((refused, preview),) = calls(("cloud_down", args))
    assert refused and "engine at " + URL in preview and "would delete node" in preview, preview
    assert asked == [f"onechip@{tpu.external_ip}"], asked  # one call, one check
    targets = json.loads(preview.split("targets: ", 1)[1].split("]", 1)[0] + "]")
    ((failed, said),) = calls(("cloud_down", {**args, "targets": targets, "confirm": True}))
    assert not failed and stopped == ["down"] and ours(fast) == set(), said
    assert len(asked) == 1, asked  # the confirmed call asks none: its preview said them, `onechip down` stops it
