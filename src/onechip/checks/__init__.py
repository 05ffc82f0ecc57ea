"""Capability checks against an OpenAI-compatible endpoint: one entrypoint, `run_checks`.

Domains and the `--only` names that select them: smoke → chat, tools → tool_calling, agent → agent
(MCP `count_ids`), needle → long_context, determinism → determinism, multimodal → multimodal (only when
asked: it is not in DEFAULT_ORDER). Each returns a `CheckResult` with
a verdict drawn from its probes; nothing here prints (progress goes through `on_progress`). Every probe
talks to the server through one `vllm.wire.WireClient` (sent `Authorization: Bearer <key>`, the key
vllm.wire.api_key_from_env gives for the server's host, for a server started with `--api-key`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from onechip.checks.adk_agent import run_case_adk
from onechip.checks.agent import check_agent
from onechip.checks.determinism import check_determinism
from onechip.checks.multimodal import check_multimodal
from onechip.checks.needle import check_needle
from onechip.checks.smoke import check_smoke
from onechip.checks.tools import check_tools
from onechip.checks.verdicts import combine
from onechip.errors import ConfigError, Interrupted
from onechip.paths import write_text_atomic
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas.checks import CHECK_NAMES, CheckOptions, CheckReport, CheckResult
from onechip.schemas.common import plural
from onechip.vllm.wire import WireClient, api_key_from_env

__all__ = ["CHECK_NAMES", "DEFAULT_ORDER", "run_checks"]

DEFAULT_ORDER = ["smoke", "tools", "agent", "determinism", "needle"]
BUSY_RETRIES = 3  # a probe's request answered 429/503 is sent again this many times (vllm.wire.WireClient)

Runner = Callable[[WireClient, str, CheckOptions, dict[str, Any]], CheckResult]


def _describe(exc: ValidationError) -> str:
    """One line per pydantic error, joined: `agent_runs: Input should be ... (got -1)`."""
    return "; ".join(
        f"{'.'.join(str(part) for part in err['loc'])}: {err['msg']} (got {err.get('input')!r})"
        for err in exc.errors(include_url=False)
    )


def _runners() -> dict[str, Runner]:
    return {
        "smoke": lambda ep, m, o, ctx: check_smoke(ep, m, o),
        "tools": lambda ep, m, o, ctx: check_tools(ep, m, o),
        "agent": lambda ep, m, o, ctx: check_agent(
            ep, m, o, ctx.get("out_dir"), ctx["on_progress"], run_case_adk if o.agent == "adk" else None
        ),
        "determinism": lambda ep, m, o, ctx: check_determinism(ep, m, o),
        "needle": lambda ep, m, o, ctx: check_needle(ep, m, o, ctx.get("max_model_len")),
        "multimodal": lambda ep, m, o, ctx: check_multimodal(ep, m, o),
    }


def run_checks(
    base_url: str,
    model: str | None = None,
    only: list[str] | None = None,
    *,
    out_dir: Path | None = None,
    on_progress: ProgressFn = no_progress,
    **options: Any,
) -> CheckReport:
    """Run the capability checks against `base_url` (e.g. http://127.0.0.1:8000) and return their verdicts.

    `model`: served model name; None = the first one in /v1/models. `only`: names from CHECK_NAMES
    (smoke, tools, agent, needle, determinism); None = all, in DEFAULT_ORDER. `options`: fields of
    `CheckOptions`. When `out_dir` is given, `checks.json` (the report) and agent transcripts are
    written there.

    Raises ConfigError for unknown check names or options, EndpointError when the endpoint cannot be
    reached or does not serve `model`, Interrupted on Ctrl-C (the domains that finished are saved in
    checks.json, marked `interrupted`). A probe that fails is a verdict, not an exception.
    """
    names = list(DEFAULT_ORDER) if not only else [n.strip() for n in only if n.strip()]
    unknown = [n for n in names if n not in CHECK_NAMES]
    if unknown:
        raise ConfigError(f"unknown check(s) {', '.join(unknown)}; choose from {', '.join(CHECK_NAMES)}")
    try:
        opts = CheckOptions(**options)
    except ValidationError as exc:
        raise ConfigError(f"bad check options: {_describe(exc)}") from exc

    started = time.perf_counter()
    report_start = datetime.now(UTC).isoformat(timespec="seconds")
    results: list[CheckResult] = []
    with WireClient(
        base_url, timeout_s=opts.request_timeout_s, api_key=api_key_from_env(base_url), busy_retries=BUSY_RETRIES
    ) as ep:
        entry = ep.served_model(model, timeout_s=min(30.0, opts.request_timeout_s))
        served, max_model_len = entry.id, entry.max_model_len
        if opts.max_model_len is not None:
            max_model_len = opts.max_model_len
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        ctx: dict[str, Any] = {"out_dir": out_dir, "on_progress": on_progress, "max_model_len": max_model_len}
        try:
            _run_domains(names, ep, served, opts, ctx, results, on_progress)
        except KeyboardInterrupt:
            # keep what finished: the probes already judged are saved, marked interrupted
            report = _report(ep.root, served, report_start, started, opts, results, interrupted=True)
            where = _save(report, out_dir)
            raise Interrupted(f"check interrupted after {len(results)} of {len(names)} domains{where}") from None
    report = _report(ep.root, served, report_start, started, opts, results)
    report.endpoint_failing = endpoint_failing(ep)
    if report.endpoint_failing:
        _untested(results)
    if ep.busy:
        report.server_busy = (
            f"server busy: {ep.busy} request(s) the checks sent answered 429/503 on all {BUSY_RETRIES + 1} tries "
            f"(Retry-After honoured); their probes are not_tested, not failed; the last: {ep.last_busy}"
        )
    _save(report, out_dir)
    return report


def endpoint_failing(ep: WireClient) -> str | None:
    """One line when the server failed every request the probes sent (chat, completions, tokenize; /v1/models
    answered): each was a 5xx or got no answer, so the verdicts say nothing of the model; None when any was
    answered with a generation's 2xx (a /tokenize answer or a 400 for a prompt over max_model_len come from the API
    server without its engine: WireClient._checked)."""
    failed = ep.server_errors + ep.unanswered
    if ep.answered or not failed:
        return None
    how = ", ".join(([f"{ep.server_errors} answered 5xx"] if ep.server_errors else [])
                    + ([f"{ep.unanswered} got no answer"] if ep.unanswered else []))  # fmt: skip
    return (
        f"{ep.root} answers /v1/models but failed all {plural(failed, 'request')} the checks sent ({how}; the last: "
        f"{ep.last_failure}); the verdicts say nothing of the model: see the server's log"
    )


UNANSWERED = "not tested: the server answered none of the checks' requests (see endpoint_failing)"


def _untested(results: list[CheckResult]) -> None:
    """Mark not_tested, in place, each probe that failed when the server answered no request at all (a 5xx or no
    answer to each, endpoint_failing): nothing the model would have said is known, as when it stays busy
    (verdicts.failed). A request that timed out or failed on a server that answered others stays a fail, the
    engine's or the model's: the same server did answer. Each note says which."""
    for result in results:
        failed = [p for p in result.probes if p.verdict == "fail"]
        for probe in failed:
            probe.verdict, probe.note = "not_tested", f"{UNANSWERED}: {probe.note}"
        if failed:
            result.verdict = combine(result.probes)
            result.note = f"{UNANSWERED}; {result.note}" if result.note else UNANSWERED


def _run_domains(
    names: list[str], ep: WireClient, served: str, opts: CheckOptions, ctx: dict[str, Any],
    results: list[CheckResult], on_progress: ProgressFn,
) -> None:  # fmt: skip
    """Run each named domain in order, appending its result to `results` as it finishes."""
    runners = _runners()
    for i, name in enumerate(names):
        on_progress(ProgressEvent("check", f"{name}: running", done=i, total=len(names)))
        # a domain's own messages keep the run's bar where it is
        ctx["on_progress"] = lambda e, i=i: on_progress(ProgressEvent("check", e.message, done=i, total=len(names)))
        result = runners[name](ep, served, opts, ctx)
        results.append(result)
        on_progress(ProgressEvent("check", f"{name}: {result.verdict}", done=i + 1, total=len(names)))


def _report(
    root: str, served: str, report_start: str, started: float, opts: CheckOptions, results: list[CheckResult],
    *, interrupted: bool = False,
) -> CheckReport:  # fmt: skip
    return CheckReport(
        base_url=root,
        model=served,
        started_at=report_start,
        duration_s=round(time.perf_counter() - started, 2),
        options=json.loads(opts.model_dump_json()),
        results=results,
        interrupted=interrupted,
    )


def _save(report: CheckReport, out_dir: Path | None) -> str:
    """Write checks.json into `out_dir` (when given); return '; saved in PATH' or ''."""
    if out_dir is None:
        return ""
    path = out_dir / "checks.json"
    write_text_atomic(path, report.model_dump_json(indent=2) + "\n")
    return f"; what finished is in {path}"
