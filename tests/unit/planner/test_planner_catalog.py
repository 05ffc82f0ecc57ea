"""Catalog data the planner reads: every entry carries a source and a date (STYLE.md "Data");
the chip figures the seed article measured are the ones stored."""

from __future__ import annotations

import ast
import json
import re
from datetime import date
from importlib import resources
from pathlib import Path

import pytest

import onechip.planner
from onechip import catalog
from onechip.catalog.files import file_model
from onechip.errors import ConfigError
from onechip.planner.rules import accelerator, engine_rules
from onechip.schemas.common import GIB


@pytest.mark.parametrize(
    ("name", "table"), [("accelerators", "accelerators"), ("engines", "engines"), ("models", "models")]
)
def test_every_entry_has_a_source_and_an_iso_date(name: str, table: str) -> None:
    entries = getattr(catalog.load(name), table)
    assert entries
    for key, entry in entries.items():
        assert entry.source, f"{name}.json[{key}] has no source"
        date.fromisoformat(entry.date)


def test_visible_hbm_is_the_measured_figure() -> None:
    # seed article: v5e 15.75 GiB visible (boot log); issue 3: v6e 31.24 GiB
    assert accelerator("v5e-1").memory_bytes == int(15.75 * GIB)
    assert accelerator("v6e-1").memory_bytes == int(31.24 * GIB)


def test_bandwidth_units_are_normalised() -> None:
    # seed article 'unit traps': v5e is quoted in GiB/s (800 GiBps), v6e in GB/s (1640 GBps): ~1.9x
    ratio = accelerator("v6e-1").bandwidth_bytes_per_s / accelerator("v5e-1").bandwidth_bytes_per_s
    assert ratio == pytest.approx(1.91, abs=0.01)


# The vendor's bandwidth unit in bytes/s: GiBps is binary, GB/s and TB/s decimal (seed article 'unit traps').
_BANDWIDTH_UNITS = {"GiBps": 2**30, "GBps": 10**9, "GB/s": 10**9, "TB/s": 10**12}


def test_every_accelerator_validates_and_stores_the_vendors_bandwidth() -> None:
    # each entry keeps the vendor's figure with its unit (bandwidth_vendor); the normalised bytes/s must be it
    for key in catalog.accelerators().accelerators:
        acc = accelerator(key)
        if acc.bandwidth_vendor is None:
            # the host CPU, or an Ascend NPU whose vendor bandwidth was not read: its note says so
            assert acc.kind == "cpu" or "no bandwidth" in (acc.note or "").lower(), key
            assert acc.bandwidth_bytes_per_s is None, key
            continue
        match = re.match(r"([\d.,]+) (\S+)", acc.bandwidth_vendor)
        assert match, f"{key}: bandwidth_vendor {acc.bandwidth_vendor!r} has no '<number> <unit>'"
        quoted = float(match.group(1).replace(",", "")) * _BANDWIDTH_UNITS[match.group(2)]
        assert acc.bandwidth_bytes_per_s == pytest.approx(quoted, rel=1e-9), key


# One rule per engine, each against the source its entry names (engines.json `*_source` fields).
_ENGINE_FACTS = [
    ("vllm-cpu", "default_block_size", 128),  # vllm/platforms/cpu.py: block_size = 128 when not given
    ("vllm-cpu", "default_kv_cache_memory_bytes", 2 * GIB),  # VLLM_CPU_KVCACHE_SPACE=2 (DESIGN.md)
    ("vllm-cpu", "default_max_num_batched_tokens", 2048),  # arg_utils.py get_batch_defaults: CPU 2048
    ("vllm-tpu", "default_utilization", 0.92),  # seed article: the measured-good utilization on v5e-1
    ("vllm-tpu", "fp8_kv_bytes_per_element", 2),  # seed article: fp8_e4m3 gives 1.000x capacity
    ("vllm-tpu", "per_request_blocks", 512),  # seed article: Pallas keeps 512 blocks per request
    ("vllm-gpu", "default_block_size", 16),  # vllm/config/cache.py: CacheConfig.block_size 16 on CUDA
    ("vllm-gpu", "default_utilization", 0.9),  # vLLM's gpu_memory_utilization default before 0.20.0 (memory_rules)
    ("vllm-ascend", "default_block_size", 128),  # vllm-ascend@v0.18.0 vllm_ascend/utils.py refresh_block_size
    ("vllm-ascend", "default_utilization", 0.9),  # vLLM's default; vllm-ascend@v0.18.0 NPUWorker reads it
]


