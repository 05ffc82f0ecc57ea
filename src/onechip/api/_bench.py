"""`bench` and `find_max`: measuring a grid, and the SLO search over it."""

from __future__ import annotations

from pathlib import Path

from onechip import bench as bench_layer
from onechip import cost as cost_layer
from onechip.api._cloud import measuring_on, tpu_ended_under
from onechip.engines import replicas
from onechip.errors import BusyError, ConfigError, EndpointError, OnechipError
from onechip.paths import write_text_atomic
from onechip.progress import ProgressFn, no_progress
from onechip.report.search import write_search_report
from onechip.schemas import BenchConfig, BenchRun, Plan
from onechip.schemas.bench import PolicyCell, PolicyComparison, PolicyRun, SearchResult
from onechip.schemas.run import POLICIES_FILE, SEARCH_FILE
from onechip.vllm.wire import same_server


def bench(
    config: BenchConfig, on_progress: ProgressFn = no_progress, *, out_dir: Path, plan: Plan | None = None,
    resume: bool = False,
) -> BenchRun:  # fmt: skip
    """Measure a context x clients grid against `config.base_url`; writes `out_dir`/requests.jsonl and
    summary.json and returns the BenchRun. Raises EndpointError (unreachable URL, probe failed), ConfigError
    (out_dir holds another run; resumed config differs), Interrupted (Ctrl-C; finished requests kept).
    See onechip.bench.run_grid. When `config.base_url` is the router of `up --replicas N`, each replica's
    /metrics is read around every cell too (CellResult.replicas); an engine gone mid-run is said as `measure` says.
    Raises BusyError (nothing measured) when another process of this home holds the claim on a TPU of onechip's
    under that engine (measuring_on: another bench of it, a `cloud down` deleting it), and holds it meanwhile."""
    with measuring_on(config.base_url):
        return measure(with_replicas(config), out_dir, plan=plan, resume=resume, on_progress=on_progress)


def measure(config: BenchConfig, out_dir: Path, *, plan: Plan | None = None, resume: bool = False,
            on_progress: ProgressFn = no_progress) -> BenchRun:  # fmt: skip
    """bench.run_grid, whose EndpointError (the engine gone mid-run: what was measured is kept) names onechip's cloud
    TPU under the engine when it ended meanwhile (spot PREEMPTED, a flex-start run SUSPENDED at its max run duration),
    with its state and delete command (tpu_ended_under): the line said only that the connection was refused. Raises
    as run_grid."""
    try:
        return bench_layer.run_grid(config, out_dir, plan=plan, resume=resume, on_progress=on_progress)
    except EndpointError as exc:
        if why := tpu_ended_under(config.base_url):
            raise EndpointError(f"{exc}; the TPU it ran on ended: {why}") from None
        raise


def bench_unmeasured(run: BenchRun, out_dir: Path) -> OnechipError | None:
    """The error of a bench `run` (written to `out_dir`) that measured nothing, for its caller to raise once it has
    shown the run (the CLI's exit, the MCP tool's error): EndpointError when every measured cell failed (the line
    names the resume that measures them again), ConfigError when no cell could run (each was skipped: it does not
    fit); None when a cell is ok or the grid is empty."""
    if not run.cells or any(c.status == "ok" for c in run.cells):
        return None
    failed = [c for c in run.cells if c.status == "failed"]
    if failed:
        return EndpointError(
            f"every measured cell failed; first: {failed[0].reason}; measure them again (--resume {out_dir})"
        )
    return ConfigError(f"no cell could run; first: {run.cells[0].reason}")


def with_replicas(config: BenchConfig) -> BenchConfig:
    """`config` with the replica URLs of the saved set when its base_url is that set's router (vllm.wire.same_server:
    http://localhost:P is the http://127.0.0.1:P `up` records)."""
    saved = replicas.load()
    if (
        config.replica_urls
        or saved is None
        or saved.router is None
        or not same_server(saved.router.base_url, config.base_url)
    ):
        return config
    return config.model_copy(update={"replica_urls": [r.base_url for r in saved.replicas]})


