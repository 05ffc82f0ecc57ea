"""What --limit-mm-per-prompt means for a model: its modalities, each one's count, and the towers that serve them.

    model_modalities(config) -> ('image', 'video', 'audio')   what vLLM's processor for the model takes
    served_limits(request, config, v0) -> MmLimits            every modality's count as the engine reads it
    TOWER_MODALITIES                                          the modalities each tower serves

vLLM reads a modality left out of --limit-mm-per-prompt at its default: 999 on the V1 engine, 1 on V0
(MultiModalConfig.get_limit_per_prompt, vllm/config.py of the 0.8.5 sdist ('999 if envs.VLLM_USE_V1 else 1'),
vllm/config/multimodal.py of 0.19.0 and 0.34.0 ('Unspecified modality is set to 999 by default'); 0.6.6's
registry.py init_mm_limits_per_prompt: 1). Where the counts take effect is the engine rules' and the profiling
rule's (planner.rules.EngineRules.served_towers, planner.gpu_memory.encoder_profile_bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from onechip.errors import ConfigError
from onechip.planner.weights import AUDIO_TOWER, VISION_TOWER

# The modalities each tower serves: vllm/model_executor/models/interfaces.py _mark_tower_model (0.16.0 and 0.34.0
# sdists) names the stage 'vision_tower' for {'image', 'video'} and '<modality>_tower' otherwise ('audio_tower'),
# and skips building it when get_limit_per_prompt is 0 for all of them.
TOWER_MODALITIES: dict[str, tuple[str, ...]] = {VISION_TOWER: ("image", "video"), AUDIO_TOWER: ("audio",)}
# The modality names the towers above serve; another name is refused (a typo would otherwise plan nothing). 0 for one
# of these that the model lacks is accepted: it asks for nothing the model could take (text-only's own JSON).
MODALITIES = ("image", "video", "audio")
V1_DEFAULT_LIMIT = 999
V0_DEFAULT_LIMIT = 1


# Architectures whose config.json names its towers in no vision_config / audio_config, with the modalities of their
# vLLM class's get_supported_mm_limits: Phi-4-multimodal (embd_layer's image_embd_layer and audio_embd_layer;
# vllm/model_executor/models/phi4mm.py Phi4MMProcessingInfo: {"audio": None, "image": None}, 0.25.0 - 0.34.0 sdists).
_MODALITIES_BY_ARCHITECTURE: dict[str, tuple[str, ...]] = {"Phi4MMForCausalLM": ("image", "audio")}


def model_modalities(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The modalities vLLM's processor takes for this config.json: 'image' with a vision_config, 'video' too where the
    config names a video token (video_token_id / video_token_index: Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5, Gemma 4,
    whose get_supported_mm_limits list 'video': vllm/model_executor/models/qwen3_vl.py, gemma4_mm.py of the 0.19.0
    and 0.34.0 sdists), 'audio' with an audio_config; an architecture of _MODALITIES_BY_ARCHITECTURE its own. () for
    a text-only model."""
    architectures = config.get("architectures")
    for arch in architectures if isinstance(architectures, list) else ():
        if isinstance(arch, str) and arch in _MODALITIES_BY_ARCHITECTURE:
            return _MODALITIES_BY_ARCHITECTURE[arch]
    out: list[str] = []
    if isinstance(config.get("vision_config"), Mapping):
        out.append("image")
        if config.get("video_token_id") is not None or config.get("video_token_index") is not None:
            out.append("video")
    if isinstance(config.get("audio_config"), Mapping):
        out.append("audio")
    return tuple(out)


@dataclass(frozen=True)
class MmLimits:
    """Each of the model's modalities with the count the engine reads (a modality not given: vLLM's default), and
    whether the request gave any (None: --limit-mm-per-prompt not given, every modality at its default)."""

    counts: dict[str, int]
    given: dict[str, int] | None

    @property
    def served(self) -> bool:
        """Some modality takes at least one item: the model runs as a multimodal one."""
        return any(count > 0 for count in self.counts.values())

    def on(self, modality: str) -> bool:
        """`modality` is one of the model's and takes at least one item."""
        return self.counts.get(modality, 0) > 0


def served_limits(multimodal: bool, given: Mapping[str, int] | None, config: Mapping[str, Any], v0: bool) -> MmLimits:
    """The counts the engine runs with: 0 for every modality when text-only (`multimodal` False); else the given
    counts over vLLM's default for the rest (`v0`: the V0 engine's 1, else 999). Raises ConfigError for a name not in
    MODALITIES and for a count above 0 of a modality the model does not take (vLLM warns and ignores it: 0.6.6
    registry.py 'Detected extra keys in `--limit-mm-per-prompt` ... They will be ignored'; 0.19.0 allowed_mm_limits
    iterates the supported ones only), so a limit that would change nothing is not planned as if it did."""
    modalities = model_modalities(config)
    takes = f"it takes {', '.join(modalities)}" if modalities else "it is a text-only model"
    unknown = sorted(m for m, n in (given or {}).items() if m not in modalities and (n > 0 or m not in MODALITIES))
    if unknown:
        raise ConfigError(f"--limit-mm-per-prompt {', '.join(unknown)}: not a modality of this model ({takes})")
    if not multimodal:
        return MmLimits(counts=dict.fromkeys(modalities, 0), given=dict(given) if given is not None else None)
    default = V0_DEFAULT_LIMIT if v0 else V1_DEFAULT_LIMIT
    counts = {m: (given or {}).get(m, default) for m in modalities}
    return MmLimits(counts=counts, given=dict(given) if given is not None else None)
