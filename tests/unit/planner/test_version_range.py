"""VersionRange.covers, the one test of a release against a [min_version, max_version) range: every versioned
catalog row (memory, pool, launch, V0-fallback, MXFP4-layout, sampler rules) answers it the same way."""

from __future__ import annotations

import pytest

from onechip import catalog
from onechip.catalog.files import LaunchRule, Mxfp4Layout, SamplerBackendRule, V0Fallback, VersionedRule, VersionRange
from onechip.errors import ConfigError
from onechip.planner.gpu_memory import select_rule


@pytest.mark.parametrize(
    ("low", "high", "version", "covered"),
    [
        (None, None, "0.1.0", True),
        ("0.10.0", None, "0.10.0", True),  # inclusive below
        ("0.10.0", "0.11.0", "0.11.0", False),  # exclusive above
        ("0.10.0", "0.11.0", "0.10.2rc1", True),
        (None, "0.7.0", "0.6.6.post1", True),
        ("0.8.0", None, "v0.8.5.dev169+gabc", True),
        ("0.8.0", None, "0.7", False),  # '0.7' is 0.7.0
    ],
)
def test_covers_is_the_half_open_range(low, high, version, covered) -> None:
    assert VersionRange(min_version=low, max_version=high).covers(version) is covered


def test_every_versioned_row_type_has_it() -> None:
    for row in (VersionedRule, LaunchRule, Mxfp4Layout, SamplerBackendRule, V0Fallback):
        assert issubclass(row, VersionRange)


def test_a_version_that_is_no_release_is_one_line() -> None:
    with pytest.raises(ConfigError, match="not a vLLM release number"):
        VersionRange(min_version="0.8.0").covers("nightly")


def test_select_rule_picks_the_rule_that_covers_the_version() -> None:
    rules = catalog.engines().engines["vllm-gpu"].memory_rules
    for version in ("0.6.4", "0.6.5", "0.7.3", "0.10.2", "0.19.0", "0.32.0"):
        assert [r for r in rules if r.covers(version)] == [select_rule(rules, version)]
