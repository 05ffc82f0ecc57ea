"""Learning from a real boot: the profiling overhead a vLLM GPU boot measured, reused by later plans.

A boot logs its KV token line; with the plan of that boot (the same layout and token-line rule) it fixes the
KV pool per GPU in whole blocks, and so the overhead the profiling took beside the weights:
    overhead = requested - weights - KV pool            (non-torch + activation peak + CUDA graphs)
A later plan of the same deployment (`deployment_key`: model, chip, engine, version, TP, dtypes, scheduler
limits, max_model_len) replaces the rule's three estimated terms by that one measured figure, so it gives
the logged pool again; only utilization may differ (the overhead does not depend on it).

    deployment_key(...) -> str
    measure(plan, kv_cache_tokens, date) -> MeasuredBoot | None   (pure; None: a pool no boot of it holds)
    load(directory, key) -> MeasuredBoot | None                    (reads the file it is given)
    newer_note(directory, key) -> str | None                       (the line saying a newer onechip's is not used)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import ValidationError

from onechip.errors import ConfigError
from onechip.paths import read_home_file
from onechip.schemas.common import newer_note as newer_line
from onechip.schemas.common import stored_by_newer
from onechip.schemas.plan import GpuMemoryBudget, MeasuredBoot, Plan
from onechip.schemas.requests import PlanRequest


def deployment_key(request: PlanRequest, engine: str, max_model_len: int) -> str:
    """The fields a measured overhead depends on, as one readable string."""
    parts = [
        request.model,
        request.chip,
        engine,
        request.engine_version or "newest",
        f"tp{request.tensor_parallel_size}"
        + (f"pp{request.pipeline_parallel_size}" if request.pipeline_parallel_size > 1 else ""),
        request.dtype or "auto",
        request.kv_cache_dtype,
        f"seqs{request.max_num_seqs or 'default'}",
        f"batch{request.max_num_batched_tokens or 'default'}",
        f"len{max_model_len}",
        "mm" if request.multimodal and not request.language_model_only else "text",
    ] + (["eager"] if request.enforce_eager else [])
    # inputs added later: named only when set, so the keys of boots stored before them stay the same
    parts += ["no-flashinfer"] if request.flashinfer is False else []
    parts += [f"nccl-{request.nccl_transport}"] if request.nccl_transport not in (None, "p2p") else []
    parts += [f"offload{request.cpu_offload_gb:g}"] if request.cpu_offload_gb else []
    limits = request.limit_mm_per_prompt
    parts += ["mm-" + ",".join(f"{k}={n}" for k, n in sorted(limits.items()))] if limits is not None else []
    return "|".join(str(p) for p in parts)


def file_name(key: str) -> str:
    """The calibration file of a deployment key (a hash: model names hold slashes)."""
    return hashlib.sha256(key.encode()).hexdigest()[:24] + ".json"


def printed_tokens(budget: GpuMemoryBudget, blocks: int, max_model_len: int) -> int:
    """The token line for `blocks` per GPU as the plan's version prints it (planner.kv_groups, step 5)."""
    if budget.token_line == "capacity":
        return int(blocks / budget.blocks_per_request * max_model_len)
    return blocks // budget.kv_groups * budget.min_block_size


def pool_blocks_for_tokens(budget: GpuMemoryBudget, kv_cache_tokens: int, max_model_len: int) -> int:
    """The smallest block count per GPU whose token line is `kv_cache_tokens` (the line grows with blocks)."""
    low, high = 0, max(1, kv_cache_tokens) * budget.kv_groups * budget.blocks_per_request + 1
    while low < high:
        mid = (low + high) // 2
        if printed_tokens(budget, mid, max_model_len) < kv_cache_tokens:
            low = mid + 1
        else:
            high = mid
    return low


def measure(plan: Plan, kv_cache_tokens: int, key: str, date: str, engine_version: str | None) -> MeasuredBoot | None:
    """The overhead a boot of `plan` measured, from its logged token line (see module docstring); None when the
    line's pool is more than the whole memory the plan requests per GPU (vLLM carves the KV cache out of it), which
    no boot of this deployment logs: a log of another card or a damaged line (10**26 tokens was stored, and every
    later plan of the deployment printed a 10**20 GiB KV cache 'calibrated from the boot').
    Raises ConfigError for a plan without a vLLM GPU budget."""
    budget = plan.memory_budget
    if budget is None or budget.block_bytes <= 0:
        raise ConfigError("only a vLLM GPU plan (engine vllm-gpu on a GPU) can learn from a boot")
    pool = pool_blocks_for_tokens(budget, kv_cache_tokens, plan.max_model_len) * budget.block_bytes
    if pool > budget.requested_bytes:
        return None
    return MeasuredBoot(
        key=key,
        date=date,
        engine_version=engine_version,
        utilization=plan.utilization or 0.0,
        requested_bytes=budget.requested_bytes,
        weights_bytes=budget.weights_bytes,
        kv_cache_bytes=pool,
        kv_cache_tokens=kv_cache_tokens,
        overhead_bytes=budget.requested_bytes - budget.weights_bytes - pool,
    )


def load(directory: Path, key: str) -> MeasuredBoot | None:
    """The stored measurement for `key` in `directory`, or None when there is none (or it is unreadable, or holds
    no KV token: no boot that started logs one, and an earlier onechip stored such a line). Raises ConfigError when
    it is not a regular file (paths.read_home_file: a FIFO there is never waited on)."""
    path = directory / file_name(key)
    try:
        stored = MeasuredBoot.model_validate(json.loads(read_home_file(path)))
    except (OSError, ValueError, ValidationError):
        return None
    return stored if stored.key == key and stored.kv_cache_tokens >= 1 else None


def newer_note(directory: Path, key: str) -> str | None:
    """The line saying the stored measurement for `key` in `directory` is not used, a newer onechip having written it
    (`load` skips it: its terms may mean what this onechip cannot tell), else None. Raises ConfigError as `load`."""
    path = directory / file_name(key)
    version = stored_by_newer(path)
    return None if version is None else newer_line("stored measured boot", [(path, version)])
