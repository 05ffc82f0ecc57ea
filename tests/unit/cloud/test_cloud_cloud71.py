"""Cloud pass 71: the failure paths a fake API scenario can reach, each right by construction: `cloud down --name X
--json` on a TPU another process holds prints down's whole document; a Ctrl-C or SIGTERM at each stage of `cloud up
--model` and `demo --cloud` names what exists and bills and releases the claim; two users of one TPU name; MCP
cloud_down asks each TPU's engine once per call."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from test_cloud_cloud70 import _held_by_another_process
from test_cloud_failures import OK, P, ours, up
from test_cloud_mcp import calls

from onechip import api
from onechip import bench as bench_layer
from onechip.api import _cloud
from onechip.cloud import provision, records, tpu_api
from onechip.engines import remote, replicas
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


# --- gap 2: `cloud up --model` and `demo --cloud` stopped (Ctrl-C, SIGTERM) at each stage

MODEL = "google/gemma-4-E2B-it"  # planned from the catalog: no hub read


def _stop(how: str) -> None:
    """What the user does: Ctrl-C (KeyboardInterrupt), or SIGTERM to this process (cli.main's handler raises it)."""
    if how == "SIGINT":
        raise KeyboardInterrupt
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # the handler raises at the next bytecode: never reached


def _stopped_at(stage: str, how: str, fast, monkeypatch) -> None:
    """Stop the command at `stage`: as the create's answer comes back (the TPU exists, the call never returned), in
    the wait for READY, at its first ssh (the image pull, or the engine's start), in the engine's boot."""
    if stage == "create":
        for method in ("create_node", "create_queued_resource"):
            real = getattr(tpu_api.TpuApi, method)

            def create(self, *args, _real=real):
                _real(self, *args)
                _stop(how)

            monkeypatch.setattr(tpu_api.TpuApi, method, create)
        return
    if stage == "wait":  # spot: a node CREATING; flex-start: a request the zone never grants
        fast.create_s, fast.zones[OK].flex = 30.0, "never"
        real_sleep = provision.time.sleep

        def sleep(seconds):
            if any(m == "POST" for m, _, _ in fast.requests):
                _stop(how)
            real_sleep(seconds)

        monkeypatch.setattr(provision.time, "sleep", sleep)
        return
    shells: list[str] = []  # no sshd behind the fake's external IP: every ssh answers "" once the stop is past

    def ssh(self, command, *args, **kw):
        shells.append(command)
        if stage == "ssh" and len(shells) == 1:
            _stop(how)
        return ""

    monkeypatch.setattr(remote.Shell, "run", ssh)
    if stage == "engine":  # launched on the host, stopped while its boot is waited on
        monkeypatch.setattr(remote.HostEngine, "start", lambda self: engine_state.save_booting(self))
        monkeypatch.setattr(remote.HostEngine, "wait_ready", lambda self, *a, **kw: _stop(how))
        monkeypatch.setattr(remote.HostEngine, "stop", lambda self: None)


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("stage", ["create", "wait", "ssh", "engine"])
@pytest.mark.parametrize("provisioning", ["spot", "flex-start"])
@pytest.mark.parametrize("command", ["cloud up", "demo", "demo --keep"])
def test_a_stop_at_each_stage_says_what_bills_and_leaves_nothing_half_done(
    fast, run, monkeypatch, tmp_path, command, provisioning, stage, how
):
    # Before: a `cloud up --model` stopped during ssh set-up or the engine's start said 'the TPU(s) stay up and bill:
    # COMMAND', and a kept demo's TPU 'kept node X (zone)': neither its state nor whether it bills
    _stopped_at(stage, how, fast, monkeypatch)
    limit = ["--provisioning", "spot", "--max-hours", "1"] if provisioning == "spot" else []
    where = ["--project", P, "--zone", OK, "--model", MODEL, "--yes", *limit]
    if command == "cloud up":
        rc, out, err = run("cloud", "up", *where)
    else:
        keep = ["--keep"] if command == "demo --keep" else []
        rc, out, err = run("demo", "--cloud", "gcp", "--chip", "v5e-1", "--out", str(tmp_path / "run"), *where, *keep)
    assert rc == (130 if how == "SIGINT" else 143) and "Traceback" not in err, (rc, out, err)
    (said,) = [line for line in err.splitlines() if line.startswith("error: ")]
    left = {n for _, _, n in ours(fast)}
    if command == "demo":  # the demo deletes what it made
        assert left == set() and f"the demo deleted {'node' if provisioning == 'spot' else 'queued-resource'} {NAME}"
        assert f"({OK})" in said, said
    else:  # it exists and may bill: its name, state, whether it bills, the command that deletes it
        kind = "node" if provisioning == "spot" else "queued-resource"
        assert left == {NAME} and f"{kind} {NAME}" in said and "last state " in said and "bill" in said, said
        assert said.endswith(f"onechip cloud down --name {NAME} --zone {OK} --project {P} --yes"), said
    assert {r.name for r in records.load_all()} == left  # every TPU that exists recorded, nothing else
    assert engine_state.load() is None  # no engine left on record as booting
    home = tmp_path / "home"
    assert not [p for p in home.rglob("*") if p.name.endswith(".tmp") or ".tmp." in p.name], list(home.rglob("*"))
    if command != "cloud up":
        assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "interrupted"
    with records.claimed(P, NAME):  # released
        pass


def test_a_stop_while_a_sets_engines_start_names_each_tpu_of_the_set(fast, run, monkeypatch):
    _stopped_at("engine", "SIGINT", fast, monkeypatch)
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--model", MODEL, "--yes", "--replicas", "2",
                       "--provisioning", "spot", "--max-hours", "1")  # fmt: skip
    assert rc == 130 and "Traceback" not in err, (rc, out, err)
    (said,) = [line for line in err.splitlines() if line.startswith("error: ")]
    each = f"node {NAME}-0 in {OK} (READY), node {NAME}-1 in {OK} (READY); they bill until deleted"
    assert f"interrupted while the engines started: 2 TPU(s) of the set {NAME} exist: {each}" in said, said
    assert said.endswith(f"delete them with: onechip cloud down --name {NAME} --project {P} --yes"), said
    assert {n for _, _, n in ours(fast)} == {r.name for r in records.load_all()} == {f"{NAME}-0", f"{NAME}-1"}
    assert engine_state.load() is None and replicas.load() is None  # no set left on record as booting
    with records.claimed(P, NAME, of_set=True):
        pass
