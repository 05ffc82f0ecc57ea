"""A bench whose engine runs on onechip's cloud TPU, and that TPU ends mid-run (a spot node PREEMPTED, a flex-start
queued resource SUSPENDED once its max run duration ran out): the runner keeps what it measured (bench.runner:
EndpointError after run.save()), and the line says why the engine went away, naming the TPU and its delete command."""

from __future__ import annotations

import pytest

from onechip import api
from onechip import bench as bench_layer
from onechip.cloud import provision, records
from onechip.engines import state as engine_state
from onechip.errors import EndpointError
from onechip.schemas import BenchConfig
from onechip.schemas.boot import EngineState
from onechip.schemas.cloud import CloudNameRequest, CloudUpRequest

P = "proj-1"
OK = "us-west4-a"
URL = "http://127.0.0.1:18123"  # the tunnel `cloud up --model` opens to the engine on the TPU
CUT = f"connection refused by {URL}; finished requests are in OUT/requests.jsonl; resume it (--resume OUT)"


def _engine_on(ip: str) -> None:
    """The engine state `cloud up --model` leaves: a remote engine on the TPU's address, reached through URL."""
    engine_state.save(EngineState(engine="vllm", pid=1, base_url=URL, model="m", started_at="2026-12-06T00:00:00Z",
                                  log_path="engine.log", mode="remote-process", host=f"onechip@{ip}"))  # fmt: skip


def _bench_cut(monkeypatch) -> None:
    def cut(config, out_dir, **kw):  # the runner, its server gone mid-run: what it measured saved, then this
        raise EndpointError(CUT)

    monkeypatch.setattr(bench_layer, "run_grid", cut)


def _bench(tmp_path):
    return api.bench(BenchConfig(base_url=URL, contexts=[16], clients=[1]), out_dir=tmp_path / "run")


@pytest.mark.parametrize("kind", ["spot", "flex-start"])
def test_a_tpu_that_ended_mid_bench_is_named_in_the_benchs_line(fast, monkeypatch, tmp_path, kind):
    limit = {"no_limit": True} if kind == "spot" else {"valid_until_s": "1s"}
    result = api.cloud_up(CloudUpRequest.model_validate({"project": P, "zones": [OK], "provisioning": kind,
                                                         "timeout_s": 5.0, **limit}))  # fmt: skip
    tpu = result.resource
    _engine_on(tpu.external_ip or "")
    if kind == "spot":  # the cloud took its chips back (Node.state PREEMPTED)
        fast.nodes[f"projects/{P}/locations/{OK}/nodes/{tpu.node_id}"]["state"] = "PREEMPTED"
    else:  # its max run duration ran out: SUSPENDED, its node deleted (the fake's run end)
        (qr,) = fast.queued.values()
        qr["state"] = {"state": "SUSPENDED", "stateInitiator": "SERVICE"}
        fast.nodes.pop(f"projects/{P}/locations/{OK}/nodes/{tpu.node_id}")
    _bench_cut(monkeypatch)
    with pytest.raises(EndpointError) as info:
        _bench(tmp_path)
    said = str(info.value)
    assert said.startswith(CUT), said  # the runner's line, what it kept and how to resume, first
    state = "PREEMPTED" if kind == "spot" else "SUSPENDED"
    assert f"{tpu.kind} {tpu.name} in {OK}" in said and state in said, said
    assert provision.delete_command(tpu) in said, said  # what to delete: it may hold a disk, or its record
    assert said.count("\n") == 0
    api.cloud_down(CloudNameRequest(project=P))
    assert records.load_all() == []


def test_a_bench_cut_while_its_tpu_still_runs_says_nothing_more(fast, monkeypatch, tmp_path):
    tpu = api.cloud_up(CloudUpRequest(project=P, zones=[OK], provisioning="spot", no_limit=True, timeout_s=5.0))
    _engine_on(tpu.resource.external_ip or "")
    _bench_cut(monkeypatch)
    with pytest.raises(EndpointError) as info:
        _bench(tmp_path)
    assert str(info.value) == CUT
    api.cloud_down(CloudNameRequest(project=P))
