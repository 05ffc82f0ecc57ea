"""What a cancelled MCP call's job says (loose65): bridge.run_job said 'cancelled; what was measured is kept on disk'
of every interrupted job, one that measures nothing or one stopped before it wrote a file included."""

from __future__ import annotations

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from onechip import api
from onechip.mcp.bridge import run_job
from onechip.mcp.tools import TOOLS, BenchRequest
from onechip.schemas.run import RUN_FILES


def _spec(name: str):
    return next(s for s in TOOLS if s.name == name)


def _said(job) -> str:
    with pytest.raises(ToolError) as caught:
        anyio.run(run_job, None, job)
    return str(caught.value)


def test_a_job_that_measures_nothing_says_no_measurement_was_kept():
    def job(on_progress):  # a job with no Ctrl-C handler of its own (plan, status, cost): it writes no run
        raise KeyboardInterrupt

    said = _said(job)
    assert said == "cancelled"  # it measured nothing: no claim about what is on disk
    assert "kept on disk" not in said


@pytest.mark.parametrize("written", [False, True])
def test_bench_interrupted_outside_its_own_handler_says_what_is_in_out_dir(tmp_path, monkeypatch, written):
    out = tmp_path / "r"

    def interrupted_bench(config, on_progress, out_dir, resume):  # before run_grid's handler (or after it returned)
        if written:
            out_dir.mkdir()
            (out_dir / RUN_FILES["bench"]).write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "bench", interrupted_bench)
    request = BenchRequest(base_url="http://127.0.0.1:9/v1", model="m", out_dir=out)
    said = _said(lambda on_progress: _spec("bench").job(request, on_progress))
    # the CLI's words (paths.ctrl_c_says_what_is_kept, as bench_cmd says them)
    assert said == (
        f"bench interrupted; what was measured is in {out}" if written else "bench interrupted; nothing written"
    )
