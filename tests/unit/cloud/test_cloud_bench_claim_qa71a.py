"""A bench holds the claim on the TPU under the engine it measures whatever name of this host its URL gives (helper
qa71a, 2026-12-07): `cloud up --model` records its engine at the tunnel's http://127.0.0.1:PORT, and a bench of
http://localhost:PORT (or with /v1, an upper-case scheme) reaches the same engine but matched no engine by its text,
so it took no claim and a `cloud down` deleted the TPU under it mid-grid."""

from __future__ import annotations

import pytest
from test_cloud_cloud71 import NAME, _engine_on, _grid_paused
from test_cloud_failures import OK, P, up

from onechip import api
from onechip.cloud import records
from onechip.errors import BusyError
from onechip.schemas import BenchConfig

PORT = 9  # test_cloud_cloud71's URL, http://127.0.0.1:9


@pytest.mark.parametrize(
    "url",
    [f"http://localhost:{PORT}", f"http://[::1]:{PORT}/v1", f"HTTP://127.0.0.1:{PORT}/", f"http://localhost.:{PORT}"],
)
def test_a_bench_of_the_engine_by_another_name_of_this_host_is_refused_while_its_tpu_is_held(
    fast, monkeypatch, tmp_path, url
):
    tpu = up(zones=[OK], provisioning="spot", no_limit=True).resource
    _engine_on(tpu.external_ip or "", monkeypatch)
    _, release, runs = _grid_paused(monkeypatch)
    release.set()
    with records.claimed(P, NAME), pytest.raises(BusyError):  # a `cloud down` of it (flock: one process, two fds)
        api.bench(BenchConfig(base_url=url, contexts=[128], clients=[1]), out_dir=tmp_path / "run")
    assert runs == []


def test_another_port_of_this_host_is_another_engine(fast, monkeypatch, tmp_path):
    tpu = up(zones=[OK], provisioning="spot", no_limit=True).resource
    _engine_on(tpu.external_ip or "", monkeypatch)
    _, release, runs = _grid_paused(monkeypatch)
    release.set()
    with records.claimed(P, NAME):
        api.bench(
            BenchConfig(base_url=f"http://localhost:{PORT + 1}", contexts=[128], clients=[1]), out_dir=tmp_path / "r"
        )
    assert runs == [str(tmp_path / "r")]


def _router_over_two_tpus() -> list[str]:
    """The router of `up --replicas 2` at http://127.0.0.1:30000 over engines on two TPUs (tpu-a, tpu-b), as its state
    records them; returns the replicas' URLs."""
    from onechip.engines import replicas
    from onechip.engines import state as engine_state
    from onechip.schemas.boot import EngineState
    from onechip.schemas.requests import UpRequest

    first = up(zones=[OK], provisioning="spot", no_limit=True, name="tpu-a").resource
    second = up(zones=[OK], provisioning="spot", no_limit=True, name="tpu-b").resource
    router_url = "http://127.0.0.1:30000"
    launch = api.up(UpRequest(replicas=2, dry_run=True)).replica_set
    assert launch is not None

    def engine(url: str, host: str | None) -> EngineState:
        return EngineState(engine="vllm", pid=1, base_url=url, model="m", started_at="2026-12-07T19:00:00+00:00",
                           log_path="engine.log", mode="remote-process" if host else "process", host=host)  # fmt: skip

    router = engine(router_url, None)
    hosts = [f"onechip@{tpu.external_ip}" for tpu in (first, second)]
    replicas.save(replicas.ReplicaSetState(
        launch=launch, replicas=[engine(f"http://127.0.0.1:{9 + i}", h) for i, h in enumerate(hosts)], router=router
    ))  # fmt: skip
    engine_state.save(router)
    return [r.base_url for r in replicas.load().replicas]  # type: ignore[union-attr]


def test_a_bench_of_a_router_over_two_tpus_holds_both_and_takes_neither_when_one_is_held(fast, monkeypatch, tmp_path):
    # the router of `up --replicas 2` over two TPUs: a bench holds each TPU's claim while it measures, and one held
    # elsewhere (a `cloud down` of it) stops it before it measures, the other's claim let go (a bench after is free).
    # The fake API gives every TPU the address 127.0.0.1, so each replica's host matches both records here
    _router_over_two_tpus()
    _, release, runs = _grid_paused(monkeypatch)
    release.set()
    monkeypatch.setattr(api._bench, "with_replicas", lambda config: config)  # no router to ask for its replicas
    config = BenchConfig(base_url="http://localhost:30000", contexts=[128], clients=[1])
    with records.claimed(P, "tpu-b"), pytest.raises(BusyError, match="tpu-b"):
        api.bench(config, out_dir=tmp_path / "refused")
    with records.claimed(P, "tpu-a"), pytest.raises(BusyError, match="tpu-a"):
        api.bench(config, out_dir=tmp_path / "refused")
    assert runs == []
    api.bench(config, out_dir=tmp_path / "run")  # neither claim left behind
    assert runs == [str(tmp_path / "run")]


def test_the_router_by_another_name_of_this_host_is_measured_with_its_replicas(fast, monkeypatch):
    # with_replicas matched the router by its URL's text: bench http://localhost:30000 of the router up recorded at
    # http://127.0.0.1:30000 read no replica's /metrics (and --router-policies refused it as no router of up's)
    urls = _router_over_two_tpus()
    config = BenchConfig(base_url="http://localhost:30000", contexts=[128], clients=[1])
    assert api._bench.with_replicas(config).replica_urls == urls
