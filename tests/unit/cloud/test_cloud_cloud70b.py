"""Cloud pass 70b: `cloud up --model` holds its TPUs' claim while it starts the engines on them, so a `cloud down` of
this home run meanwhile does not delete a TPU under an engine booting on it; every exit releases it."""

from __future__ import annotations

import os
import threading
from types import SimpleNamespace

import pytest
from test_cloud_failures import OK, P, ours, up
from test_cloud_mcp import calls

from onechip import api
from onechip.api import _cloud
from onechip.cloud import records
from onechip.engines import state as engine_state
from onechip.errors import BusyError, CloudDownError, EngineError, Interrupted
from onechip.schemas.boot import EngineState, EngineStatus
from onechip.schemas.cloud import CloudNameRequest

NAME = "onechip-v5e-1"  # the name cloud up --chip v5e-1 gives its TPU (provision.tpu_name)
NOT_SERVED = SimpleNamespace(plan=None, replica_set=None, launch=None, boot=None)  # what `up` returns, nothing set


def _engines_paused(monkeypatch, fail: type[BaseException] | None = None):
    """Make the `up` that starts the engines of `cloud up --model` (not its dry run) wait for the event returned, then
    return (or raise `fail`)."""
    release, reached = threading.Event(), threading.Event()

    def engines_up(request, on_progress=None):
        if request.dry_run:
            return NOT_SERVED
        reached.set()
        release.wait(30)
        if fail is not None:
            raise fail("the engine did not start (test)")
        return NOT_SERVED

    monkeypatch.setattr(_cloud, "up", engines_up)
    return reached, release


@pytest.mark.parametrize("replicas", [1, 2])
def test_a_down_while_cloud_up_model_starts_its_engines_deletes_nothing(fast, monkeypatch, replicas):
    # Before: cloud up --model let go of its claim once the TPUs were READY: a cloud down of this home, with --name
    # or without, deleted them under the engines that were starting on them, and said nothing of it
    reached, release = _engines_paused(monkeypatch)
    done: dict = {}

    def run_up():
        done["result"] = up(zones=[OK], provisioning="spot", no_limit=True, model="m", replicas=replicas)

    thread = threading.Thread(target=run_up)
    thread.start()
    try:
        assert reached.wait(30), "cloud up never started the engines"
        names = {NAME} if replicas == 1 else {f"{NAME}-0", f"{NAME}-1"}
        assert {n for _, _, n in ours(fast)} == names
        with pytest.raises(BusyError) as named:
            api.cloud_down(CloudNameRequest(project=P, name=NAME))
        with pytest.raises(CloudDownError) as every:
            api.cloud_down(CloudNameRequest(project=P))
        assert not any(m == "DELETE" for m, _, _ in fast.requests), fast.requests
        assert {n for _, _, n in ours(fast)} == names
    finally:
        release.set()
        thread.join(30)
    for said in (str(named.value), str(every.value)):
        assert "\n" not in said and f"pid {os.getpid()}" in said, said
    assert every.value.result.deleted == [] and len(every.value.result.held) == replicas
    assert done["result"].resource.name in names
    api.cloud_down(CloudNameRequest(project=P))  # free once cloud up ended
    assert ours(fast) == set()


@pytest.mark.parametrize("fail", [EngineError, KeyboardInterrupt])
def test_cloud_up_model_releases_its_claim_on_every_exit(fast, monkeypatch, fail):
    reached, release = _engines_paused(monkeypatch, fail)
    release.set()
    with pytest.raises(Interrupted if fail is KeyboardInterrupt else EngineError):
        up(zones=[OK], provisioning="spot", no_limit=True, model="m")
    assert reached.is_set()
    with records.claimed(P, NAME):  # free again: nothing of that cloud up holds it
        pass
    api.cloud_down(CloudNameRequest(project=P))
    assert ours(fast) == set()


# --- once cloud up --model ended: the engine state `up` keeps names the TPU it serves on, and a down says so

STARTED = "2026-12-07T19:00:00+00:00"
URL = "http://127.0.0.1:18123"  # the tunnel `cloud up --model` opens to the engine on the TPU


def _serving_on(ip: str, monkeypatch) -> list[str]:
    """An engine `up` started on `ip` (as cloud up --model records it), read as alive and healthy (no ssh: the state's
    host is the fake's address); returns the `onechip down`s the cloud down ran (stubbed: no ssh)."""
    state = EngineState(engine="vllm", pid=1, base_url=URL, model="m", started_at=STARTED, log_path="engine.log",
                        mode="remote-process", host=f"onechip@{ip}")  # fmt: skip
    engine_state.save(state)
    monkeypatch.setattr(engine_state, "status", lambda: EngineStatus(running=True, healthy=True, state=state))
    stopped: list[str] = []
    monkeypatch.setattr(_cloud, "engines_down", lambda on_progress: stopped.append("down"))
    return stopped


@pytest.mark.parametrize("named", [False, True])
def test_a_down_names_the_engine_serving_on_a_tpu_before_it_asks(fast, run, monkeypatch, named):
    # Before: the listing and question of a cloud down said nothing of the engine cloud up --model started on the TPU;
    # it was stopped and the TPU deleted, said in a progress line only once the user had said yes
    tpu = up(zones=[OK], provisioning="spot", no_limit=True).resource
    stopped = _serving_on(tpu.external_ip or "", monkeypatch)
    request = CloudNameRequest(project=P, name=NAME if named else None)
    (line,) = api.cloud_down_found(request).serving
    assert line.startswith(f"node {NAME} ({OK}): engine at {URL}: healthy, started {STARTED}"), line
    rc, out, err = run("cloud", "down", "--project", P, *(["--name", NAME] if named else []))  # no terminal: refused
    assert rc != 0 and "add --yes" in err and line in out and stopped == [], (out, err)
    assert {n for _, _, n in ours(fast)} == {NAME}
    rc, out, err = run("cloud", "down", "--project", P, "--yes", *(["--name", NAME] if named else []))
    assert rc == 0 and line in out and stopped == ["down"] and ours(fast) == set(), (out, err)


def test_mcp_cloud_downs_preview_names_the_engine_serving_on_a_tpu(fast, monkeypatch):
    tpu = up(zones=[OK], provisioning="spot", no_limit=True).resource
    stopped = _serving_on(tpu.external_ip or "", monkeypatch)
    ((_, preview),) = calls(("cloud_down", {"project": P}))  # not done: a preview, the confirm asked
    (line,) = api.cloud_down_found(CloudNameRequest(project=P)).serving
    assert f"; {line}" in preview and stopped == [], preview
    assert {n for _, _, n in ours(fast)} == {NAME}
    api.cloud_down(CloudNameRequest(project=P))
    assert stopped == ["down"] and ours(fast) == set()
