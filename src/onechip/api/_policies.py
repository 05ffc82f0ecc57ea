"""`simulate --router-policies a,b`: the same agent sessions predicted under each routing policy, compared as
`bench --router-policies` compares measured ones."""

from __future__ import annotations

from onechip.api._bench import policy_cells
from onechip.api._predict import predicted_run, simulate_unserved
from onechip.errors import ConfigError
from onechip.paths import run_dir, write_text_atomic
from onechip.progress import ProgressFn, no_progress
from onechip.schemas.bench import PolicyComparison, PolicyRun
from onechip.schemas.requests import SimulateRequest
from onechip.schemas.run import POLICIES_FILE


def simulate_policies(request: SimulateRequest, on_progress: ProgressFn = no_progress) -> PolicyComparison:
    """`simulate --router-policies a,b`: one predicted run per policy into OUT/<policy>, and OUT/policies.json in
    bench's comparison shape (hit share, TTFT per turn, tok/s, requests per engine); OUT is `request.out_dir`, else
    a new runs/<run-id>/ (paths.run_dir). Raises what `simulate` raises, and ConfigError when no policy's grid has a
    feasible cell (simulate_unserved's line; the runs and policies.json are written all the same)."""
    result = PolicyComparison(base_url=f"predicted: {request.replicas} engine(s) of {request.plan}",
                              note="predicted (sim.routing): the same seeds route every policy's sessions")  # fmt: skip
    with run_dir(request.out_dir) as out_dir:
        runs = []
        for policy in request.router_policies:
            one = request.model_copy(update={"router_policies": [policy], "out_dir": out_dir / policy})
            runs.append(predicted_run(one, on_progress)[0])
            result.runs.append(PolicyRun(policy=policy, run_dir=str(out_dir / policy), cells=policy_cells(runs[-1])))
        write_text_atomic(out_dir / POLICIES_FILE, result.model_dump_json(indent=2))
    # a pipeline must not read an all-infeasible comparison as a result (feasibility does not depend on the policy)
    if all(simulate_unserved(run, out_dir) for run in runs):
        raise ConfigError(simulate_unserved(runs[0], out_dir, policies=request.router_policies))
    return result
