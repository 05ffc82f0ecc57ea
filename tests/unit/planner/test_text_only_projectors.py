"""With --text-only (every --limit-mm-per-prompt 0) vLLM builds no module it marks as a tower, and the planner drops
the tower component's weights. Idefics3's connector and ERNIE-4.5-VL's resampler are built inside the tower marks,
so they are tower weights, not the language model's (vllm 0.34.0 sdist, vllm/model_executor/models/):

- idefics3.py Idefics3ForConditionalGeneration.__init__ (lines 558-566): _mark_composite_model with
  tower_targets={"image": (Idefics3VisionTransformer, Idefics3Connector)}; Idefics3Model builds them as
  'vision_model' and 'connector' under the 'model' prefix (lines 417-426), the checkpoint's 'model.connector.';
- ernie45_vl.py Ernie4_5_VLMoeForConditionalGeneration.__init__ (lines 1404-1418): vision_model and
  resampler_model inside _mark_tower_model(vllm_config, {"image", "video"}); its hf_to_vllm_mapper (lines
  1367-1373) maps the checkpoint's 'model.resampler_model.' to 'resampler_model.' and every other 'model.' name to
  the language model.
"""

from __future__ import annotations

import pytest

from onechip.planner.weights import LANGUAGE_MODEL, VISION_TOWER, component_of


@pytest.mark.parametrize(
    "name",
    [
        "model.connector.modality_projection.proj.weight",  # Idefics3 / SmolVLM
        "model.resampler_model.spatial_linear.0.weight",  # ERNIE-4.5-VL
        "model.resampler_model.mlp.weight",
    ],
)
def test_projector_weights_are_the_tower(name: str) -> None:
    assert component_of(name) == VISION_TOWER


@pytest.mark.parametrize(
    "name", ["model.text_model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.experts.0.up_proj.weight"]
)
def test_their_language_models_stay_the_language_model(name: str) -> None:
    assert component_of(name) == LANGUAGE_MODEL
