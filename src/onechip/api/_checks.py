"""`check`: capability probes against an endpoint."""

from __future__ import annotations

from onechip import checks
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
