"""`simulate --router-policies a,b`: the same agent sessions predicted under each routing policy, compared as
`bench --router-policies` compares measured ones."""

from __future__ import annotations

from onechip.api._bench import policy_cells
from onechip.api._predict import simulate
from onechip.paths import run_dir, write_text_atomic
from onechip.progress import ProgressFn, no_progress
from onechip.schemas.bench import PolicyComparison, PolicyRun
from onechip.schemas.requests import SimulateRequest


def simulate_policies(request: SimulateRequest, on_progress: ProgressFn = no_progress) -> PolicyComparison:
    """`simulate --router-policies a,b`: one predicted run per policy into OUT/<policy>, and OUT/policies.json in
    bench's comparison shape (hit share, TTFT per turn, tok/s, requests per engine); OUT is `request.out_dir`, else
    a new runs/<run-id>/ (paths.run_dir). Raises what `simulate` raises."""
    result = PolicyComparison(base_url=f"predicted: {request.replicas} engine(s) of {request.plan}",
                              note="predicted (sim.routing): the same seeds route every policy's sessions")  # fmt: skip
    with run_dir(request.out_dir) as out_dir:
        for policy in request.router_policies:
            one = request.model_copy(update={"router_policies": [policy], "out_dir": out_dir / policy})
            run = simulate(one, on_progress)
            cells = policy_cells(run)
            result.runs.append(PolicyRun(policy=policy, run_dir=str(out_dir / policy), cells=cells))
        write_text_atomic(out_dir / "policies.json", result.model_dump_json(indent=2))
    return result
