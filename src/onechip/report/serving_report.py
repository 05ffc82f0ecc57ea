"""Export a run in the serving-report JSON layout (schema_version 1.1) named in issue 6: run, hardware
(host, pricing), model, software (serve_args), throughput (workload, sweep[]), capabilities[], memory,
startup, cost (per_m_output_tokens[]). `SCHEMA` is our own JSON Schema (draft 2020-12) for that layout;
every export is validated against it with jsonschema before it is returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onechip.errors import ConfigError, MissingDependencyError
from onechip.report.rundir import RunFiles
from onechip.report.tables import GIB, cells_of, get

SERVING_REPORT_VERSION = "1.1"

_NUM = {"type": ["number", "null"]}
_INT = {"type": ["integer", "null"]}
_STR = {"type": ["string", "null"]}
_DIST = {
    "type": "object",
    "properties": {"mean": _NUM, "median": _NUM, "p90": _NUM, "p99": _NUM},
    "required": ["mean", "median", "p90", "p99"],
    "additionalProperties": False,
}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://onechip.dev/schemas/serving-report-1.1.json",
    "title": "serving-report",
    "type": "object",
    "required": [
        "schema_version",
        "run",
        "hardware",
        "model",
        "software",
        "throughput",
        "capabilities",
        "memory",
        "startup",
        "cost",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": SERVING_REPORT_VERSION},
        "run": {
            "type": "object",
            "required": ["id", "tool", "tool_version"],
            "properties": {
                "id": {"type": "string"},
                "tool": {"const": "onechip"},
                "tool_version": _STR,
                "created_at": _STR,
                "command": _STR,
                "status": _STR,
            },
        },
        "hardware": {
            "type": "object",
            "required": ["accelerator", "accelerator_count", "host", "pricing"],
            "properties": {
                "accelerator": _STR,
                "accelerator_count": {"type": "integer", "minimum": 1},
                "host": {"type": "object", "properties": {"name": _STR, "python": _STR, "cpus": _INT}},
                "pricing": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["model", "usd_per_chip_hour"],
                        "properties": {
                            "model": {"type": "string"},
                            "region": _STR,
                            "usd_per_chip_hour": {"type": "number", "minimum": 0},
                            "price_date": _STR,
                            "stale": {"type": "boolean"},
                            "source": _STR,
                        },
                    },
                },
            },
        },
        "model": {
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": _STR,
                "architecture": _STR,
                "dtype": _STR,
                "kv_cache_dtype": _STR,
                "max_model_len": _INT,
            },
        },
        "software": {
            "type": "object",
            "required": ["engine", "serve_args"],
            "properties": {
                "engine": _STR,
                "engine_version": _STR,
                "serve_args": {"type": "array", "items": {"type": "string"}},
            },
        },
        "throughput": {
            "type": "object",
            "required": ["workload", "sweep"],
            "properties": {
                "workload": {
                    "type": "object",
                    "properties": {
                        "output_len": _INT,
                        "reps": _INT,
                        "prefix_reuse": {"type": ["boolean", "null"]},
                        "itl_convention": _STR,
                    },
                },
                "sweep": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": [
                            "concurrency",
                            "input_len",
                            "output_len",
                            "status",
                            "output_tok_per_s",
                            "per_stream_tok_per_s",
                            "ttft_ms",
                            "tpot_ms",
                            "itl_ms",
                        ],
                        "additionalProperties": False,
                        "properties": {
                            "concurrency": {"type": "integer", "minimum": 1},
                            "input_len": {"type": "integer", "minimum": 0},
                            "output_len": _INT,
                            "status": {"enum": ["ok", "infeasible", "failed"]},
                            "reason": _STR,
                            "output_tok_per_s": _NUM,
                            "cv_output_tok_per_s": _NUM,
                            "per_stream_tok_per_s": _NUM,
                            "ttft_ms": _DIST,
                            "tpot_ms": _DIST,
                            "itl_ms": _DIST,
                        },
                    },
                },
            },
        },
        "capabilities": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "verdict"],
                "properties": {
                    "name": {"type": "string"},
                    "verdict": {"enum": ["pass", "partial", "fail", "blocked", "not_tested"]},
                    "conditions": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        },
        "memory": {
            "type": "object",
            "properties": {
                "weights_gib_planned": _NUM,
                "weights_gib_reported": _NUM,
                "kv_bytes_per_token": _INT,
                "block_size": _INT,
                "gpu_memory_utilization": _NUM,
                "kv_pool_tokens_planned": _INT,
                "kv_pool_tokens_reported": _INT,
                "plan_agrees": {"type": ["boolean", "null"]},
            },
        },
        "startup": {
            "type": "object",
            "properties": {
                "ready_s": _NUM,
                "weight_load_s": _NUM,
                "events": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "t_s"],
                        "properties": {"name": {"type": "string"}, "t_s": _NUM},
                    },
                },
            },
        },
        "cost": {
            "type": "object",
            "required": ["per_m_output_tokens"],
            "properties": {
                "per_m_output_tokens": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": [
                            "pricing",
                            "usd_per_chip_hour",
                            "output_tok_per_s",
                            "usd_per_m_output_tokens",
                        ],
                        "properties": {
                            "pricing": {"type": "string"},
                            "region": _STR,
                            "usd_per_chip_hour": {"type": "number", "minimum": 0},
                            "output_tok_per_s": {"type": "number", "exclusiveMinimum": 0},
                            "usd_per_m_output_tokens": {"type": "number", "minimum": 0},
                            "monthly_usd": _NUM,
                        },
                    },
                }
            },
        },
    },
}


def _dist(value: Any) -> dict[str, float | None]:
    return {k: get(value, k) for k in ("mean", "median", "p90", "p99")}


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _cost_lines(cost: Any) -> list[Mapping[str, Any]]:
    lines = cost if isinstance(cost, list) else get(cost, "lines", default=[]) or []
    return [c for c in lines if isinstance(c, Mapping)]


def build(run: RunFiles) -> dict[str, Any]:
    """The serving-report document for already-read run files (not yet validated)."""
    m, plan, boot, bench, cross = (
        run.manifest or {},
        run.plan or {},
        run.boot or {},
        run.bench or {},
        run.crosscheck or {},
    )
    config = bench.get("config") or {}
    output_len = _int(config.get("output_tokens"))
    lines = _cost_lines(run.cost)
    weights_bytes = _num(plan.get("weights_bytes"))
    serve_args = [
        f"{a['flag']} {a['value']}" if a.get("value") is not None else str(a["flag"])
        for a in plan.get("serve_args") or []
        if isinstance(a, Mapping) and "flag" in a
    ]
    return {
        "schema_version": SERVING_REPORT_VERSION,
        "run": {
            "id": str(m.get("run_id") or run.path.name),
            "tool": "onechip",
            "tool_version": m.get("tool_version") or bench.get("tool_version"),
            "created_at": m.get("created_at") or bench.get("created_at"),
            "command": m.get("command"),
            "status": m.get("status"),
        },
        "hardware": {
            "accelerator": m.get("chip") or plan.get("chip"),
            "accelerator_count": 1,
            "host": {"name": m.get("host"), "python": m.get("python"), "cpus": _int(m.get("cpus"))},
            "pricing": [
                {
                    "model": str(c.get("pricing")),
                    "region": c.get("region"),
                    "usd_per_chip_hour": float(c.get("usd_per_chip_hour", 0)),
                    "price_date": c.get("price_date"),
                    "stale": bool(c.get("stale", False)),
                    "source": c.get("source"),
                }
                for c in lines
            ],
        },
        "model": {
            "id": boot.get("model") or plan.get("model") or get(bench, "server", "model"),
            "architecture": plan.get("architecture"),
            "dtype": plan.get("dtype"),
            "kv_cache_dtype": plan.get("kv_cache_dtype"),
            "max_model_len": _int(plan.get("max_model_len")),
        },
        "software": {
            "engine": boot.get("engine") or plan.get("engine"),
            "engine_version": boot.get("engine_version") or get(bench, "server", "engine_version"),
            "serve_args": serve_args,
        },
        "throughput": {
            "workload": {
                "output_len": output_len,
                "reps": _int(config.get("reps")),
                "prefix_reuse": config.get("prefix_reuse"),
                "itl_convention": bench.get("itl_convention"),
            },
            "sweep": [
                {
                    "concurrency": int(c.get("clients", 1)),
                    "input_len": int(c.get("context_tokens", 0)),
                    "output_len": output_len,
                    "status": c.get("status", "ok"),
                    "reason": c.get("reason"),
                    "output_tok_per_s": _num(c.get("output_tok_per_s")),
                    "cv_output_tok_per_s": _num(c.get("cv_output_tok_per_s")),
                    "per_stream_tok_per_s": _num(c.get("per_stream_tok_per_s")),
                    "ttft_ms": _dist(c.get("ttft_ms")),
                    "tpot_ms": _dist(c.get("tpot_ms")),
                    "itl_ms": _dist(c.get("itl_ms")),
                }
                for c in cells_of(bench)
            ],
        },
        "capabilities": [
            {
                "name": str(r.get("domain")),
                "verdict": r.get("verdict", "not_tested"),
                "conditions": {str(k): str(v) for k, v in (r.get("conditions") or {}).items()},
            }
            for r in get(run.checks, "results", default=[]) or []
            if isinstance(r, Mapping)
        ],
        "memory": {
            "weights_gib_planned": weights_bytes / GIB if weights_bytes is not None else None,
            "weights_gib_reported": _num(boot.get("weights_gib")),
            "kv_bytes_per_token": _int(plan.get("kv_bytes_per_token")),
            "block_size": _int(plan.get("block_size")),
            "gpu_memory_utilization": _num(plan.get("utilization")),
            "kv_pool_tokens_planned": _int(plan.get("kv_tokens", cross.get("planned_kv_tokens"))),
            "kv_pool_tokens_reported": _int(boot.get("kv_cache_tokens", cross.get("reported_kv_tokens"))),
            "plan_agrees": cross.get("agrees"),
        },
        "startup": {
            "ready_s": _num(boot.get("ready_s")),
            "weight_load_s": _num(boot.get("weight_load_s")),
            "events": [
                {"name": str(e.get("name")), "t_s": _num(e.get("t_s"))}
                for e in boot.get("events") or []
                if isinstance(e, Mapping)
            ],
        },
        "cost": {
            "per_m_output_tokens": [
                {
                    "pricing": str(c.get("pricing")),
                    "region": c.get("region"),
                    "usd_per_chip_hour": float(c.get("usd_per_chip_hour", 0)),
                    "output_tok_per_s": float(c.get("output_tok_per_s", 0)),
                    "usd_per_m_output_tokens": float(c.get("usd_per_mtok", 0)),
                    "monthly_usd": _num(c.get("monthly_usd")),
                }
                for c in lines
            ]
        },
    }


def validate(document: Mapping[str, Any]) -> None:
    """Validate against `SCHEMA`. Raises ConfigError naming the first violation's path and message."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema is a dependency of the report
        raise MissingDependencyError(
            "the serving-report export needs jsonschema: pip install jsonschema"
        ) from None
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        raise ConfigError(f"serving-report export does not match its schema at {where}: {first.message}")


def export(run: RunFiles) -> dict[str, Any]:
    """The validated serving-report document for `run`."""
    document = build(run)
    validate(document)
    return document
