"""A bitsandbytes 8-bit checkpoint on the releases before ModelConfig._verify_bnb_config's eager fallback (0.6.2):
- 0.5.4 - 0.5.5 load no 8-bit checkpoint: BitsAndBytesConfig has no load_in_8bit (from_config returns cls(), 4-bit
  only) and the pre-quantized loader knows only the NF4 quant state ('.quant_state.bitsandbytes__nf4'), so the int8
  '.weight' tensors go to a model whose linear parameters are 'qweight' (model_executor/layers/quantization/
  bitsandbytes.py and model_executor/model_loader/loader.py of the 0.5.4 and 0.5.5 sdists);
- 0.6.0 - 0.6.1.post2 load it (load_in_8bit, _quantized_8bit_generator: same files of the 0.6.0, 0.6.1,
  0.6.1.post1, 0.6.1.post2 sdists) and capture CUDA graphs: vllm/config.py has no bitsandbytes eager fallback there
  (it forces eager only for encoder-decoder models)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bnb_8bit_eager69 import _bnb

from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.vllm import flags


@pytest.mark.parametrize("version", ["0.5.4", "0.5.5"])
def test_an_8bit_checkpoint_before_0_6_0_is_refused(tmp_path: Path, version: str) -> None:
    with pytest.raises(ConfigError, match=r"8-bit.*vLLM 0\.5\.[45].*loads 4-bit.*--engine-version 0\.6\.0"):
        plan_model(_bnb(tmp_path, 8), "h100", max_model_len=8192, engine_version=version)


def test_a_4bit_checkpoint_on_0_5_4_is_still_planned(tmp_path: Path) -> None:
    assert plan_model(_bnb(tmp_path, 4), "h100", max_model_len=8192, engine_version="0.5.4").kv_tokens > 0


@pytest.mark.parametrize("version", ["0.6.0", "0.6.1.post2"])
def test_an_8bit_checkpoint_before_the_eager_fallback_keeps_cuda_graphs(tmp_path: Path, version: str) -> None:
    plan = plan_model(_bnb(tmp_path, 8), "h100", max_model_len=8192, engine_version=version)
    assert plan.serve.enforce_eager is None
    assert "bnb-8bit-eager" not in {w.code for w in plan.warnings}
    assert not any(f.flag == "--enforce-eager" for f in flags.plan_flags(plan))
