"""One function per job. The CLI and the MCP server are thin shells over these: they build the job's
request model (schemas.requests; BenchConfig for bench), call the function, render what it returns.
Each job lives in a module of its own; this package only names them.

    plan(PlanRequest) -> Plan                     up(UpRequest, on_progress) -> UpResult
    check(CheckRequest, on_progress) -> CheckReport  bench(BenchConfig, on_progress, out_dir=...) -> BenchRun
    cost(CostRequest) -> CostReport              report(ReportRequest) -> [paths written]
    demo(DemoRequest, on_progress) -> RunManifest  status() / down() -> EngineStatus; logs() -> lines
    logs_note() -> str (what `logs` says beside them: its log writer gone)
    recorded() -> bool (an engine `up` started is on record)
    demo_cloud_request(DemoRequest) -> CloudUpRequest (the TPU `demo --cloud gcp` asks for)
    tpu_name(CloudUpRequest) -> str (the name `cloud up` gives its TPU: --name, else onechip-CHIP)
    cloud_up(CloudUpRequest, on_progress) -> CloudUpResult   cloud_probe / cloud_zones / cloud_status(es) /
    cloud_down_targets / cloud_down_found / cloud_down (CloudNameRequest) / cloud_quote / cloud_up_quote /
    cloud_target: getting a TPU (onechip.cloud)
    listed_keeps(CloudResource) -> str (why `cloud down` keeps one cloud_down_found listed: what its preview says)
    simulate(SimulateRequest, on_progress) -> BenchRun (predicted)
    simulate_policies(SimulateRequest, on_progress) -> PolicyComparison (one predicted run per --router-policies)
    simulate_find_max(SimulateRequest, on_progress) -> SearchResult (bench's SLO search over predicted cells)
    advise(AdviseRequest, on_progress) -> Advice
    prices(PricesRequest) / prices_refresh(PricesRequest, on_progress) -> PriceTable (Cloud Billing Catalog)
    logs_tail(LogsRequest) -> LogTail             summarize_logs(SummarizeLogsRequest) -> LogSummary

Progress goes through `on_progress` (onechip.progress); every error is an OnechipError (onechip.errors).
"""

from onechip.api._bench import (
    bench,
    bench_unmeasured,
    compare_policies,
    find_max,
    nothing_to_resume,
    saved_bench_config,
)
from onechip.api._checks import check, check_failure
from onechip.api._cloud import (
    UNLISTED_AGAIN,
    cloud_down,
    cloud_down_found,
    cloud_down_targets,
    cloud_probe,
    cloud_quote,
    cloud_status,
    cloud_statuses,
    cloud_target,
    cloud_up,
    cloud_up_quote,
    cloud_zones,
    down_deadline,
)
from onechip.api._demo import demo
from onechip.api._demo_host import demo_cloud_request
from onechip.api._deploy import DeployResult, deploy_k8s
from onechip.api._engines import down, logs, logs_note, logs_tail, recorded, status, summarize_logs, up
from onechip.api._plan import does_not_fit, measured_boots_dir, plan, remember_boot
from onechip.api._policies import simulate_policies
from onechip.api._predict import (
    advise,
    advise_unserved,
    advise_unserved_error,
    calibration_for,
    predicted_cells,
    simulate,
)
from onechip.api._prices import prices, prices_refresh
from onechip.api._report import cost, report
from onechip.api._sim_search import simulate_find_max
from onechip.cloud.provision import listed_keeps, tpu_name

__all__ = [
    "UNLISTED_AGAIN", "DeployResult", "advise", "advise_unserved", "advise_unserved_error", "bench", "bench_unmeasured",
    "calibration_for",
    "check", "check_failure", "cloud_down", "cloud_down_found", "cloud_down_targets", "cloud_probe", "cloud_quote",
    "cloud_status", "cloud_statuses", "cloud_target", "cloud_up", "cloud_up_quote", "cloud_zones", "compare_policies",
    "cost", "demo", "demo_cloud_request", "deploy_k8s", "does_not_fit", "down", "down_deadline", "find_max",
    "listed_keeps", "logs", "logs_note", "logs_tail", "measured_boots_dir", "nothing_to_resume", "plan",
    "predicted_cells", "prices", "prices_refresh", "recorded", "remember_boot", "report", "saved_bench_config",
    "simulate", "simulate_find_max", "simulate_policies", "status", "summarize_logs", "tpu_name", "up",
]  # fmt: skip
