"""A synthetic run directory built from the seed article's v5e-1 / Gemma 4 E2B numbers
(article-en-single-tpu-agent-backend: grid, KV pool 321,344 tokens at block 64, 857 s cold boot)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from onechip.cost import estimate
from onechip.schemas import BenchRun
from onechip.schemas.common import GIB


def _cell(ctx: int, clients: int, tok_s: float, ttft_ms: float, per_stream: float, cv: float = 0.02) -> dict:
    return {
        "context_tokens": ctx,
        "clients": clients,
        "status": "ok",
        "output_tok_per_s": tok_s,
        "cv_output_tok_per_s": cv,
        "per_stream_tok_per_s": per_stream,
        "ttft_ms": {"n": 10, "mean": ttft_ms, "median": ttft_ms, "p90": ttft_ms * 1.2, "p99": ttft_ms * 1.4},
        "tpot_ms": {"n": 10, "mean": 1000 / per_stream, "median": 1000 / per_stream},
        "reps": [
            {
                "rep": 0,
                "window_s": 60.0,
                "output_tokens": int(tok_s * 60),
                "output_tok_per_s": tok_s,
                "requests_ok": clients * 2,
                "requests_failed": 0,
            }
        ],
    }


CELLS = [
    _cell(128, 1, 123.7, 25.0, 123.7),
    _cell(128, 64, 1496.5, 247.0, 23.4),
    _cell(1024, 1, 120.0, 40.0, 120.0),
    _cell(1024, 16, 991.0, 99.0, 70.0),
    _cell(1024, 64, 1258.7, 422.0, 19.7),
    _cell(8192, 16, 399.6, 594.0, 25.0),
    {
        "context_tokens": 8192,
        "clients": 64,
        "status": "infeasible",
        "reason": "64 x 8,192 tokens exceeds the 321,344-token KV pool",
    },
    {"context_tokens": 128, "clients": 16, "status": "failed", "reason": "connection reset"},
]


def write_run(path: Path, files: dict[str, Any]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (path / name).write_text(json.dumps(data), encoding="utf-8")
    return path


def seed_files() -> dict[str, Any]:
    bench = {
        "schema_version": "1",
        "tool_version": "0.1.0",
        "created_at": "2026-11-29T10:00:00Z",
        "server": {
            "base_url": "http://127.0.0.1:8000",
            "model": "google/gemma-4-E2B-it",
            "engine_version": "0.26.1rc1",
        },
        "config": {
            "base_url": "http://127.0.0.1:8000",
            "contexts": [128, 1024, 8192],
            "clients": [1, 16, 64],
            "reps": 3,
            "output_tokens": 128,
        },
        "cells": copy.deepcopy(CELLS),  # callers mutate their copy
    }
    return {
        "run.json": {
            "schema_version": "1",
            "run_id": "seed-v5e",
            "created_at": "2026-11-29T10:00:00Z",
            "tool_version": "0.1.0",
            "python": "3.12.3",
            "host": "tpu-vm",
            "command": "demo",
            "chip": "v5e-1",
            "status": "ok",
        },
        "plan.json": {
            "model": "google/gemma-4-E2B-it",
            "architecture": "gemma4",
            "chip": "v5e-1",
            "engine": "vllm-tpu",
            "dtype": "bfloat16",
            "kv_cache_dtype": "auto",
            "max_model_len": 32768,
            "block_size": 64,
            "memory_bytes": int(15.75 * GIB),
            "utilization": 0.92,
            "weights_bytes": int(8.97 * GIB),
            "kv_bytes_per_token": 18432,
            "kv_pool_bytes": 321344 * 18432,
            "num_blocks": 5021,
            "kv_tokens": 321344,
            "max_concurrency": 9.81,
            "serve": {
                "max_model_len": {"value": 32768, "reason": "agent context", "source": "request"},
                "kv_cache_dtype": {"value": "auto", "reason": "the model dtype", "source": "planner"},
            },
            "warnings": [
                {
                    "code": "util-above-program-headroom",
                    "message": "0.95 fails at load",
                    "source": "seed article",
                }
            ],
        },
        "crosscheck.json": {
            "planned_kv_tokens": 321344,
            "reported_kv_tokens": 321344,
            "planned_max_concurrency": 9.81,
            "reported_max_concurrency": 9.81,
            "agrees": True,
        },
        "boot.json": {
            "engine": "vllm-tpu",
            "engine_version": "0.26.1rc1",
            "model": "google/gemma-4-E2B-it",
            "ready_s": 857.0,
            "weights_gib": 8.97,
            "kv_cache_tokens": 321344,
            "events": [
                {"name": "process_start", "t_s": 0.0},
                {"name": "weights_loaded", "t_s": 120.0, "line": "Loading weights took 98 s"},
                {"name": "compiled", "t_s": 805.0},
                {"name": "ready", "t_s": 857.0},
            ],
            "warnings": ["WARNING something mild"],
        },
        "checks.json": {
            "base_url": "http://127.0.0.1:8000",
            "model": "google/gemma-4-E2B-it",
            "results": [
                {"domain": "chat", "verdict": "pass", "probes": [{"name": "smoke", "verdict": "pass"}]},
                {
                    "domain": "tool_calling",
                    "verdict": "partial",
                    "conditions": {"parser": "gemma4"},
                    "probes": [
                        {"name": "count_ids", "verdict": "pass"},
                        {"name": "parallel", "verdict": "fail", "note": "second call malformed"},
                    ],
                },
            ],
        },
        "summary.json": bench,
        "cost.json": json.loads(
            estimate(
                "v5e-1",
                bench=BenchRun.model_validate(bench),
                pricing="spot,flex-start,on-demand",
                cold_boot_s=857,
                warm_boot_s=497,
                today="2026-11-29",
                measured_on="v5e-1",
            ).model_dump_json()
        ),
    }
