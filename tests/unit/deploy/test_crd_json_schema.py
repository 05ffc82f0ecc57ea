"""scripts/crd_json_schema.py: a CRD's openAPIV3Schema as the strict JSON schema the deploy tests validate
against (tests/fixtures/k8s-schemas/crds, converted from the pinned releases named in SOURCE.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]
sys.path.insert(0, str(ROOT / "scripts"))

import crd_json_schema  # noqa: E402

CRD = {
    "spec": {
        "group": "example.k8s.io",
        "names": {"kind": "Widget"},
        "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "blob": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                             "properties": {"a": {"type": "string"}}},
                }},
            },
        }}}],
    }
}  # fmt: skip


def test_closed_objects_refuse_unknown_fields_and_open_ones_stay_open():
    schema = crd_json_schema.convert(CRD, "v1")
    spec = schema["properties"]["spec"]
    assert schema["additionalProperties"] is False and spec["additionalProperties"] is False
    assert spec["properties"]["labels"]["additionalProperties"] == {"type": "string"}  # a map stays a map
    assert "additionalProperties" not in spec["properties"]["blob"]  # preserve-unknown-fields: open
    assert schema["properties"]["apiVersion"]["const"] == "example.k8s.io/v1"
    assert schema["properties"]["kind"]["const"] == "Widget"
    assert schema["properties"]["metadata"]["$ref"].endswith("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    assert schema["required"] == ["apiVersion", "kind", "metadata"]


def test_the_vendored_crd_schemas_are_this_conversion():
    # the fixtures were written by the script: strict at every closed level, versions fixed
    for name, api in (("inferencepool-inference-v1.json", "inference.networking.k8s.io/v1"),
                      ("httproute-gateway-v1.json", "gateway.networking.k8s.io/v1")):  # fmt: skip
        schema = json.loads((ROOT / "tests" / "fixtures" / "k8s-schemas" / "crds" / name).read_text())
        assert schema["properties"]["apiVersion"]["const"] == api
        assert schema["properties"]["spec"]["additionalProperties"] is False
        assert crd_json_schema.strict(schema) == schema  # converting again changes nothing
