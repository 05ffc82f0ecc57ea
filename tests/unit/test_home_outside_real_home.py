"""Unit tests never write the real user's ~/.cache/onechip: a test that saved an engine record without pointing
ONECHIP_HOME elsewhere (tests/unit/cli/test_logs_summary_cmd.py) left engine.json there (pid 4194305,
http://127.0.0.1:9), which the user's next `onechip status` / `logs` / `down` read as their engine's.
tests/unit/conftest.py points ONECHIP_HOME at a folder under pytest's temporary root for every unit test."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

from onechip.engines import state as engine_state_store
from onechip.paths import onechip_home

REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the password database's home, whatever $HOME says


def test_the_home_of_a_unit_test_is_outside_the_real_home() -> None:
    assert not onechip_home().is_relative_to(REAL_HOME), onechip_home()
    assert not engine_state_store.state_path().is_relative_to(REAL_HOME), engine_state_store.state_path()


def test_the_home_of_a_process_a_unit_test_starts_is_outside_the_real_home() -> None:
    code = "from onechip.paths import onechip_home; print(onechip_home())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(onechip_home()) and not Path(out).is_relative_to(REAL_HOME), out
