"""catalog/vllm_flags.json: the first and last vLLM release whose serve parser accepts each flag onechip can write
(scripts/gen_vllm_flags.py, read in every release's sdist), and the serve command's one-line word on a flag the
plan's release refuses: a launch rule's or a family's optional flag is left out, a planned one is said.

The entries asserted here are read in the sources of the releases named; where the 0.32.0 and 0.34.0 trees are on this
machine (ONECHIP_VLLM_TREES, else /tmp/v32/vllm-0.32.0 and /tmp/v34/vllm-0.34.0) the whole table is checked against
the generator's reading of them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from onechip import catalog
from onechip.planner import plan_model
from onechip.schemas.serve import ServeTarget
from onechip.vllm import flag_table
from onechip.vllm.flags import serve_command

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_vllm_flags as gen  # noqa: E402

sys.path.pop(0)

# (flag, first_in, absent_in): the releases' serve parsers, read in their sdists
ENTRIES = [
    # vllm/engine/arg_utils.py of 0.34.0: '--enable-extensible-kv-cache', **cache_kwargs[...] of a bool CacheConfig
    # field, which get_kwargs gives argparse.BooleanOptionalAction; no such field in 0.33.0
    ("--no-enable-extensible-kv-cache", "0.34.0", "0.33.0"),
    # 0.6.5 declares --enable-prefix-caching with action=argparse.BooleanOptionalAction; 0.6.4.post1 'store_true'
    ("--no-enable-prefix-caching", "0.6.5", "0.6.4.post1"),
    ("--disable-chunked-mm-input", "0.8.4", "0.8.3"),  # arg_utils.py of 0.8.4: action=StoreBoolean, nargs="?"
    ("--kv-cache-dtype", "0.3.0", "0.2.7"),
    ("--enable-auto-tool-choice", "0.6.0", "0.5.5"),  # entrypoints/openai/cli_args.py of 0.6.0
    ("--language-model-only", "0.17.0", "0.16.0"),
]


@pytest.mark.parametrize(("flag", "first", "absent"), ENTRIES)
def test_the_first_release_of_a_flag(flag: str, first: str, absent: str) -> None:
    entry = catalog.vllm_flags().flags[flag]
    assert (entry.first_in, entry.absent_in) == (first, absent)


def test_an_abbreviation_is_read_as_the_flag_it_abbreviates() -> None:
    # vLLM's own hint writes '--kv-cache-memory=N' (gpu_worker.py, the boot logs under tests/fixtures/bootlogs);
    # argparse reads it as --kv-cache-memory-bytes, first in arg_utils.py of 0.10.2 (not in 0.10.1.1)
    entry = catalog.vllm_flags().flags["--kv-cache-memory"]
    assert (entry.first_in, entry.absent_in, entry.spelled) == ("0.10.2", "0.10.1.1", ["--kv-cache-memory-bytes"])
    assert gen.accepts({"--kv-cache-memory-bytes": ""}, "--kv-cache-memory") == "--kv-cache-memory-bytes"
    assert gen.accepts({"--kv-cache-memory-bytes": "", "--kv-cache-memory-fraction": ""}, "--kv-cache-memory") is None


def test_a_removed_flag_has_its_last_release() -> None:
    # arg_utils.py of 0.9.2 still declares --enable-reasoning (deprecated in 0.9.0); 0.10.0's does not
    entry = catalog.vllm_flags().flags["--enable-reasoning"]
    assert (entry.first_in, entry.last_in, entry.gone_in) == ("0.7.1", "0.9.2", "0.10.0")


def test_every_flag_onechip_writes_has_an_entry_and_a_table_row() -> None:
    table = catalog.vllm_flags()
    assert set(table.flags) == set(gen.emitted())
    assert all(flag_table.spec(flag) is not None for flag in table.flags)
    newest = table.releases_read[-1]
    for flag, entry in table.flags.items():  # accepted by the newest release read, unless gone before it
        assert entry.first_in is not None and (entry.gone_in is not None or entry.last_in == newest), flag


def _trees() -> dict[str, Path]:
    roots = os.environ.get("ONECHIP_VLLM_TREES", "/tmp/v32/vllm-0.32.0:/tmp/v34/vllm-0.34.0")
    # a whole tree: a folder of that name holding a few files another job extracted is not one
    trees = map(Path, roots.split(":"))
    return {path.name.removeprefix("vllm-"): path for path in trees if (path / "vllm/engine/arg_utils.py").is_file()}


@pytest.mark.parametrize("release", ["0.32.0", "0.34.0"])
def test_the_table_is_what_the_source_tree_says(release: str) -> None:
    tree = _trees().get(release)
    if tree is None:
        pytest.skip(f"the vLLM {release} source tree is not on this machine (ONECHIP_VLLM_TREES)")
    declared = gen.accepted(gen.read_source(tree)[1])
    assert ("--no-enable-extensible-kv-cache" in declared) == (release == "0.34.0")
    for flag in catalog.vllm_flags().flags:
        in_table = flag_table.refusal(flag, release) is None
        assert (gen.accepts(declared, flag) is not None) == in_table, flag


def test_a_flag_the_planned_release_refuses_is_left_out_or_said_in_one_line(tiny_llama: Path) -> None:
    # vLLM 0.2.7 has no --kv-cache-dtype (first in 0.3.0) and no --enable-prefix-caching (first read in 0.4.1); the
    # plan wrote both, and a pinned pool as --kv-cache-memory, which no release before 0.10.2 reads
    plan = plan_model(str(tiny_llama), "l4", engine_version="0.2.7", max_model_len=2048, kv_cache_memory_bytes=1 << 30)
    command = serve_command(plan, ServeTarget(kind="vllm"))
    assert "--enable-prefix-caching" not in command.argv  # the launch rule's optional feature
    assert "--enable-prefix-caching left out: first in vLLM 0.4.1, the plan is for 0.2.7" in command.warnings
    # --kv-cache-dtype auto is the plan's default (the model dtype), all 0.2.7 does: written, it only made vLLM
    # refuse the command as an unrecognized argument
    assert "--kv-cache-dtype" not in command.argv
    assert (
        "--kv-cache-dtype auto left out: needs vLLM 0.3.0 or later, the plan is for 0.2.7, which does what auto asks "
        "without it"
    ) in command.warnings
    assert "--kv-cache-memory needs vLLM 0.10.2 or later; the plan is for 0.2.7" in command.warnings
    fp8 = plan_model(str(tiny_llama), "l4", engine_version="0.2.7", max_model_len=2048, kv_cache_dtype="fp8")
    command = serve_command(fp8, ServeTarget(kind="vllm"))  # a value the plan sized memory with is kept, and said
    assert "--kv-cache-dtype" in command.argv
    assert "--kv-cache-dtype needs vLLM 0.3.0 or later; the plan is for 0.2.7" in command.warnings
    newest = plan_model(str(tiny_llama), "l4", engine_version="0.34.0", max_model_len=2048)
    said = serve_command(newest, ServeTarget(kind="vllm")).warnings
    assert not [w for w in said if w.startswith("--") and ("left out" in w or "needs vLLM" in w or "removed in" in w)]


@pytest.mark.parametrize(
    ("release", "off"),
    [
        ("0.6.4", "whose --enable-prefix-caching is a plain switch, off unless given"),  # store_true before 0.6.5
        ("0.3.3", "which has no --enable-prefix-caching"),  # first read in 0.4.1
    ],
)
def test_a_planned_negative_switch_the_release_lacks_is_left_out_where_off_is_its_default(
    tiny_llama: Path, release: str, off: str
) -> None:
    # --no-enable-prefix-caching is accepted from 0.6.5 (vllm_flags.json); the plan wrote it for 0.6.4, whose parser
    # refuses it as an unrecognized argument, though without it prefix caching is off there anyway
    plan = plan_model(str(tiny_llama), "l4", engine_version=release, max_model_len=2048, enable_prefix_caching=False)
    command = serve_command(plan, ServeTarget(kind="vllm"))
    assert "--no-enable-prefix-caching" not in command.argv and "--enable-prefix-caching" not in command.argv
    assert (
        f"--no-enable-prefix-caching left out: needs vLLM 0.6.5 or later, the plan is for {release}, {off}"
        in command.warnings
    )
    newer = plan_model(str(tiny_llama), "l4", engine_version="0.6.5", max_model_len=2048, enable_prefix_caching=False)
    assert "--no-enable-prefix-caching" in serve_command(newer, ServeTarget(kind="vllm")).argv


def test_a_release_between_the_last_without_and_the_first_read_with_is_not_told() -> None:
    # 0.4.0 and 0.4.0.post1 have no sdist on PyPI (not read): --enable-prefix-caching may be in them
    assert "0.4.0" in catalog.vllm_flags().releases_not_read
    assert flag_table.refusal("--enable-prefix-caching", "0.4.0") is None
    assert flag_table.refusal("--enable-prefix-caching", "0.3.3") == "needs vLLM 0.4.1 or later"
    assert flag_table.refusal("--enable-prefix-caching", "0.26.1rc1.dev3+g0123456") is None


def test_the_switches_are_what_the_newest_source_tree_says() -> None:
    # the flags a pasted command line's reader (onechip.vllm.bootlog._command_model) takes no value after
    table = catalog.vllm_flags()
    assert table.switches_release == table.releases_read[-1]
    # vllm/engine/arg_utils.py of the 0.34.0 sdist: EngineArgs fields annotated bool get argparse.BooleanOptionalAction
    # (enforce_eager, trust_remote_code: --X and --no-X); tokenizer, served_model_name take a value
    assert {"--enforce-eager", "--no-enforce-eager", "--trust-remote-code"} <= set(table.switches)
    assert not {"--tokenizer", "--served-model-name", "--max-model-len"} & set(table.switches)
    tree = _trees().get(table.switches_release or "")
    if tree is None:
        pytest.skip(f"the vLLM {table.switches_release} source tree is not on this machine (ONECHIP_VLLM_TREES)")
    assert table.switches == gen.switches(gen.read_source(tree)[1])
