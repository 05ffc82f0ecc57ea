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
        ("0.8.0", None, "v0.8.5.dev169+gabc", True),  # 169 past v0.8.4: a 0.8.4 build
        ("0.8.0", None, "0.7", False),  # '0.7' is 0.7.0
        ("0.8.0", None, "9999999999.0", True),  # an open end holds every later release, however large
    ],
)
def test_covers_is_the_half_open_range(low, high, version, covered) -> None:
    assert VersionRange(min_version=low, max_version=high).covers(version) is covered


# A dev build is what setuptools_scm names a commit past vLLM's latest tag (vLLM's pyproject.toml [tool.setuptools_scm]
# sets no version_scheme, so guess-next-dev; setup.py get_vllm_version runs 'git describe --tags --long'):
# setuptools_scm 8.1 version.py guess_next_dev_version formats '{guessed}.dev{distance}' with guess_next_version, which
# bumps the tag's last number (_modify_version._bump_regex). A 'X.Y.Z.devN' is N commits past tag X.Y.(Z-1) and an
# 'X.Y.ZrcK.devN' N past X.Y.Zrc(K-1): after the release before X.Y.Z, before X.Y.Z itself (PEP 440 orders them so)
@pytest.mark.parametrize(
    ("low", "high", "version", "covered"),
    [
        ("0.20.1", None, "0.20.1rc1.dev16+g7a1eb8ac2", False),  # rtx4090x2-...-v0201rc1dev: 16 past v0.20.1rc0
        ("0.20.0", "0.20.1", "0.20.1rc1.dev16+g7a1eb8ac2", True),
        ("0.11.0", "0.11.1", "0.11.1.dev0+cu129", True),  # a dirty tree at tag v0.11.0
        ("0.12.0", "0.13.0", "0.13.0rc2.dev112+g763963aa7", True),  # past v0.13.0rc1, before 0.13.0
        ("0.13.0", None, "0.13.0rc2.dev112+g763963aa7", False),
        ("0.10.0", "0.10.1", "0.10.1.dev101+gbda9d0535", True),
        ("0.27.0", None, "0.27.0rc1", True),  # a tagged release candidate (no .devN) is that release's code
        (None, "0.4.1", "0.1.dev15312+g690e127b1", True),  # no tag at all: setuptools_scm's 0.0, bumped
    ],
)
def test_a_dev_build_is_after_the_release_before_its_number_and_before_it(low, high, version, covered) -> None:
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


def test_a_version_no_rule_covers_is_refused_in_the_catalog_s_words() -> None:
    # the rules that stop at a release (max_version set): a later one is covered by none, and the line says so with the
    # ranges the rules hold for, not the name of the planner's rule class
    rules = [r for r in catalog.engines().engines["vllm-gpu"].memory_rules if r.max_version]
    with pytest.raises(ConfigError) as caught:
        select_rule(rules, "9999999999.0")
    line = str(caught.value)
    assert "Rule" not in line and "\n" not in line
    assert line.startswith("engine_version '9999999999.0': ") and rules[0].versions in line


@pytest.mark.parametrize(
    ("version", "release"),
    [
        # guess-next-dev bumps a tag's last number (setuptools_scm 8.1 _modify_version._bump_regex): 'X.Y.Z.postK.devN'
        # is N commits past X.Y.Z.post(K-1), 'X.Y.Z.postK' being the first release it comes before; 0.8.5 and
        # 0.8.5.post1 are both vLLM releases (PyPI)
        ("0.8.5.post1.dev3+g1234567", "0.8.5"),
        ("0.8.5.post2.dev3", "0.8.5.post1"),
        ("0.10.1.2.dev4", "0.10.1.1"),  # past tag v0.10.1.1, a patch of a patch (PyPI's 0.10.1.1)
        ("0.8.5.post1", "0.8.5.post1"),
    ],
)
def test_a_dev_build_of_a_post_release_keys_as_the_release_before(version, release) -> None:
    assert catalog.files.release_key(version) == catalog.files.release_key(release)