@pytest.mark.parametrize(("engine", "field", "value"), _ENGINE_FACTS)
def test_engine_rules_hold_their_sources_values(engine: str, field: str, value: float) -> None:
    assert getattr(engine_rules(engine), field) == value


# vllm/config/cache.py CacheConfig.gpu_memory_utilization: 'Field(default=0.9, gt=0, le=1)' in the 0.10.1 - 0.19.1
# sdists (vllm/config.py in 0.10.0), 'Field(default=0.92, gt=0, le=1)' from the 0.20.0 sdist (also the LLM class's
# default there); 0.34.0 leaves it None and resolves it to DEFAULT_GPU_MEMORY_UTILIZATION 0.92 with the extensible KV
# cache off, as a plan serves it (resolved_gpu_memory_utilization). Sizes per GPU on an H100 (memory_bytes).
@pytest.mark.usefixtures("offline_home")
@pytest.mark.parametrize(
    ("version", "utilization"),
    [("0.10.0", 0.9), ("0.19.1", 0.9), ("0.20.0", 0.92), ("0.20.2", 0.92), ("0.28.0", 0.92), ("0.34.0", 0.92)],
)
def test_the_gpu_default_utilization_is_the_releases(version: str, utilization: float) -> None:
    plan = onechip.planner.plan_model("SmolLM2-135M-Instruct", "h100", engine_version=version, max_model_len=4096)
    assert plan.utilization == utilization
    assert plan.memory_budget is not None
    assert plan.memory_budget.requested_bytes == int(accelerator("h100").memory_bytes * utilization)


def test_every_engine_validates_and_has_a_sourced_fact() -> None:
    engines = set(catalog.engines().engines)
    assert engines == {engine for engine, _, _ in _ENGINE_FACTS}
    for key in engines:
        assert engine_rules(key).name == key


CATALOG_FILES = sorted(p.stem for p in resources.files("onechip.catalog").iterdir() if p.name.endswith(".json"))


@pytest.mark.parametrize("name", CATALOG_FILES)
def test_every_catalog_file_has_a_strict_model(name: str) -> None:
    assert file_model(name) is not None, f"{name}.json has no model in catalog/files.py"
    catalog.load(name)


def _first_entry(doc: dict) -> tuple[dict, str]:
    """The first entry of the file's table (or the document itself) and its dotted location."""
    for key, table in doc.items():
        if isinstance(table, dict) and table and all(isinstance(v, dict) for v in table.values()):
            first = next(iter(table))
            return table[first], f"{key}.{first}"
        if isinstance(table, list) and table and isinstance(table[0], dict):
            return table[0], f"{key}.0"
    return doc, ""


@pytest.mark.parametrize("name", CATALOG_FILES)
def test_a_misspelt_key_is_one_line_naming_the_file_and_the_key(name: str) -> None:
    doc = json.loads(resources.files("onechip.catalog").joinpath(f"{name}.json").read_text(encoding="utf-8"))
    entry, where = _first_entry(doc)
    entry["sourse"] = entry.pop("source")  # the typo this test exists for
    with pytest.raises(ConfigError) as info:
        catalog.parse(name, json.dumps(doc))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"catalog file {name}.json: {where + '.' if where else ''}sourse: unknown key")
    assert "source: missing key" not in message  # one problem named, the rest counted
    assert message.endswith("(and 1 more)")


def test_unknown_chip_and_engine_name_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"unknown chip 'v9x' \(--chip\)"):
        accelerator("v9x")
    with pytest.raises(ConfigError, match=r"unknown engine 'tgi' \(--engine\)"):
        engine_rules("tgi")


def test_planner_never_imports_the_cli_stack() -> None:
    # STYLE.md: the core never imports typer/rich/mcp.
    root = Path(onechip.planner.__file__).parent
    banned = re.compile(r"^(typer|rich|mcp|click)(\.|$)")
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(banned.match(n) for n in names), f"{path.name} imports {names}"