def compare_policies(
    config: BenchConfig, on_progress: ProgressFn = no_progress, *, out_dir: Path, plan: Plan | None = None
) -> PolicyComparison:
    """`bench --router-policies a,b` against the router of `up --replicas N`: for each policy, restart the
    router with it (engines.replicas.switch_policy) and run the same workload into `out_dir`/<policy>; write
    `out_dir`/policies.json. The router is left on the last policy. Raises ConfigError when base_url is not
    the saved router, and what `bench` raises."""
    saved = replicas.load()
    if saved is None or saved.router is None or not same_server(saved.router.base_url, config.base_url):
        raise ConfigError("--router-policies needs the router URL of `onechip up --replicas N` (see `status`)")
    result = PolicyComparison(base_url=config.base_url)
    with measuring_on(config.base_url):  # the whole comparison, its router restarts too, as one bench
        for policy in config.router_policies or []:
            replicas.switch_policy(policy, on_progress)
            one = with_replicas(config.model_copy(update={"router_policies": None}))
            run = measure(one, Path(out_dir) / policy, plan=plan, on_progress=on_progress)
            result.runs.append(PolicyRun(policy=policy, run_dir=str(Path(out_dir) / policy), cells=policy_cells(run)))
    write_text_atomic(Path(out_dir) / POLICIES_FILE, result.model_dump_json(indent=2))
    return result


def policy_cells(run: BenchRun) -> list[PolicyCell]:
    """Each cell of a run as the policy comparison shows it: cache hit share, TTFT per turn, throughput."""
    out = []
    for c in run.cells:
        hits = sum(r.prefix_cache_hits or 0.0 for r in c.replicas)
        queries = sum(r.prefix_cache_queries or 0.0 for r in c.replicas)
        out.append(
            PolicyCell(
                context_tokens=c.context_tokens,
                clients=c.clients,
                status=c.status,
                cached_share=c.cached_share,
                server_hit_rate=hits / queries if queries else None,
                output_tok_per_s=c.output_tok_per_s,
                ttft_ms_by_turn=[t.ttft_ms.median for t in c.turns],
                requests_by_replica=[r.requests for r in c.replicas],
                requests_sent=c.requests_sent,
                requests_ok=c.requests_ok,
            )  # fmt: skip
        )
    return out


def find_max(
    config: BenchConfig, on_progress: ProgressFn = no_progress, *, out_dir: Path, plan: Plan | None = None
) -> SearchResult:
    """`bench --find-max`: the largest load (clients or requests/s) whose measured cell meets `config.slo` at
    `config.slo_percentile`; one bench run per probe under `out_dir`, and `out_dir`/search.json (with the
    answer priced on `config.chip`), search.md and search.html. An interrupted search resumes when run again into
    the same `out_dir` (finished probes read back); until then its search.json and search.md say it was interrupted
    and hold the probes so far. Raises what `bench` raises, and ConfigError for an unknown chip or pricing model, or
    an `out_dir` holding a bench run or another search (before measuring), BusyError as `bench`. See
    onechip.bench.search."""
    if config.chip is not None:  # an unknown chip or pricing model fails before anything is measured
        cost_layer.cost_lines(config.chip, 1.0, config.pricing)
    try:
        with measuring_on(config.base_url):  # as bench's: one measurement of the engine at a time
            result = bench_layer.find_max(config, out_dir, plan=plan, on_progress=on_progress)
    except (KeyboardInterrupt, OnechipError) as exc:  # the partial search.json it wrote (stopped by Ctrl-C or an
        partial = Path(out_dir) / SEARCH_FILE  # error mid-search), rendered as a finished one is
        if not isinstance(exc, BusyError | ConfigError) and partial.is_file():
            write_search_report(bench_layer.read_search(Path(out_dir)), Path(out_dir))
        raise
    if config.chip is not None and result.output_tok_per_s:
        result.costs = cost_layer.cost_lines(config.chip, result.output_tok_per_s, config.pricing)
        write_text_atomic(Path(out_dir) / "search.json", result.model_dump_json(indent=2))
    write_search_report(result, Path(out_dir))
    return result


def nothing_to_resume(run_dir: Path) -> str:
    """Why `bench --resume run_dir` has no run to continue (saved_bench_config found none): a --find-max search's
    directory (SEARCH_FILE) resumes when the same search runs into it again; any other holds no summary.json."""
    if (Path(run_dir) / SEARCH_FILE).is_file():
        return f"{run_dir} holds a --find-max search: run the same search into it again (--out {run_dir}) to resume it"
    return f"nothing to resume in {run_dir}: no summary.json (give the server URL to start a run there)"


def saved_bench_config(run_dir: Path) -> BenchConfig | None:
    """The BenchConfig a bench run in `run_dir` was started with (None if it saved none); what `--resume`
    continues. Raises ConfigError when its summary.json is unreadable."""
    return bench_layer.saved_config(Path(run_dir))
