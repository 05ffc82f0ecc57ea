"""Catalog access for the planner: accelerators and engine rules, validated into typed records.

The numbers live in catalog/accelerators.json and catalog/engines.json (each entry with source and
date); this module only reads them and applies the small amount of logic that turns a rule into a value
(block size from max model len, KV element bytes from the KV dtype).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner.weights import DTYPE_BYTES
from onechip.schemas.common import ResultModel

GiB = 1024**3


class Accelerator(ResultModel):
    name: str = Field(description="Catalog key, e.g. 'v5e-1'.")
    kind: str = Field(description="'cpu', 'tpu' or 'gpu'.")
    chips: int = Field(default=1, description="Chips in the slice.")
    memory_nominal_bytes: int | None = Field(default=None, description="Vendor HBM per chip, bytes.")
    memory_visible_bytes: int | None = Field(default=None, description="HBM the runtime reports, bytes.")
    bandwidth_bytes_per_s: float | None = Field(default=None, description="HBM bandwidth, bytes/s.")
    bandwidth_vendor: str | None = Field(default=None, description="The vendor's figure with its unit.")
    peak_bf16_tflops: float | None = Field(default=None, description="Dense bf16 peak per chip, TFLOPS.")
    peak_int8_tops: float | None = Field(default=None, description="Dense int8 peak per chip, TOPS.")
    peak_fp8_tflops: float | None = Field(default=None, description="Dense fp8 peak per chip, TFLOPS.")
    native_formats: list[str] = Field(default_factory=list, description="Formats with native compute.")
    memory_visible_source: str | None = Field(default=None, description="Source of the visible figure.")
    note: str | None = Field(default=None, description="Caveats about the figures.")
    source: str = Field(description="Where the figures come from.")
    date: str = Field(description="ISO date the source was read.")

    @property
    def memory_bytes(self) -> int | None:
        """Visible memory when measured, else nominal."""
        return self.memory_visible_bytes or self.memory_nominal_bytes


class EngineRules(ResultModel):
    name: str = Field(description="Engine key, e.g. 'vllm-tpu'.")
    version: str = Field(description="Engine version the rules were read from.")
    source: str = Field(description="Where the rules come from.")
    date: str = Field(description="ISO date.")
    kv_pool: str = Field(description="'explicit' (a byte count) or 'utilization' (memory x util - weights).")
    default_kv_cache_memory_bytes: int | None = Field(default=None, description="Pool when none is given.")
    default_kv_cache_memory_source: str | None = Field(default=None, description="Why that default.")
    default_utilization: float | None = Field(default=None, description="gpu_memory_utilization default.")
    default_block_size: int | None = Field(default=None, description="Block size when none is given.")
    per_request_blocks: int | None = Field(default=None, description="Blocks per max-len request to keep.")
    min_block_size: int | None = Field(default=None, description="Smallest block size the rule gives.")
    block_size_source: str = Field(default="", description="Where the block-size rule comes from.")
    auto_dtype_float32_stays: bool = Field(default=True, description="'auto' keeps float32 checkpoints.")
    fp8_kv_bytes_per_element: float = Field(default=1, description="Bytes an fp8 KV element occupies.")
    fp8_kv_source: str = Field(default="", description="Where the fp8 rule comes from.")
    windows_sliding_layers: bool = Field(default=False, description="Pool holds sliding layers windowed.")
    windows_sliding_source: str = Field(default="", description="Where that comes from.")
    kv_heads_pad_to_tp: bool = Field(default=True, description="KV heads pad up to a multiple of TP.")
    outside_cap_needed_bytes: int | None = Field(default=None, description="Memory to leave outside cap.")
    outside_cap_source: str = Field(default="", description="Where that comes from.")
    default_max_num_batched_tokens: int | None = Field(default=None, description="Scheduler default.")
    default_max_num_batched_tokens_source: str = Field(default="", description="Where that comes from.")
    kv_token_line: Literal["pool", "capacity"] = Field(
        default="pool",
        description="What the engine's 'KV cache size: N tokens' line states: 'pool' = blocks x block size; "
        "'capacity' = int(max concurrency at max_model_len x max_model_len).",
    )
    kv_token_line_source: str = Field(default="", description="Where that comes from.")
    max_num_batched_tokens_pow2: bool = Field(default=False, description="Rounded up to a power of two.")
    loads_towers: list[str] = Field(default_factory=lambda: ["vision_tower", "audio_tower"],
                                    description="Multimodal towers the engine loads when multimodal is on.")
    loads_towers_source: str = Field(default="", description="Where that comes from.")

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
