"""Regenerate a bundled tensor inventory for a catalog model, offline.

How it is derived: the model's published config.json fields bundled in catalog/models.json are turned
into the transformers config class (AutoConfig.for_model), the class named in `architectures[0]` is
instantiated on the meta device (no memory, no download), and every parameter plus every persistent
buffer (what state_dict would save) is listed with its shape. Tied parameters appear once (the LM head
of a tied-embedding model is not listed; named_parameters drops duplicates). Floating parameters are
recorded at the checkpoint dtype given by --dtype (the published checkpoints are bfloat16); buffers keep
their own dtype. Names are the checkpoint's (e.g. model.language_model.layers.0...).

--fp8-linear writes the layout of a compressed-tensors FP8 export ('float-quantized', channel strategy, dynamic
per-token activations, as the model card of xbill9/gemma-4-12B-it-qat-q4_0-fp8-text describes it): every nn.Linear
weight of the decoder (not the LM head) as F8_E4M3 with an F32 `weight_scale` of [out_features, 1], everything else
at --dtype; no input_scale (activations are scaled at run time).

Usage:
    python scripts/gen_inventory.py gemma-4-E2B-it [--dtype BF16] [--fp8-linear]
writes src/onechip/catalog/inventory-<key>.json. Takes ~10 s on a laptop CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

import torch
import transformers

CATALOG = Path(__file__).resolve().parents[1] / "src" / "onechip" / "catalog"
_TORCH_CODES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.bool: "BOOL",
    torch.uint8: "U8",
    torch.int8: "I8",
}


def inventory(config_fields: dict, param_dtype: str, fp8_linear: bool = False) -> tuple[str, list[list]]:
    fields = dict(config_fields)
    config = transformers.AutoConfig.for_model(fields.pop("model_type"), **fields)
    arch = (config.architectures or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    if cls is None:
        raise SystemExit(f"transformers {transformers.__version__} has no class {arch!r}")
    with torch.device("meta"):
        model = cls(config)
    persistent = set(model.state_dict().keys())
    linear = {
        f"{name}.weight"
        for name, module in model.named_modules()
        if fp8_linear and isinstance(module, torch.nn.Linear) and not name.endswith("lm_head")
    }
    rows: list[list] = []
    for name, param in model.named_parameters():
        code = param_dtype if param.is_floating_point() else _TORCH_CODES[param.dtype]
        if name in linear:
            rows.append([name, list(param.shape), "F8_E4M3"])
            rows.append([f"{name}_scale", [param.shape[0], 1], "F32"])
            continue
        rows.append([name, list(param.shape), code])
    for name, buf in model.named_buffers():
        if name in persistent:
            rows.append([name, list(buf.shape), _TORCH_CODES[buf.dtype]])
    return arch, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("key", help="catalog/models.json key, e.g. gemma-4-E2B-it")
    parser.add_argument("--dtype", default="BF16", help="safetensors dtype code of floating parameters")
    parser.add_argument(
        "--fp8-linear", action="store_true", help="decoder Linear weights as compressed-tensors FP8 (channel scales)"
    )
    args = parser.parse_args(argv)
    models = json.loads((CATALOG / "models.json").read_text(encoding="utf-8"))["models"]
    entry = models[args.key]
    arch, rows = inventory(entry["config"], args.dtype, args.fp8_linear)
    fp8 = " except decoder Linear weights: F8_E4M3 + F32 weight_scale [out, 1] (--fp8-linear)" * args.fp8_linear
    out = {
        "model": args.key,
        "hub_id": entry.get("hub_id"),
        "architecture": arch,
        "derived": (
            "transformers.AutoConfig.for_model(**models.json config) -> "
            f"transformers.{arch}(config) on the meta device; named_parameters() (tied once) + "
            f"persistent buffers; floating parameters at {args.dtype}{fp8}"
        ),
        "transformers_version": transformers.__version__,
        "source": entry.get("source"),
        "date": date.today().isoformat(),
        "tensors": rows,
    }
    path = CATALOG / f"inventory-{args.key}.json"
    text = json.dumps(out, separators=(",", ":"))
    # One tensor per line keeps diffs readable.
    text = text.replace('"tensors":[[', '"tensors":[\n[').replace("],[", "],\n[")
    path.write_text(text + "\n", encoding="utf-8")
    print(f"{path}: {len(rows)} tensors", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
