"""The new-user break pass cli56 (2026-12-05), one regression test per finding, each failing before its fix."""

from __future__ import annotations

import pytest

from onechip import api
from onechip.mcp.tools import TOOLS
from onechip.schemas.requests import CostRequest

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize(("rate", "said"), [(0.001, "0.001"), (0.0456, "0.0456"), (1496.5, "1,496.5")])
def test_a_small_throughput_is_titled_with_its_figures_not_as_zero(run, rate, said):
    # `cost --output-tok-per-s 0.001` titled its table 'v5e-1 at 0.0 output tok/s' (and the MCP summary said so)
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", str(rate))
    assert code == 0 and f"v5e-1 at {said} output tok/s" in " ".join(out.split()), (out, err)
    report = api.cost(CostRequest(chip="v5e-1", output_tok_per_s=rate))
    summary = next(t for t in TOOLS if t.name == "cost").summary(report)  # the MCP tool's one line
    assert summary.startswith(f"v5e-1 at {said} output tok/s: "), summary
