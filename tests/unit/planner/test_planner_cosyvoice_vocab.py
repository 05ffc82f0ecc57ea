"""CosyVoice2's vLLM language model samples over its speech tokens, not Qwen2's text vocabulary.

CosyVoice's export_cosyvoice2_vllm (cosyvoice/utils/file_utils.py, search-index file id 1013077270) saves the Qwen2 LM
with lm_head = llm_decoder and 'config.vocab_size = model.speech_embedding.num_embeddings': 6,561 + 3 = 6,564 rows
(CosyVoice2's Qwen2LM, 'torch.nn.Embedding(speech_token_size + 3, llm_input_size)'). The V0 profile run samples 256
rows over that vocabulary, so the corpus log rtx4090-cosyvoice2-0.5b-llm-len32768-util040-v090 (vLLM 0.9.0 falling
back to V0) logs 'PyTorch activation peak memory takes 1.12GiB' for its 32,768-token profile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.schemas.common import GIB

COSYVOICE = "rtx4090-cosyvoice2-0.5b-llm-len32768-util040-v090"


def test_the_speech_vocabulary_sizes_the_v0_sampler_warm_up(tmp_path: Path) -> None:
    entry = corpus_entry(COSYVOICE)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    assert config["vocab_size"] == 6561 + 3
    path = sized_checkpoint(tmp_path / "cosyvoice2", config, int(entry["logged"]["model_weights_gib"] * GIB))
    plan = plan_model(
        str(path), "rtx4090", "vllm-gpu", max_model_len=32768, utilization=0.4, engine_version="0.9.0",
        dtype="bfloat16", enable_prompt_embeds=True, flashinfer=False, multimodal=False,
    )  # fmt: skip
    budget = plan.memory_budget
    assert budget is not None
    # 1.06 GiB planned against the logged 1.12 (with Qwen2's 151,936 rows it was 1.47)
    assert budget.activation_peak_bytes / GIB == pytest.approx(entry["logged"]["activation_peak_gib"], abs=0.1)
    logged_tokens = entry["logged"]["num_gpu_blocks"] * 16
    assert plan.kv_tokens_logged == pytest.approx(logged_tokens, rel=0.02)  # -1.0%: non-torch and the card's total
