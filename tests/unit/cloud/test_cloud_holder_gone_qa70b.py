"""A claim's holder that ends between a `cloud down`'s failed claim and its naming of the holder (helper qa70b,
2026-12-07): the down left the TPU as 'held by another process (its pid not readable)' (exit 8) though nothing held
it any more, and it billed on until a second down. A claim found taken with no holder left is taken again, once."""

from __future__ import annotations

import subprocess
import sys

from test_cloud_cloud70 import HOLDER
from test_cloud_failures import OK, P, ours, up

from onechip.cloud import records


def test_a_down_deletes_a_tpu_whose_holder_ended_as_it_was_found(fast, run, monkeypatch):
    up(zones=[OK], provisioning="spot", no_limit=True, name="held-one")
    up(zones=[OK], provisioning="spot", no_limit=True, name="free-one")
    path = records.claim_path(P, "held-one")
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # noqa: S603
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    real_pids = records.holder_pids

    def holder_pids(claim):  # asked once the claim was found taken: the holder ends just then
        if holder.poll() is None:
            holder.communicate(timeout=30)
        return real_pids(claim)

    monkeypatch.setattr(records, "holder_pids", holder_pids)
    try:
        rc, out, err = run("cloud", "down", "--project", P, "--yes")
    finally:
        if holder.poll() is None:
            holder.communicate(timeout=30)
    assert rc == 0, (rc, out, err)
    assert ours(fast) == set()
