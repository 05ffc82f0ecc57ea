"""Catalog access for the planner: accelerators and engine rules, validated into typed records.

The numbers live in catalog/accelerators.json and catalog/engines.json (each entry with source and
date; their strict shapes in catalog/files.py); this module only reads them and applies the small amount of
logic that turns a rule into a value (block size from max model len, KV element bytes from the KV dtype).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from onechip import catalog
from onechip.catalog.files import AcceleratorEntry, EngineEntry
from onechip.errors import ConfigError
from onechip.planner.weights import DTYPE_BYTES

GiB = 1024**3


class Accelerator(AcceleratorEntry):
    """A chip from accelerators.json, with its catalog key."""

    name: str = Field(description="Catalog key, e.g. 'v5e-1'.")

    @property
    def memory_bytes(self) -> int | None:
        """Visible memory when measured, else nominal."""
        return self.memory_visible_bytes or self.memory_nominal_bytes


class EngineRules(EngineEntry):
    """A rule set from engines.json, with its engine key and the logic that turns a rule into a value."""

    name: str = Field(description="Engine key, e.g. 'vllm-tpu'.")

    def block_size_for(self, max_model_len: int, requested: int | None) -> int:
        """Block size in tokens: the requested one, else the engine's rule.

        vllm-tpu keeps `per_request_blocks` per max-len request: block = next power of two of
        ceil(max_model_len / per_request_blocks), at least `min_block_size` (seed article: 16,384 -> 32,
        32,768 -> 64). Others use `default_block_size`.
        """
        if requested is not None:
            if requested <= 0:
                raise ConfigError(f"block_size must be a positive integer, got {requested}")
            return requested
        if self.per_request_blocks:
            need = -(-max_model_len // self.per_request_blocks)
            pow2 = 1 << max(0, (need - 1).bit_length())
            return max(self.min_block_size or 1, pow2)
        if self.default_block_size:
            return self.default_block_size
        raise ConfigError(f"engine {self.name}: no block-size rule in engines.json")


_KV_DTYPES = {"auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2"}


def kv_element_bytes(kv_cache_dtype: str, served_dtype: str, rules: EngineRules) -> float:
    """Bytes one KV element occupies. 'auto' = the served dtype (not the checkpoint's torch_dtype).

    fp8 variants take `rules.fp8_kv_bytes_per_element` (2 on vllm-tpu: 1.000x capacity, seed article).
    Raises ConfigError for a KV dtype the planner does not model.
    """
    if kv_cache_dtype not in _KV_DTYPES:
        raise ConfigError(f"kv_cache_dtype {kv_cache_dtype!r} is not one of {sorted(_KV_DTYPES)}")
    if kv_cache_dtype == "auto":
        return DTYPE_BYTES[served_dtype]
    if kv_cache_dtype.startswith("fp8"):
        return rules.fp8_kv_bytes_per_element
    return DTYPE_BYTES[kv_cache_dtype]


def _entries(doc: Any, key: str, what: str) -> dict[str, Any]:
    entries = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(entries, dict):
        raise ConfigError(f"catalog {what}: missing '{key}' table")
    return entries


def accelerator(name: str) -> Accelerator:
    """The catalog entry for chip `name`. Raises ConfigError naming the known chips when unknown."""
    entries = _entries(catalog.load("accelerators"), "accelerators", "accelerators.json")
    if name not in entries:
        raise ConfigError(f"unknown chip {name!r} (--chip); known: {', '.join(sorted(entries))}")
    return Accelerator.model_validate({"name": name, **entries[name]})


def engine_rules(name: str) -> EngineRules:
    """The rule set for engine `name`. Raises ConfigError naming the known engines when unknown."""
    entries = _entries(catalog.load("engines"), "engines", "engines.json")
    if name not in entries:
        raise ConfigError(f"unknown engine {name!r} (--engine); known: {', '.join(sorted(entries))}")
    return EngineRules.model_validate({"name": name, **entries[name]})
