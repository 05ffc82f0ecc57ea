"""Cloud pass 70: `demo --cloud` holds its TPU's claim for as long as it uses the TPU, and a `cloud down` without
--name deletes what no other process holds, naming each TPU it left and who holds it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading

import pytest
from test_cloud_failures import OK, P, _demo, ours, up

from onechip import api, procs
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


# --- item 2: a `cloud down` without --name deletes what no one holds, and names each TPU it left and its holder


@contextlib.contextmanager
def _held_by_another_process(name: str, *argv: str):
    """Another process holding this home's claim on `name` (a flock of records.claim_path, as a `cloud up` of it
    holds while it waits), `argv` after its own arguments. Yields its pid."""
    path = records.claim_path(P, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(  # noqa: S603 (our own interpreter, fixed arguments)
        [sys.executable, "-c", HOLDER, str(path), *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        yield holder.pid
    finally:
        holder.communicate(timeout=30)  # its stdin closed: it ends, its lock with it


HOLDER = "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); fcntl.flock(fd, " \
         "fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()"  # fmt: skip


@pytest.mark.parametrize("as_json", [False, True])
def test_a_down_without_name_deletes_the_others_and_names_the_one_held(fast, run, as_json):
    # Before: one TPU held by a running `cloud up` (or demo) refused the whole `cloud down` (exit 8, nothing deleted),
    # so everything else billed on. Now the others are deleted, the held one is left, named in one line with its
    # holder's pid and command, and the exit is 8.
    up(zones=[OK], provisioning="spot", no_limit=True, name="held-one")
    up(zones=[OK], provisioning="spot", no_limit=True, name="free-one")
    with _held_by_another_process("held-one") as pid:
        rc, out, err = run("cloud", "down", "--project", P, "--yes", *(["--json"] if as_json else []))
    assert rc == BusyError.exit_code, (rc, out, err)
    assert ours(fast) == {(OK, "node", "held-one")}  # the other deleted, the held one untouched
    assert [r.name for r in records.load_all()] == ["held-one"]
    said = f"left node held-one ({OK}): its claim held by pid {pid} ({sys.executable} -c import fcntl"
    if as_json:
        result = json.loads(out)
        assert result["deleted"] == [f"node free-one ({OK})"] and len(result["held"]) == 1, result
        assert result["held"][0].startswith(said) and result["exit_code"] == BusyError.exit_code, result
    else:
        assert f"deleted node free-one ({OK})" in out, out
        assert [line for line in out.splitlines() if said in line], out
    assert "Traceback" not in err and len(err.strip().splitlines()) >= 1, err


def test_a_down_without_name_where_every_tpu_is_held_deletes_nothing_and_says_so(fast, run):
    up(zones=[OK], provisioning="spot", no_limit=True, name="held-one")
    with _held_by_another_process("held-one") as pid:
        rc, out, err = run("cloud", "down", "--project", P, "--yes")
    assert rc == BusyError.exit_code and f"pid {pid}" in out + err and "Traceback" not in err, (out, err)
    assert not any(m == "DELETE" for m, _, _ in fast.requests) and ours(fast) == {(OK, "node", "held-one")}


def test_a_down_naming_a_held_tpu_is_still_refused_whole(fast, run):
    up(zones=[OK], provisioning="spot", no_limit=True, name="held-one")
    with _held_by_another_process("held-one") as pid:
        rc, out, err = run("cloud", "down", "--project", P, "--name", "held-one", "--yes")
    assert rc == BusyError.exit_code and f"pid {pid}" in err and len(err.strip().splitlines()) == 1, (out, err)
    assert not any(m == "DELETE" for m, _, _ in fast.requests)


def test_mcp_cloud_down_previews_the_held_tpu_and_deletes_the_others(fast):
    from test_cloud_mcp import calls

    up(zones=[OK], provisioning="spot", no_limit=True, name="held-one")
    up(zones=[OK], provisioning="spot", no_limit=True, name="free-one")
    with _held_by_another_process("held-one") as pid:
        ((_, preview),) = calls(("cloud_down", {"project": P}))
        targets = json.loads(preview.split("targets: ", 1)[1].split("]", 1)[0] + "]")
        assert targets == [f"{P}/{OK}/node/free-one"], preview
        assert f"left node held-one ({OK}): its claim held by pid {pid}" in preview, preview
        ((failed, said),) = calls(("cloud_down", {"project": P, "targets": targets, "confirm": True}))
    assert failed and "\n" not in said and f"deleted node free-one ({OK})" in said and f"pid {pid}" in said, said
    assert ours(fast) == {(OK, "node", "held-one")}


def test_mcp_cloud_down_of_a_target_held_since_its_preview_says_who_holds_it(fast):
    # a target held since the preview is not found among those to delete: refused whole (nothing deleted) as a
    # target gone since, and the line says that it is held and by whom, not only 'a typo, or gone'
    from test_cloud_mcp import calls

    up(zones=[OK], provisioning="spot", no_limit=True, name="held-one")
    up(zones=[OK], provisioning="spot", no_limit=True, name="free-one")
    targets = [f"{P}/{OK}/node/{name}" for name in ("free-one", "held-one")]  # as a preview before the hold gave them
    with _held_by_another_process("held-one") as pid:
        ((failed, said),) = calls(("cloud_down", {"project": P, "targets": targets, "confirm": True}))
    assert failed and "\n" not in said and f"pid {pid}" in said and "nothing deleted" in said, said
    assert len(ours(fast)) == 2


def test_a_holders_command_line_is_said_without_a_secret_on_it(fast, run, monkeypatch):
    # the holder's command line is another program's argv: a token typed on it must not reach our output
    up(zones=[OK], provisioning="spot", no_limit=True, name="held-one")
    token = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    argv = f"python -m onechip cloud up --name held-one --hf-token {token}"  # short: not cut before the token
    monkeypatch.setattr(procs, "command_line", lambda pid: argv)
    with _held_by_another_process("held-one") as pid:
        rc, out, err = run("cloud", "down", "--project", P, "--yes")
        line = records.holders(P, "held-one")
    assert rc == BusyError.exit_code and f"pid {pid}" in out + err, (out, err)
    assert token not in out + err + line and line.startswith(f"pid {pid} (python -m onechip cloud up"), line
