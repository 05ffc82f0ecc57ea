"""How probe verdicts combine into a domain verdict, and timing helpers shared by the probes."""

from __future__ import annotations

import time
from collections.abc import Iterable

from onechip.errors import EndpointBusyError, EndpointError
from onechip.schemas.checks import Probe, Verdict


def failed(exc: EndpointError) -> Verdict:
    """The verdict of a probe whose request failed: not_tested when the server stayed busy (429/503 after its
    retries: nothing is known of the answer it would have given, `CheckReport.server_busy` says so), else fail: a
    timeout or a 5xx is the engine's failure to answer, unless the server answered none of the run's requests, when
    run_checks makes it not_tested at the end (`CheckReport.endpoint_failing` says so)."""
    return "not_tested" if isinstance(exc, EndpointBusyError) else "fail"


def combine(probes: Iterable[Probe]) -> Verdict:
    """Domain verdict from its counted (non-informational) probes.

    Any probe blocked → blocked. No counted probe, or all not_tested → not_tested. All pass → pass.
    All fail → fail. Anything else (some pass, some fail or partial) → partial.
    """
    counted = [p.verdict for p in probes if not p.informational and p.verdict != "not_tested"]
    if not counted:
        return "not_tested"
    if "blocked" in counted:
        return "blocked"
    if all(v == "pass" for v in counted):
        return "pass"
    if all(v == "fail" for v in counted):
        return "fail"
    return "partial"


class Stopwatch:
    """`with Stopwatch() as sw: ...; sw.ms` — wall time in milliseconds."""

    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter()
        self.ms = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.ms = (time.perf_counter() - self._t0) * 1000
