"""The identity of a run directory (`runs/<run-id>/run.json`) and the files beside it.

A run directory holds, each optional:
    run.json        RunManifest (this model)
    plan.json       Plan                 crosscheck.json  CrossCheck
    boot.json       BootRecord           engine.log       the engine's own log
    checks.json     CheckReport          summary.json     BenchRun
    requests.jsonl  RequestSample lines  cost.json        CostReport (older runs: list[CostLine])
    report.md       rendered report      serving-report.json  ServingReport (schemas.serving_report)

`onechip.report.rundir.read_run` loads each file into its model; none is required.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from onechip.schemas.common import Said, StoredResult

RUN_FILES = {
    "manifest": "run.json",
    "plan": "plan.json",
    "crosscheck": "crosscheck.json",
    "boot": "boot.json",
    "engine_log": "engine.log",
    "checks": "checks.json",
    "bench": "summary.json",
    "requests": "requests.jsonl",
    "cost": "cost.json",
    "report_md": "report.md",
}

# what `bench --find-max` writes beside one run per probe (bench.search), and `--router-policies` beside one run
# per policy: a directory of runs, not a run (report.rundir.require_run_files names it so)
SEARCH_FILE = "search.json"
# the files whose presence says a bench (its summary.json) or a search (its search.json) was written in its out dir
# (paths.ctrl_c_says_what_is_kept: a Ctrl-C, or a cancelled MCP call, then says where)
BENCH_FILES = (RUN_FILES["bench"], SEARCH_FILE)
# a predicted probe's verdict (simulate --find-max), written after its run: a probe without it is unfinished
PROBE_FILE = "probe.json"
POLICIES_FILE = "policies.json"


class RunManifest(StoredResult):
    """Who ran what, where and how it ended: the identity rows of every report."""

    model_config = ConfigDict(validate_assignment=True)  # the error set as the run ends is redacted too (Said)

    run_id: str
    created_at: str = Field(description="ISO-8601 UTC.")
    tool_version: str
    python: str
    host: str = Field(description="Client hostname.")
    cpus: int | None = None
    command: str = Field(description="The onechip job, e.g. 'demo --quick'.")
    chip: str = Field(default="cpu", description="Accelerator catalog key the run was on.")
    stage_timings_s: dict[str, float] = Field(default_factory=dict, description="Seconds per stage.")
    status: str = Field(default="running", description="'running', 'ok', 'failed', 'interrupted'.")
    error: Said | None = Field(default=None, description="Why the run failed (redacted).")
