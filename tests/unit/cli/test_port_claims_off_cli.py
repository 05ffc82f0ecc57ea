"""`up` where the port claims (engines.port_claims) cannot be used: `$ONECHIP_PORT_CLAIMS` naming a file, a folder
that cannot be made. The claims were skipped without a word, so two `up`s from two onechip homes could take one port
while an engine booted, nothing saying that protection was off; `up` now says it once, with why, on stderr and in
its result (UpResult.warnings)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from factories import embedded_plan
from onechip.engines import port_claims
from onechip.engines.local import free_port

FAKE_VLLM = Path(__file__).parents[2] / "fakes" / "vllm_server.py"


def test_an_up_whose_claims_folder_is_a_file_says_once_that_claims_are_off_and_why(run, tmp_path, offline_home,
                                                                                   monkeypatch):  # fmt: skip
    not_a_folder = tmp_path / "claims"
    not_a_folder.write_text("x")
    monkeypatch.setenv(port_claims.CLAIMS_ENV, str(not_a_folder))
    plan = tmp_path / "plan.json"
    plan.write_text(embedded_plan().model_dump_json())
    launcher = f"{sys.executable} {FAKE_VLLM}"
    port = str(free_port())
    code, out, err = run("up", "--engine", "vllm", "--plan", str(plan), "--launcher", launcher, "--port", port,
                         "--json")  # fmt: skip
    try:
        assert code == 0, err
        said = [line for line in err.splitlines() if "port claims are off" in line]
        # the folder and why (mkdir of a path that is a file: EEXIST)
        assert len(said) == 1 and f"({not_a_folder} is not a folder; " in said[0], err
        (warning,) = json.loads(out)["warnings"]
        assert said[0].endswith(warning), (said, warning)
    finally:
        run("down")
    assert not_a_folder.read_text() == "x"  # nothing written through it
