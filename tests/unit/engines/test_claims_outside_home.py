"""Tests never claim ports in the real user's ~/.cache/onechip/ports (port_claims.claims_dir): every engine a test
started there left a claim file behind (600+ on one machine). tests/conftest.py points ONECHIP_PORT_CLAIMS at a
folder under pytest's temporary root for every test and every process a test starts."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

from onechip.engines import port_claims

REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the password database's home, whatever $HOME says


def test_claims_of_a_test_go_outside_the_real_home():
    assert not port_claims.claims_dir().is_relative_to(REAL_HOME), port_claims.claims_dir()


def test_claims_of_a_process_a_test_starts_go_outside_the_real_home():
    code = "from onechip.engines import port_claims; print(port_claims.claims_dir())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(port_claims.claims_dir())
    assert not Path(out).is_relative_to(REAL_HOME), out
