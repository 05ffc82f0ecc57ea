"""Cloud pass 71: the failure paths a fake API scenario can reach, each right by construction: `cloud down --name X
--json` on a TPU another process holds prints down's whole document; a Ctrl-C or SIGTERM at each stage of `cloud up
--model` and `demo --cloud` names what exists and bills and releases the claim; two users of one TPU name; MCP
cloud_down asks each TPU's engine once per call."""

from __future__ import annotations

import json
import os
import threading

import pytest
from test_cloud_cloud70 import _held_by_another_process
from test_cloud_failures import OK, P, ours, up
from test_cloud_mcp import calls

from onechip import api
from onechip import bench as bench_layer
from onechip.api import _cloud
from onechip.cloud import records
from onechip.engines import remote
from onechip.engines import state as engine_state
from onechip.errors import BusyError, CloudDownError, HeldError
from onechip.schemas import BenchConfig
from onechip.schemas.boot import EngineState
from onechip.schemas.cloud import CloudDownResult, CloudNameRequest

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


# --- gap 3: one measurement of an engine on a TPU at a time, and no down of that TPU under it


MEASURED = object()  # what the paused run_grid returns: api.bench hands it back as it is


def _grid_paused(monkeypatch) -> tuple[threading.Event, threading.Event, list[str]]:
    """bench.run_grid waits for the event returned (a bench mid-grid); returns (reached, release, out dirs run)."""
    reached, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def run_grid(config, out_dir, **kw):
        runs.append(str(out_dir))
        reached.set()
        release.wait(30)
        return MEASURED

    monkeypatch.setattr(bench_layer, "run_grid", run_grid)
    return reached, release, runs


def _bench(out_dir) -> object:
    return api.bench(BenchConfig(base_url=URL, contexts=[128], clients=[1]), out_dir=out_dir)


def test_a_second_bench_of_an_engine_on_a_tpu_and_a_down_of_it_are_refused_while_one_measures(
    fast, monkeypatch, tmp_path
):
    # Before: nothing held the TPU while a bench measured the engine on it: a second bench ran beside it (each
    # measuring half the batch) and a `cloud down` deleted the TPU mid-grid
    tpu = up(zones=[OK], provisioning="spot", no_limit=True).resource
    _engine_on(tpu.external_ip or "", monkeypatch)
    reached, release, runs = _grid_paused(monkeypatch)
    done: dict = {}
    thread = threading.Thread(target=lambda: done.setdefault("run", _bench(tmp_path / "first")))
    thread.start()
    try:
        assert reached.wait(30), "the first bench never measured"
        with pytest.raises(BusyError) as second:
            _bench(tmp_path / "second")
        with pytest.raises(HeldError) as named:
            api.cloud_down(CloudNameRequest(project=P, name=NAME))
        with pytest.raises(CloudDownError) as every:
            api.cloud_down(CloudNameRequest(project=P))
        assert runs == [str(tmp_path / "first")] and not (tmp_path / "second").exists(), runs
        assert not any(m == "DELETE" for m, _, _ in fast.requests) and {n for _, _, n in ours(fast)} == {NAME}
    finally:
        release.set()
        thread.join(30)
    said = str(second.value)
    assert "\n" not in said and f"pid {os.getpid()}" in said and "`bench`" in said, said
    assert f"TPU {NAME}" in said and "nothing was measured" in said, said
    assert named.value.exit_code == every.value.exit_code == 8 and every.value.result.held, every.value
    assert done["run"] is MEASURED
    _bench(tmp_path / "third")  # free once the first ended
    api.cloud_down(CloudNameRequest(project=P))
    assert ours(fast) == set()


def test_a_bench_while_a_down_deletes_the_tpu_under_its_engine_measures_nothing(fast, run, monkeypatch, tmp_path):
    tpu = up(zones=[OK], provisioning="spot", no_limit=True).resource
    _engine_on(tpu.external_ip or "", monkeypatch)
    _, release, runs = _grid_paused(monkeypatch)
    release.set()
    with _held_by_another_process(NAME) as pid:  # what a `cloud down` of it (or a bench in another process) holds
        rc, out, err = run("bench", URL, "--out", str(tmp_path / "run"), "--contexts", "128", "--clients", "1")
    assert rc == BusyError.exit_code and f"pid {pid}" in err and "Traceback" not in err, (rc, out, err)
    assert len(err.strip().splitlines()) == 1 and runs == [], (err, runs)


def test_a_bench_of_an_engine_on_no_tpu_of_onechips_claims_nothing(fast, monkeypatch, tmp_path):
    up(zones=[OK], provisioning="spot", no_limit=True)
    _engine_on("10.9.9.9", monkeypatch)  # an engine on a host no TPU record names
    _, release, runs = _grid_paused(monkeypatch)
    release.set()
    with records.claimed(P, NAME):  # the TPU is busy, but it is not under this engine
        _bench(tmp_path / "run")
    assert runs == [str(tmp_path / "run")]
