"""Every hybrid config in the fixtures, planned with no --engine-version, is the plan of the release `up` runs
(engines.json vllm-gpu `release`, 0.32.0 today): the hybrid rule included (1957363b: it took the newest, 0.33.0's).
The two plans are the same plan field by field, but for the request echoed (engine_version None, and the deployment
key made of it) and the engine-version warning, which says why 0.32.0 was planned: with none asked it is the release
`up` runs, not 'the newest release the catalog's rules were read from' (the hybrid rules were read up to 0.34.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.config import read_config
from onechip.planner.recurrent import HYBRID_FAMILIES
from onechip.planner.rules import engine_rules


def _hybrids() -> list[str]:
    names = []
    for path in sorted((BOOTLOGS / "configs").glob("*.json")):
        try:
            family = read_config(json.loads(path.read_text(encoding="utf-8")), path.name).family
        except Exception:  # noqa: BLE001 - a partial copy the planner refuses alone is no hybrid to compare
            continue
        if family in HYBRID_FAMILIES:
            names.append(path.name)
    return names


HYBRIDS = _hybrids()


def test_the_fixtures_hold_the_hybrids_read_so_far() -> None:
    # a guard on the selection: a change to read_config that loses these would leave the test below empty
    assert {"Qwen--Qwen3.5-9B.json", "moonshotai--Kimi-Linear-48B-A3B-Instruct.json",
            "ai21labs--AI21-Jamba-1.5-Mini.json", "ibm-granite--granite-4.0-h-1b.json"} <= set(HYBRIDS)  # fmt: skip


@pytest.mark.parametrize("name", HYBRIDS)
def test_a_hybrid_with_no_version_is_planned_as_the_pinned_release(tmp_path: Path, name: str) -> None:
    release = engine_rules("vllm-gpu").release
    assert release == "0.32.0"  # what `up` runs (engines.json); this test names it so a bump is read here too
    config = json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "m", config, 8_000_000_000)  # fits 2 x H200 for every one: a plan, no refusal
    kwargs = {"tensor_parallel_size": 2, "max_model_len": 32768}
    try:
        pinned = plan_model(str(path), "h200", "vllm-gpu", engine_version=release, **kwargs).model_dump()
    except Exception as exc:  # noqa: BLE001 - refused at the pinned release: refused the same with no version
        with pytest.raises(type(exc)) as info:
            plan_model(str(path), "h200", "vllm-gpu", **kwargs)
        assert str(info.value) == str(exc)
        return
    default = plan_model(str(path), "h200", "vllm-gpu", **kwargs).model_dump()
    assert default["request"]["engine_version"] is None and pinned["request"]["engine_version"] == release
    assert default["deployment_key"] == pinned["deployment_key"].replace(f"|{release}|", "|newest|")
    said = [w["message"] for w in default["warnings"] if w["code"] == "engine-version"]
    assert len(said) == 1 and said[0].startswith(f"planned for vLLM {release} (no --engine-version: the release `up` "
                                                 "runs, engines.json vllm-gpu release), under "), said  # fmt: skip
    for plan in (default, pinned):
        del plan["request"]["engine_version"], plan["deployment_key"]
        plan["warnings"] = [w for w in plan["warnings"] if w["code"] != "engine-version"]
    assert default == pinned
