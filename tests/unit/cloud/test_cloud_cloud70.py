"""Cloud pass 70: `demo --cloud` holds its TPU's claim for as long as it uses the TPU, and a `cloud down` without
--name deletes what no other process holds, naming each TPU it left and who holds it."""

from __future__ import annotations

import os
import threading

import pytest
from test_cloud_failures import OK, P, _demo, ours

from onechip import api
from onechip.api import _demo_host
from onechip.cloud import records
from onechip.errors import BusyError, Interrupted, OnechipError
from onechip.schemas.cloud import CloudNameRequest

NAME = "onechip-v5e-1"  # the name demo --cloud gcp --chip v5e-1 gives its TPU (provision.tpu_name)


def _demo_paused_after_provisioning(monkeypatch, fail: type[BaseException]):
    """Make the demo's first token read (after its TPU is READY) wait for the event returned, then raise `fail`; a
    later demo's read raises at once (a second demo must not wait on the first's event)."""
    release, reached = threading.Event(), threading.Event()

    def token_file(request, project, on_progress):
        if not reached.is_set():
            reached.set()
            release.wait(30)
        raise fail("the boot failed (test)")

    monkeypatch.setattr(_demo_host, "_demo_token_file", token_file)
    return reached, release


# --- item 1: demo --cloud holds the claim `cloud up` takes, until its TPU is deleted


def test_a_down_or_a_second_demo_while_a_demo_uses_its_tpu_is_refused(fast, tmp_path, monkeypatch):
    # Before: the demo held its TPU's claim only while `cloud up` waited for it: a `cloud down` run while it measured
    # deleted the TPU under it, and a second demo resumed it, then deleted it as its own when it failed
    reached, release = _demo_paused_after_provisioning(monkeypatch, OnechipError)
    first: dict = {}

    def run_first():
        try:
            _demo(tmp_path / "first")
        except OnechipError as exc:
            first["error"] = exc

    thread = threading.Thread(target=run_first)
    thread.start()
    try:
        assert reached.wait(30), "the demo never got its TPU"
        assert ours(fast) == {(OK, "queued-resource", NAME)}
        with pytest.raises(BusyError) as down:
            api.cloud_down(CloudNameRequest(project=P, name=NAME))
        with pytest.raises(BusyError) as second:
            _demo(tmp_path / "second")
        assert not any(m == "DELETE" for m, _, _ in fast.requests), fast.requests
        assert ours(fast) == {(OK, "queued-resource", NAME)}  # still the first demo's
    finally:
        release.set()
        thread.join(30)
    for said in (str(down.value), str(second.value)):
        assert "\n" not in said and NAME in said and f"pid {os.getpid()}" in said, said
    assert "nothing was deleted" in str(down.value) and "nothing was sent" in str(second.value)
    assert not (tmp_path / "second").exists()  # refused before its run folder was made
    assert str(first["error"]).endswith(f"; the demo deleted queued-resource {NAME} ({OK})"), first
    assert [m for m, _, _ in fast.requests].count("POST") == 1, fast.requests  # the first demo's create alone
    assert ours(fast) == set() and records.load_all() == []


@pytest.mark.parametrize("fail", [OnechipError, KeyboardInterrupt])
def test_a_demo_releases_its_claim_on_every_exit(fast, tmp_path, monkeypatch, fail):
    reached, release = _demo_paused_after_provisioning(monkeypatch, fail)
    release.set()
    with pytest.raises(Interrupted if fail is KeyboardInterrupt else OnechipError):
        _demo(tmp_path / "run")
    assert reached.is_set() and ours(fast) == set()
    with records.claimed(P, NAME):  # free again: nothing of that demo holds it
        pass
