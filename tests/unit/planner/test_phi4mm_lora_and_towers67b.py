"""Phi-4-multimodal (Phi4MMForCausalLM) weights as vLLM loads them (planfuzz67b).

The published checkpoint wraps every decoder projection in two LoRA adapters: `...qkv_proj.base_layer.weight` beside
`...qkv_proj.lora_A.vision.weight` (rank 256) and `...lora_A.speech.weight` (rank 320), and their lora_B, on qkv_proj,
o_proj, gate_up_proj and down_proj (public copies list the names: search-index file ids 53698075368, 67343951183).
vLLM loads the base weights only: `AutoWeightsLoader(self, skip_substrs=["lora"])` (vllm/model_executor/models/
phi4mm.py, 0.25.0 - 0.28.0 sdists), `hf_to_vllm_mapper` `orig_to_new_substr={"base_layer.": "", "lora": None}` (0.29.0
- 0.34.0 sdists); the adapters are served, if at all, through --enable-lora from their own folders. Its image encoder
(`model.embed_tokens_extend.image_embed.` -> vision_encoder) and audio embedding (`model.embed_tokens_extend.
audio_embed.` -> embed_tokens_extend) are built inside `_mark_tower_model(vllm_config, {"image", "video"})` and
`_mark_tower_model(vllm_config, "audio")` (0.25.0 - 0.34.0), and its get_supported_mm_limits is {"audio", "image"},
though its config.json has no vision_config or audio_config (it names them in embd_layer).
Before: the LoRA tensors were counted (830,472,192 parameters, 1.55 GiB at bf16) and both towers were counted in the
language model, also with --text-only.
"""

from __future__ import annotations

import json
from pathlib import Path

from factories import BOOTLOGS, header_checkpoint
from onechip.planner import plan_model
from onechip.planner.modalities import model_modalities

PHI4MM = json.loads((BOOTLOGS / "configs" / "microsoft--Phi-4-multimodal-instruct.json").read_text(encoding="utf-8"))
HIDDEN, LAYERS, VOCAB = 3072, 32, 200064
# (module, out, in): qkv 24 x 128 query + 2 x 8 x 128 KV rows; gate_up 2 x 8192; the checkpoint's own layout
PROJECTIONS = [("self_attn.qkv_proj", 5120, HIDDEN), ("self_attn.o_proj", HIDDEN, HIDDEN),
               ("mlp.gate_up_proj", 2 * 8192, HIDDEN), ("mlp.down_proj", HIDDEN, 8192)]  # fmt: skip
RANKS = {"vision": 256, "speech": 320}
# stand-ins for the two towers (one tensor each: the rule is the prefix, not the towers' real sizes)
VISION = "model.embed_tokens_extend.image_embed.img_processor.encoder.layers.0.self_attn.q_proj.weight"
AUDIO = "model.embed_tokens_extend.audio_embed.encoder.encoders.0.self_attn.linear_q.weight"


def _shapes() -> dict[str, list[int]]:
    shapes = {"model.embed_tokens.weight": [VOCAB, HIDDEN], "model.norm.weight": [HIDDEN],
              VISION: [1152, 1152], AUDIO: [1024, 1024]}  # fmt: skip
    for i in range(LAYERS):
        for module, out, inp in PROJECTIONS:
            shapes[f"model.layers.{i}.{module}.base_layer.weight"] = [out, inp]
            for adapter, rank in RANKS.items():
                shapes[f"model.layers.{i}.{module}.lora_A.{adapter}.weight"] = [rank, inp]
                shapes[f"model.layers.{i}.{module}.lora_B.{adapter}.weight"] = [out, rank]
        for norm in ("input_layernorm", "post_attention_layernorm"):
            shapes[f"model.layers.{i}.{norm}.weight"] = [HIDDEN]
    return shapes


BASE_PARAMS = VOCAB * HIDDEN + HIDDEN + LAYERS * (sum(o * i for _, o, i in PROJECTIONS) + 2 * HIDDEN)


def test_phi4mm_lora_adapters_are_not_loaded(tmp_path: Path) -> None:
    plan = plan_model(str(header_checkpoint(tmp_path / "m", PHI4MM, _shapes())), "h100", "vllm-gpu",
                      engine_version="0.32.0", max_model_len=8192)  # fmt: skip
    # 3,836,021,760 base parameters (embeddings tied to the head), 2 B each; the 830,472,192 LoRA parameters are not
    assert plan.weights_bytes - 2 * (1152 * 1152 + 1024 * 1024) == 2 * BASE_PARAMS == 7_672_043_520
    assert plan.weights_by_component["vision_tower"] == 2 * 1152 * 1152
    assert plan.weights_by_component["audio_tower"] == 2 * 1024 * 1024
    # the decode step streams the base weights only (and the head, tied to the embeddings)
    assert plan.decode_bytes_per_step == 2 * BASE_PARAMS
    # KV: 32 layers x 8 KV heads x 3072 / 24 = 128 x (K, V) x 2 B; an all-sliding model (sliding_window 262,144 and no
    # layer_types: vllm/engine/arg_utils.py sets CacheConfig.sliding_window, 0.32.0 wheel)
    assert plan.kv_bytes_per_token == 32 * 8 * 128 * 2 * 2


def test_phi4mm_towers_are_left_out_text_only(tmp_path: Path) -> None:
    assert model_modalities(PHI4MM) == ("image", "audio")
    plan = plan_model(str(header_checkpoint(tmp_path / "m", PHI4MM, _shapes())), "h100", "vllm-gpu",
                      engine_version="0.32.0", max_model_len=8192, multimodal=False)  # fmt: skip
    assert plan.weights_bytes == 2 * BASE_PARAMS
    assert "vision_tower" not in plan.weights_by_component and "audio_tower" not in plan.weights_by_component
