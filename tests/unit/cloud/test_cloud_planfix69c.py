"""Cloud busy errors of planfix69c: a claim this very process holds (an MCP server's other tool call in flight, a
`cloud up` beside a `cloud down`) is said as this process's, not as another onechip's to stop with Ctrl-C (which
would stop the server itself); one another process holds keeps naming that process."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import test_cloud_qa62
from test_cloud_failures import OK, P, up

from onechip import api
from onechip.cloud import records
from onechip.errors import BusyError
from onechip.paths import holder_pids
from onechip.schemas.cloud import CloudNameRequest

script = test_cloud_qa62.script  # the scripted fake API's fixture, found by its name here
NAME = "onechip-v5e-1"


def _down_refused() -> str:
    with pytest.raises(BusyError) as info:
        api.cloud_down(CloudNameRequest(project=P, name=NAME))
    return str(info.value)


def test_a_claim_this_process_holds_is_said_as_another_call_of_this_process(fast):
    up(zones=[OK], provisioning="spot", no_limit=True)
    with records.claimed(P, NAME):  # what an `up` tool call of this same MCP server holds while it waits
        said = _down_refused()
    assert "\n" not in said and f"pid {os.getpid()}" in said and "nothing was deleted" in said, said
    assert "this onechip process" in said and "another tool call" in said, said
    assert "Ctrl-C" not in said and "another onechip" not in said, said


def test_a_claim_another_process_holds_names_that_process_and_ctrl_c(fast, tmp_path):
    up(zones=[OK], provisioning="spot", no_limit=True)
    lock = records._dir() / "claims" / P / f"{NAME}.lock"
    hold = f"import fcntl,os,time; fd=os.open({str(lock)!r}, os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", hold])
    try:
        started = time.monotonic()
        while child.pid not in holder_pids(lock) and time.monotonic() - started < 10:
            time.sleep(0.02)
        said = _down_refused()
    finally:
        child.kill()
        child.wait()
    assert f"another onechip of this home (pid {child.pid}" in said and "Ctrl-C" in said, said
    assert "this onechip process" not in said, said
