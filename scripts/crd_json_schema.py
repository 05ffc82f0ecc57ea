"""Convert one version of a CustomResourceDefinition's openAPIV3Schema into a strict JSON schema (draft 2020-12),
in the layout of tests/fixtures/k8s-schemas/v1.33-strict (kubernetes-validate's strict schemas), for the tests that
validate `onechip deploy k8s` manifests without a cluster.

What changes from the CRD's schema, and why:
- every object with `properties` and no `additionalProperties` / `x-kubernetes-preserve-unknown-fields` gets
  `additionalProperties: false`: the API server rejects unknown fields under `kubectl apply --validate=strict`
  (kubernetes-validate's "strict" variant does the same for built-in kinds);
- `metadata` (the CRD says only `type: object`) refers to ObjectMeta in the k8s-schemas `_definitions.json`;
- `apiVersion` and `kind` are fixed to the CRD's group/version and kind (`const`);
- `x-kubernetes-*` keywords are kept (a JSON-schema validator ignores them); CEL rules
  (`x-kubernetes-validations`) are therefore not checked, nor `format` (not asserted by default in 2020-12).

Usage (CRD YAML from a pinned tag of its repository, e.g. `git show TAG:PATH > crd.yaml`):
    python scripts/crd_json_schema.py crd.yaml v1 > tests/fixtures/k8s-schemas/crds/KIND-GROUP-VERSION.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

OBJECT_META = "/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def strict(node: Any) -> Any:
    """`node` with additionalProperties: false on every closed object, recursively."""
    if isinstance(node, list):
        return [strict(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict(v) for k, v in node.items()}
    open_ = "additionalProperties" in node or node.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in node and not open_:
        out["additionalProperties"] = False
    return out


def convert(crd: dict[str, Any], version: str) -> dict[str, Any]:
    """The JSON schema of `version` of `crd`. Raises KeyError when the CRD has no such version."""
    spec = crd["spec"]
    found = {v["name"]: v for v in spec["versions"]}
    schema = strict(found[version]["schema"]["openAPIV3Schema"])
    group, kind = spec["group"], spec["names"]["kind"]
    props = schema["properties"]
    props["apiVersion"] = {**props["apiVersion"], "const": f"{group}/{version}"}
    props["kind"] = {**props["kind"], "const": kind}
    props["metadata"] = {"$ref": OBJECT_META, "description": props["metadata"].get("description", "")}
    schema["required"] = sorted({"apiVersion", "kind", "metadata", *schema.get("required", [])})
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://kubernetes.io/crds/{kind.lower()}-{group}-{version}",
    }
    return head | schema


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: crd_json_schema.py CRD.yaml VERSION", file=sys.stderr)
        return 2
    crd = yaml.safe_load(Path(argv[0]).read_text())
    json.dump(convert(crd, argv[1]), sys.stdout, indent=1, sort_keys=False)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
