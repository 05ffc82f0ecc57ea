"""`check`: capability probes against an endpoint."""

from __future__ import annotations

from onechip import checks
from onechip.errors import ChecksNotPassed, EndpointError, OnechipError
from onechip.progress import ProgressFn, no_progress
from onechip.schemas import CheckReport
from onechip.schemas.requests import CheckRequest


def check(request: CheckRequest, on_progress: ProgressFn = no_progress) -> CheckReport:
    """Run capability probes against the OpenAI-compatible endpoint `request.base_url`; see
    onechip.checks.run_checks.

    `request.only`: smoke, tools, agent, needle, determinism (None = all); its CheckOptions fields are the
    knobs. Writes checks.json into `request.out_dir` when given. Raises ConfigError (bad names/options) and
    EndpointError (endpoint unreachable).
    """
    return checks.run_checks(
        request.base_url, request.model, request.only, out_dir=request.out_dir, on_progress=on_progress,
        **request.options(),
    )  # fmt: skip


def check_failure(request: CheckRequest, report: CheckReport) -> OnechipError | None:
    """The error a finished `check` ends with, None where it passed (the CLI's exit code, the MCP tool error):
    EndpointError (exit 6, could not run) where the server failed every probe's request (report.endpoint_failing),
    or stayed busy (report.server_busy) and every verdict not allowed is not_tested; else ChecksNotPassed (exit 10),
    carrying the report, where a verdict is not allowed (request.disallowed: not pass, not in --allow)."""
    if report.endpoint_failing:  # it answered /v1/models and failed every request: 6, not the model's 10
        return EndpointError(report.endpoint_failing)
    bad = [r for r in report.results if request.disallowed([r.verdict])]
    if report.server_busy and all(r.verdict == "not_tested" for r in bad):
        return EndpointError(report.server_busy)  # nothing failed, some could not be asked: 6, not 10
    if not bad:
        return None
    listed = ", ".join(f"{r.domain} {r.verdict}" for r in bad)
    verdicts = ",".join(dict.fromkeys(r.verdict for r in bad))
    return ChecksNotPassed(f"checks did not pass: {listed} (--allow {verdicts} accepts them)", report)
