"""The one table of serve flags (onechip.vllm.flag_table): every flag in it that sizes memory, given with
`up --plan P.json --set FLAG=V --dry-run`, re-plans from the plan's recorded request (and then prints the
command `plan --set FLAG=V` prints), or, for a plan file that records no request, says in one warning that
the plan is stale; every other flag passes through. Before (issue 21): enforce-eager, max-num-seqs,
pipeline-parallel-size, block-size and max-num-batched-tokens changed memory the plan sized and nothing
was said."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from onechip import api, catalog
from onechip.catalog.files import ServeFamiliesFile
from onechip.errors import ConfigError
from onechip.schemas import ServeCommand, ServeSettings, ServeTarget
from onechip.schemas.common import GIB
from onechip.schemas.requests import PlanRequest, UpRequest
from onechip.vllm import flag_table, flags

# A value for each memory-sizing row, and the planner input it means. SmolLM2-135M (9 query heads, 3 KV
# heads, no KV sharing, no towers) takes every one of them on an H100: TP 3 divides both head counts.
SIZED = {
    "--dtype": ("float16", "float16"),
    "--kv-cache-dtype": ("fp8", "fp8"),
    "--max-model-len": ("4096", 4096),
    "--max-num-batched-tokens": ("4096", 4096),
    "--tensor-parallel-size": ("3", 3),
    "--gpu-memory-utilization": ("0.8", 0.8),
    "--kv-cache-memory": (str(4 * GIB), 4 * GIB),
    "--block-size": ("32", 32),
    "--limit-mm-per-prompt": ('{"image":0,"audio":0}', {"image": 0, "audio": 0}),
    "--language-model-only": (None, True),
    "--pipeline-parallel-size": ("2", 2),
    "--enforce-eager": (None, True),
    "--enable-prompt-embeds": (None, True),
    "--no-enable-prefix-caching": (None, False),
    "--max-num-seqs": ("64", 64),
    "--mamba-ssm-cache-dtype": ("float16", "float16"),
    "--quantization": ("fp8", "fp8"),
    "--cpu-offload-gb": ("0.1", 0.1),
    "VLLM_CPU_KVCACHE_SPACE": ("4", 4 * GIB),
}
BASE = {"model": "SmolLM2-135M-Instruct", "chip": "h100", "max_model_len": 8192}
CPU = {"model": "SmolLM2-135M-Instruct", "chip": "cpu", "dtype": "float32", "max_model_len": 8192}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)


def _item(name: str, text: str | None) -> str:
    key = name if name.isupper() else name.removeprefix("--")
    return key if text is None else f"{key}={text}"


def _plan_file(tmp_path: Path, inputs: dict, *, with_request: bool) -> Path:
    plan = api.plan(PlanRequest(launch="vllm", **inputs))
    data = json.loads(plan.model_dump_json())
    if not with_request:
        data.pop("request")  # a plan file written before plans recorded their request
    path = tmp_path / ("plan.json" if with_request else "old-plan.json")
    path.write_text(json.dumps(data))
    return path


def test_every_memory_sizing_row_has_a_case_and_a_plan_setting():
    sizing = {row.name for row in flag_table.FLAGS if row.sizes_memory}
    assert sizing == set(SIZED)
    # multimodal (the towers loaded) is spelled through limit_mm_per_prompt: text-only is 0 of every modality
    settings = set(ServeSettings.model_fields) - {"multimodal"}
    assert {row.setting for row in flag_table.FLAGS if row.setting} == settings
    # a setting is the planner input it answers, but for those the planner decides from the release and the card or
    # checkpoint: the extensible KV cache off where vLLM 0.34+ would turn it on (planner.core.
    # _extensible_kv_cache_setting), the bitsandbytes loader a release before 0.8.2 needs (planner.core.BNB_FLAGS)
    assert settings - set(PlanRequest.model_fields) == {"enable_extensible_kv_cache", "load_format"}


@pytest.mark.parametrize("row", [row for row in flag_table.FLAGS if row.sizes_memory], ids=lambda row: row.name)
def test_up_plan_set_of_a_memory_sizing_flag_replans_or_says_the_plan_is_stale(tmp_path, row):
    text, meant = SIZED[row.name]
    item = _item(row.name, text)
    inputs = CPU if row.engines == ("vllm-cpu",) else BASE
    assert row.setting is not None
    # a plan that records its request: re-planned with the --set, and what `plan --set` prints
    planned = _plan_file(tmp_path, inputs, with_request=True)
    result = api.up(UpRequest(engine="vllm", plan=planned, sets=[item], port=8000, dry_run=True))
    assert result.replanned_with == [item] and result.plan is not None and result.plan.request is not None
    assert result.plan.request[row.setting] == meant
    assert not [w for w in result.launch.warnings if "sized" in w]
    others = {name: value for name, value in inputs.items() if name != row.setting}
    direct = api.plan(PlanRequest(launch="vllm", port=8000, sets=[item], **others))
    assert direct.serve_command == result.launch.command
    # a plan file without its request: launched as it is, with one line saying why it is stale
    old = _plan_file(tmp_path, inputs, with_request=False)
    result = api.up(UpRequest(engine="vllm", plan=old, sets=[item], port=8000, dry_run=True))
    assert result.replanned_with == []
    (stale,) = [w for w in result.launch.warnings if "stale" in w]
    assert stale.startswith(f"--set {item} changes memory the plan sized ({row.setting} ")
    assert "cannot be re-planned" in stale and "\n" not in stale


def _twin_sizes_memory(row: flag_table.FlagSpec) -> bool:
    """--X whose --no-X row sizes memory: the two spell one planner input (flag_table.planner_setting)."""
    twin = flag_table.spec("--no-" + row.name.removeprefix("--"))
    return twin is not None and twin.sizes_memory


@pytest.mark.parametrize(
    ("item", "meant"),
    [("enable-prefix-caching", True), ("enable-prefix-caching=true", True), ("enable-prefix-caching=false", False),
     ("--enable-prefix-caching=off", False), ("enable-prefix-caching=0", False), ("enable-prefix-caching=", None),
     ("no-enable-prefix-caching", False), ("no-enable-prefix-caching=", None),
     ("no-enable-prefix-caching=false", True)],
)  # fmt: skip
def test_both_spellings_of_a_boolean_flag_are_one_planner_input(item, meant):
    # vLLM declares --enable-prefix-caching with argparse.BooleanOptionalAction (vllm/engine/arg_utils.py, 0.6.6 and
    # 0.19.0 sdists): --X and --no-X set one value; `FLAG=` puts the planner input back to its default (None)
    assert flag_table.planner_values([item]) == {"enable_prefix_caching": (meant, item)}


@pytest.mark.parametrize(
    "row",
    [row for row in flag_table.FLAGS if not (row.sizes_memory or row.last or _twin_sizes_memory(row))],
    ids=lambda row: row.name,
)
def test_every_other_flag_passes_through(tmp_path, row):
    item = _item(row.name, None if row.kind == "switch" else "x")
    result = api.up(UpRequest(engine="vllm", plan=_plan_file(tmp_path, BASE, with_request=True), sets=[item],
                              port=8000, dry_run=True))  # fmt: skip
    assert result.replanned_with == []
    assert not [w for w in result.launch.warnings if "sized" in w or "stale" in w]
    by_name = {flag.flag: flag for flag in result.launch.command.flags}
    assert by_name[row.name].origin == "set"


def test_a_set_that_restates_the_plan_says_nothing():
    plan = api.plan(PlanRequest(launch="vllm", **BASE))
    command = flags.serve_command(plan, plan.serve_command.target.model_copy(update={"sets": ["max-model-len=8192"]}))
    assert not [w for w in command.warnings if "sized" in w]


def test_every_flag_the_catalog_writes_is_in_the_table():
    families = ServeFamiliesFile.model_validate(catalog.load("serve_families"))
    written = {rule.flag for rule in families.launch_rules if rule.flag}
    written |= {extra.flag for family in families.families for extra in family.flags}
    assert written and all(flag_table.spec(flag) is not None for flag in written)


def test_settings_are_spelled_through_the_table():
    # the text-only contract and a whole-GiB CPU pool: the two spellings that are not str(value)
    text_only = api.plan(PlanRequest(launch="vllm", multimodal=False, **BASE))
    assert text_only.serve.multimodal is not None and text_only.serve.multimodal.value is False
    by_name = {flag.flag: flag for flag in flags.plan_flags(text_only)}
    assert by_name["--limit-mm-per-prompt"].value == flag_table.TEXT_ONLY
    cpu = api.plan(PlanRequest(launch="vllm", kv_cache_memory_bytes=2 * GIB, **CPU))
    assert cpu.serve_command is not None and cpu.serve_command.env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert "--kv-cache-memory" not in {flag.flag for flag in cpu.serve_command.flags}


def _gemma4_command_for(version: str, sets: list[str] | None = None) -> ServeCommand:
    """The serve command of a Gemma 4 plan (a family with a reasoning parser) as if planned for `version`: the
    planner refuses Gemma 4 before 0.19.0 (catalog/vllm_architectures.json), the flag table is what is tested."""
    plan = api.plan(PlanRequest(model="gemma-4-E2B-it", chip="h100", max_model_len=8192, engine_version="0.19.0"))
    return flags.serve_command(plan.model_copy(update={"engine_version": version}),
                               ServeTarget(kind="vllm", sets=sets or []))  # fmt: skip


def test_a_flag_newer_than_the_planned_engine_is_said():
    # --reasoning-parser first appears in vLLM 0.7.1 (vllm/entrypoints/openai/cli_args.py; not in the 0.7.0 sdist):
    # the family's is left out (the engine refuses an unknown flag), one given by --set is kept and said
    command = _gemma4_command_for("0.7.0")
    assert "--reasoning-parser" not in {flag.flag for flag in command.flags}
    assert (
        "--reasoning-parser left out: first in vLLM 0.7.1, the plan is for 0.7.0 (reasoning kept apart from the "
        "answer unavailable before 0.7.1)"
    ) in command.warnings
    command = _gemma4_command_for("0.7.0", sets=["reasoning-parser=gemma4"])
    assert "--reasoning-parser needs vLLM 0.7.1 or later; the plan is for 0.7.0" in command.warnings
    assert flag_table.older_than("0.8.5.dev169+g1", "0.9.0") and not flag_table.older_than("0.26.1rc1", "0.9.0")
    assert not flag_table.older_than("vllm-tpu image of the seed article", "0.9.0")
    # a dev build numbered for a release is that release's code before it (catalog.files version_key): before it
    assert flag_table.older_than("0.9.0.dev12+g1", "0.9.0") and flag_table.older_than("0.9.0rc2.dev3+g1", "0.9.0")
    assert not flag_table.older_than("0.9.1.dev12+g1", "0.9.0") and not flag_table.older_than("0.9.0rc1", "0.9.0")


def test_a_flag_a_later_engine_removed_is_said():
    # vllm/engine/arg_utils.py of the 0.10.0 sdist has no --enable-reasoning (0.9.0 deprecated it)
    command = _gemma4_command_for("0.10.0", sets=["enable-reasoning"])
    assert (
        "--enable-reasoning was removed in vLLM 0.10.0; the plan is for 0.10.0, which refuses it as an unrecognized "
        "argument"
    ) in command.warnings


def test_a_plan_file_from_before_serve_settings_is_refused_in_one_line(tmp_path):
    # such a file held its flags as text (`serve_args`); launching it would drop every planned flag
    data = json.loads(_plan_file(tmp_path, BASE, with_request=False).read_text())
    data.pop("serve")
    old = tmp_path / "older.json"
    old.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="made by an older onechip .no serve settings.; plan it again"):
        api.up(UpRequest(engine="vllm", plan=old, dry_run=True))


@pytest.mark.parametrize(("item", "written"), [("enforce-eager", True), ("enforce-eager=true", True),
                                              ("enforce-eager=false", False)])  # fmt: skip
def test_a_switch_set_to_a_word_is_written_bare_or_left_out(item: str, written: bool) -> None:
    # vLLM takes --enforce-eager bare: `--set enforce-eager=false` wrote `--enforce-eager false` (new-user test)
    argv = api.plan(PlanRequest(launch="vllm", sets=[item], **BASE)).serve_command.argv
    assert ("--enforce-eager" in argv) is written and "false" not in argv and "true" not in argv


def test_a_switch_set_to_another_word_is_refused() -> None:
    with pytest.raises(ConfigError, match="--enforce-eager is a switch"):
        flag_table.parse_sets(["enforce-eager=maybe"])


@pytest.mark.parametrize("item", ["tool-call-parser", "reasoning-parser", "--max-model-len", "gpu-memory-utilization"])
def test_a_flag_that_takes_a_value_given_bare_is_refused(item: str) -> None:
    # `--set tool-call-parser` wrote a bare `--tool-call-parser`, which vLLM's argparse refuses ('argument
    # --tool-call-parser: expected one argument'); `--set max-model-len` was said as 'disagree' with the plan's length
    flag = item.lstrip("-")
    with pytest.raises(ConfigError) as refused:
        flag_table.parse_sets([item])
    assert str(refused.value) == f"--set {flag}: --{flag} takes a value; write {flag}=VALUE, or {flag}= to drop it"
    assert flag_table.parse_sets(["my-new-flag"])[0].value is None  # a flag not in the table still passes bare


@pytest.mark.parametrize("item", ["enable-prompt-embeds=false", "enable-prompt-embeds=", "enforce-eager=false"])
def test_turning_off_a_switch_the_plan_left_off_says_nothing_stale(item):
    # the plan was made with the switch off (PlanRequest default False): --set FLAG=false asks for what it sized
    result = api.up(UpRequest(engine="vllm", model=BASE["model"], chip="h100", sets=[item, "max-model-len=8192"],
                              port=8000, dry_run=True))  # fmt: skip
    assert result.launch is not None
    assert not [w for w in result.launch.warnings if "sized" in w or "stale" in w]
    assert item.split("=")[0] not in " ".join(result.launch.command.argv)


@pytest.mark.parametrize(
    "item",
    [
        "api-key=dummy-key",  # vLLM's --api-key (vllm/entrypoints/openai/cli_args.py)
        "--api-key=dummy-key",
        "VLLM_API_KEY=dummy-key",  # vllm/envs.py
        "served-model-name=sk-FAKEsecretABCDEFGHIJ0123456789",  # shaped like one (errors._SECRET_PATTERNS)
        "HF_TOKEN=hf_FAKEtoken0123456789",
    ],
)
def test_a_secret_in_set_is_refused_without_echoing_it(item: str) -> None:
    # the plan and `up --dry-run` print every --set value, and the engine's argv shows in ps: a key given there
    # was printed whole (plan --set api-key=sk-... showed it twice)
    with pytest.raises(ConfigError, match="never goes on the command line") as refused:
        flag_table.parse_sets([item])
    assert item.partition("=")[2] not in str(refused.value)


@pytest.mark.parametrize(("version", "written"), [("0.4.1", False), ("0.5.5", False), ("0.19.0", True)])
def test_tool_calling_flags_are_left_out_before_the_release_that_added_them(version: str, written: bool) -> None:
    # --enable-auto-tool-choice and --tool-call-parser are first in vllm/entrypoints/openai/cli_args.py of the 0.6.0
    # sdist (not in 0.5.5); a 0.4.1 plan wrote both, which that engine's argparse refuses. Gemma 4's own parser is
    # first in 0.19.0 (tests/unit/vllm/test_registry_releases.py: from 0.6.0 to 0.18.x it is left out for that)
    command = _gemma4_command_for(version)
    names = {flag.flag for flag in command.flags}
    assert ("--enable-auto-tool-choice" in names, "--tool-call-parser" in names) == (written, written)
    said = (
        f"--enable-auto-tool-choice left out: first in vLLM 0.6.0, the plan is for {version} (tool calling "
        "unavailable before 0.6.0)"
    )
    assert (said in command.warnings) is not written


@pytest.mark.parametrize(("version", "written"), [("0.4.1", False), ("0.30.0", False), ("0.31.0", True)])
def test_tool_strict_level_is_left_out_before_0_31(version: str, written: bool) -> None:
    # SmolLM2's family flag (serve_families.json, measured on vllm-cpu 0.32.0) was written for every release; a serve
    # harness drops it below 0.31.0 (search-index file id 71515830599); a 0.4.1 plan printed it beside the warning
    # that tool calling is unavailable there
    plan = api.plan(PlanRequest(model="HuggingFaceTB/SmolLM2-135M-Instruct", chip="h100", engine_version=version))
    command = flags.serve_command(plan, ServeTarget(kind="vllm"))
    assert ("--tool-strict-level" in {flag.flag for flag in command.flags}) is written
    said = [w for w in command.warnings if w.startswith("--tool-strict-level left out: first in vLLM 0.31.0")]
    assert bool(said) is not written


@pytest.mark.parametrize(
    ("version", "argv_head"),
    # setup.py's console script 'vllm=vllm.scripts:main' is first in the 0.5.2 sdist (flags.VLLM_SERVE_SINCE)
    [("0.5.1", ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model"]), ("0.5.2", ["vllm", "serve"])],
)
def test_a_release_before_vllm_serve_is_launched_as_the_api_server_module(version: str, argv_head: list[str]) -> None:
    command = _gemma4_command_for(version)
    assert command.argv[: len(argv_head)] == argv_head
    plan = api.plan(PlanRequest(model="gemma-4-E2B-it", chip="h100", max_model_len=8192, engine_version="0.19.0"))
    docker = flags.serve_command(plan.model_copy(update={"engine_version": version}), ServeTarget(kind="vllm-docker"))
    entrypoint = "python3" if version == "0.5.1" else "vllm"
    assert f"--entrypoint {entrypoint} vllm/vllm-openai:v{version} {shlex.join(argv_head[1:])}" in docker.shell


def test_the_auto_tool_choice_switch_goes_with_the_parser_a_set_drops() -> None:
    # `--set tool-call-parser=` kept the family's --enable-auto-tool-choice, which vLLM refuses alone before it loads
    # anything ('Error: --enable-auto-tool-choice requires --tool-call-parser': validate_parsed_serve_args,
    # vllm/entrypoints/openai/cli_args.py of the 0.14.1 and 0.16.0 sdists, entrypoints/launchers/cli_args.py of 0.32.0)
    plan = api.plan(PlanRequest(model="SmolLM2-135M-Instruct", chip="h100", max_model_len=8192))  # family: hermes
    command = flags.serve_command(plan, ServeTarget(kind="vllm", sets=["tool-call-parser="]))
    assert not {"--enable-auto-tool-choice", "--tool-call-parser"} & set(command.argv)
    refused = "vLLM refuses it without one ('Error: --enable-auto-tool-choice requires --tool-call-parser')"
    assert f"--enable-auto-tool-choice left out with --tool-call-parser: {refused}; tool calling stays off" in (
        command.warnings
    )
    # the switch set by hand stays as set, and the refusal is said
    both = flags.serve_command(plan, ServeTarget(kind="vllm", sets=["tool-call-parser=", "enable-auto-tool-choice"]))
    assert "--enable-auto-tool-choice" in both.argv
    assert f"--enable-auto-tool-choice without --tool-call-parser: {refused}" in both.warnings


def test_a_tool_call_parser_without_the_switch_is_said_unused_not_refused() -> None:
    # vLLM checks the parser's name only with --enable-auto-tool-choice on ('if args.enable_auto_tool_choice and
    # args.tool_call_parser not in valid_tool_parses': api_server.py of the 0.14.1 sdist, launchers/launcher.py of
    # 0.32.0) and loads none without it (ParserManager.get_tool_parser, 0.32.0): 'vLLM refuses to start' was said
    plan = api.plan(PlanRequest(model="SmolLM2-135M-Instruct", chip="h100", max_model_len=8192))
    command = flags.serve_command(
        plan, ServeTarget(kind="vllm", sets=["enable-auto-tool-choice=", "tool-call-parser=hermez"])
    )
    assert ["--tool-call-parser", "hermez"] == command.argv[command.argv.index("--tool-call-parser") :][:2]
    said = [w for w in command.warnings if "hermez" in w]
    assert said == [
        "--tool-call-parser hermez without --enable-auto-tool-choice: vLLM uses no tool-call parser without it, so "
        "'auto' tool choice stays off"
    ]
    # 0.6.0 - 0.6.2 declare the flag with argparse choices=["mistral", "hermes"] (cli_args.py of the 0.6.2 sdist):
    # refused there with or without the switch
    old = flags.serve_command(
        plan.model_copy(update={"engine_version": "0.6.2"}),
        ServeTarget(kind="vllm", sets=["enable-auto-tool-choice=", "tool-call-parser=llama3_json"]),
    )
    assert any(w.startswith("--tool-call-parser llama3_json: vLLM 0.6.2 registers no") for w in old.warnings)


@pytest.mark.parametrize(
    ("item", "name", "value"),
    [
        ("max_model_len=4k", "--max-model-len", "4000"),
        ("--max_model_len=4k", "--max-model-len", "4000"),
        ("enable_prefix_caching", "--enable-prefix-caching", None),
        ("tool_call_parser=hermes", "--tool-call-parser", "hermes"),
    ],
)
def test_a_flag_spelled_with_underscores_is_the_dashed_flag(item: str, name: str, value: str | None) -> None:
    # vLLM's FlexibleArgumentParser.parse_args turns underscores between '--' and the first '.' into dashes
    # (vllm/utils/argparse_utils.py, vLLM 0.32.0): `vllm serve M --max_model_len 4k` runs; --set max_model_len=4k was
    # refused ("expected FLAG=VALUE")
    [override] = flag_table.parse_sets([item])
    assert (override.name, override.value) == (name, value)


def test_a_planner_input_spelled_with_underscores_is_planned() -> None:
    plan = api.plan(PlanRequest(launch="vllm", sets=["max_model_len=4k"], **{**BASE, "max_model_len": None}))
    assert plan.serve.max_model_len is not None and plan.serve.max_model_len.value == 4000  # human_readable_int('4k')


@pytest.mark.parametrize("item", ["hf-token=abc", "hf_token=abc", "api_key=abc"])
def test_a_secret_flag_in_either_spelling_is_refused_whatever_its_value(item: str) -> None:
    # 'hf-token=abc' (a value not shaped as a token) went onto the command line as `--hf-token abc`
    with pytest.raises(ConfigError, match="never goes on the command line") as refused:
        flag_table.parse_sets([item])
    assert "abc" not in str(refused.value)


# Each planner option a sizing row spells whose default is a value (not None: that one cannot be typed), given at
# its default, beside a --set of another value, and the one line that says so. Before: a given value equal to the
# default was taken for 'not given' (the command line passed every switch), so `--kv-cache-dtype auto --set
# kv-cache-dtype=fp8` planned fp8 without a word.
GIVEN_AT_DEFAULT = {
    "--kv-cache-dtype": "--kv-cache-dtype auto and --set kv-cache-dtype=fp8 disagree",
    "--tensor-parallel-size": "--tensor-parallel-size 1 and --set tensor-parallel-size=3 disagree",
    "--no-enable-prefix-caching": "--enable-prefix-caching and --set no-enable-prefix-caching disagree",
    "--language-model-only": "--language-model-only false and --set language-model-only disagree",
    "--pipeline-parallel-size": "--pipeline-parallel-size 1 and --set pipeline-parallel-size=2 disagree",
    "--enforce-eager": "--enforce-eager false and --set enforce-eager disagree",
    "--enable-prompt-embeds": "--enable-prompt-embeds false and --set enable-prompt-embeds disagree",
    "--mamba-ssm-cache-dtype": "--mamba-ssm-cache-dtype auto and --set mamba-ssm-cache-dtype=float16 disagree",
}


def _default(row: flag_table.FlagSpec) -> object:
    return PlanRequest.model_fields[row.setting or ""].default


@pytest.mark.parametrize("row", [row for row in flag_table.FLAGS if row.sizes_memory], ids=lambda row: row.name)
def test_a_planner_option_given_at_its_default_and_a_set_of_another_value_disagree(row):
    if _default(row) is None:
        assert row.name not in GIVEN_AT_DEFAULT
        return
    item = _item(row.name, SIZED[row.name][0])
    given = PlanRequest(model="m", chip="c", sets=[item], **{row.setting or "": _default(row)})
    with pytest.raises(ConfigError) as refused:
        flag_table.with_sets(given)
    assert str(refused.value) == GIVEN_AT_DEFAULT[row.name]
    # the same value both ways is no disagreement
    same = PlanRequest(model="m", chip="c", sets=[item], **{row.setting or "": SIZED[row.name][1]})
    assert getattr(flag_table.with_sets(same), row.setting or "") == SIZED[row.name][1]


@pytest.mark.parametrize("item", ["api-ke=abcdef", "--api-k=abcdef", "hf-tok=abcdef", "hf_toke=abcdef"])
def test_an_abbreviated_secret_flag_is_refused(item: str) -> None:
    # vLLM's FlexibleArgumentParser keeps argparse's allow_abbrev=True (vllm/utils/argparse_utils.py, 0.34.0 sdist: no
    # allow_abbrev given), so `--api-ke abcdef` is read as --api-key: the key went on the command line, into ps and
    # into the 'non-default args' line vLLM logs (redacted only from 0.34.0: entrypoints/common/startup.py)
    with pytest.raises(ConfigError, match="never goes on the command line") as refused:
        flag_table.parse_sets([item])
    assert "abcdef" not in str(refused.value)


@pytest.mark.parametrize(
    ("item", "lower"), [("Load-Format=auto", "load-format"), ("--Max_Model_Len=4k", "max-model-len")]
)
def test_a_flag_with_capital_letters_is_refused_saying_so(item: str, lower: str) -> None:
    # vLLM's FlexibleArgumentParser.parse_args turns only '_' into '-' (vllm/utils/argparse_utils.py, 0.19.0 sdist) and
    # argparse matches option names exactly, so `--Load-Format auto` is an unrecognized argument there; onechip said
    # "expected FLAG=VALUE, ..." of an item that was FLAG=VALUE (qa70a)
    with pytest.raises(ConfigError, match="lower case") as refused:
        flag_table.parse_sets([item])
    assert f"{lower}=" in str(refused.value) and "expected FLAG=VALUE" not in str(refused.value)
