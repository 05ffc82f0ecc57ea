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
