"""The cost and report layers never import the CLI stack (typer, click, rich) nor matplotlib's pyplot,
and importing them does not import matplotlib at all (it is loaded only when a plot is drawn)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_cost_and_report_import_no_cli_or_plotting() -> None:
    code = (
        "import json, sys, onechip.cost, onechip.report, onechip.report.html, onechip.report.plots; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    loaded = set(
        json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    )
    assert not loaded & {"typer", "click", "rich", "matplotlib"}
