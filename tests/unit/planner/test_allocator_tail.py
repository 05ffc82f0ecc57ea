"""What torch's caching allocator counts beyond an unquantized checkpoint's parameters in vLLM's 'Model loading took'
(planner.weights.allocator_tail_bytes).

c10/cuda/CUDACachingAllocator.cpp: a request of 10 MiB or more (kMinLargeAlloc) gets a segment rounded up to 2 MiB
(kRoundLarge) and is split only when more than 1 MiB (kSmallSize) would remain (should_split), so the block, and the
allocated bytes torch.cuda.max_memory_allocated reports (vllm/utils/mem_utils.py DeviceMemoryProfiler, which
gpu_model_runner.load_model prints as 'Model loading took'), carry a tail of 1 MiB or less."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onechip.planner.core import plan_model
from onechip.planner.weights import Tensor, allocator_tail_bytes

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"
MIB = 1 << 20


def _dense(config: dict, *, tied: bool, dtype: str = "BF16") -> list[Tensor]:
    """A Llama-layout checkpoint's tensor headers for `config` (q/k/v, o, gate/up/down, norms, embedding, and the
    head unless `tied`: Gemma2Config's default is tied, Qwen2Config's untied)."""
    h, inter, hd = config["hidden_size"], config["intermediate_size"], config.get("head_dim") or 128
    q, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    tensors = [Tensor("model.embed_tokens.weight", (config["vocab_size"], h), dtype)]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes = {"self_attn.q_proj": (q, h), "self_attn.k_proj": (kv, h), "self_attn.v_proj": (kv, h)}
        shapes |= {"self_attn.o_proj": (h, q), "mlp.gate_proj": (inter, h), "mlp.up_proj": (inter, h)}
        shapes |= {"mlp.down_proj": (h, inter), "input_layernorm": (h,), "post_attention_layernorm": (h,)}
        if config["model_type"] == "gemma2":  # Gemma2DecoderLayer's two more norms
            shapes |= {"pre_feedforward_layernorm": (h,), "post_feedforward_layernorm": (h,)}
        tensors += [Tensor(f"{p}{name}.weight", shape, dtype) for name, shape in shapes.items()]
    tensors.append(Tensor("model.norm.weight", (h,), dtype))
    if not tied:
        tensors.append(Tensor("lm_head.weight", (config["vocab_size"], h), dtype))
    return tensors


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("config", "tied", "tail"),
    [
        # gate_up_proj 2 x 9,216 x 2,304 x 2 B = 81 MiB: an 82 MiB segment, 1 MiB not split off; 26 layers; and the
        # tied embedding 256,000 x 2,304 x 2 B = 1,125 MiB (+1)
        ("google--gemma-2-2b-it.json", True, 27 * MIB),
        # per layer gate_up_proj 259 MiB (+1), down_proj 129.5 (+0.5), qkv_proj 4,608 x 3,584 x 2 B = 31.5 (+0.5),
        # o_proj 24.5 (1.5 MiB left: split); 28 layers, and the embedding and head of 152,064 x 3,584: 1,039.5
        # (+0.5 each)
        ("Qwen--Qwen2.5-7B-Instruct.json", False, 28 * 2 * MIB + MIB),
        ("google--gemma-2-9b-it.json", True, 0),  # 56, 28, 196, 98 and 1,750 MiB: whole multiples of 2 MiB
        ("meta-llama--Llama-3.1-8B-Instruct.json", False, 0),  # 48, 32, 224, 112 and 1,002 MiB
    ],
)
def test_the_tails_of_the_fused_parameters(config: str, tied: bool, tail: int) -> None:
    tensors = _dense(_config(config), tied=tied)
    assert allocator_tail_bytes(tensors, "bfloat16", 1, tie_word_embeddings=tied) == tail


def test_a_quantized_checkpoint_has_none_counted() -> None:
    tensors = _dense(_config("google--gemma-2-2b-it.json"), tied=True)
    tensors.append(Tensor("model.layers.0.mlp.down_proj.weight_scale", (2304,), "F32"))
    assert allocator_tail_bytes(tensors, "bfloat16", 1, tie_word_embeddings=True) == 27 * MIB  # scales are floats
    tensors.append(Tensor("model.layers.0.mlp.down_proj.weight_packed", (2304, 1152), "I32"))
    assert allocator_tail_bytes(tensors, "bfloat16", 1, tie_word_embeddings=True) == 0


def test_tensor_parallel_ranks_hold_their_shard() -> None:
    # Gemma-2-2B at TP 2: gate_up_proj 40.5 MiB per rank and the embedding's 562.5 MiB (1.5 MiB left: split off),
    # qkv_proj 9 MiB (under 10 MiB): none; Qwen2.5-7B at TP 2: gate_up_proj 129.5 (+0.5), down_proj 64.75 (+1.25:
    # split off), qkv_proj 15.75 (+0.25), o_proj 12.25 (+1.75: split off) on 28 layers, embedding and head 519.75
    # (+0.25 each)
    gemma = _dense(_config("google--gemma-2-2b-it.json"), tied=True)
    assert allocator_tail_bytes(gemma, "bfloat16", 2, tie_word_embeddings=True) == 0
    qwen = _dense(_config("Qwen--Qwen2.5-7B-Instruct.json"), tied=False)
    assert allocator_tail_bytes(qwen, "bfloat16", 2, tie_word_embeddings=False) == 28 * 3 * MIB // 4 + MIB // 2


def test_the_plan_counts_them_in_its_weights(tmp_path: Path) -> None:
    cfg = _config("google--gemma-2-2b-it.json")
    tensors = _dense(cfg, tied=True)
    header, offset = {}, 0
    for t in tensors:
        size = t.nbytes()
        header[t.name] = {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    directory = tmp_path / "gemma-2-2b"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw)
    plan = plan_model(str(directory), "h100", engine_version="0.19.0", max_model_len=8192, utilization=0.95)
    assert plan.memory_budget is not None
    rope = 8192 * 256 * 2  # the bf16 cos/sin cache of 8,192 positions x head_dim 256
    # 5,228,683,776 B of checkpoint (google/gemma-2-2b-it model.safetensors.index.json total_size) + rope + 27 MiB
    # = 5,261,189,632 B = 4.8999 GiB against 'Model loading took 4.9 GiB' (tests/fixtures/bootlogs/h100-gemma2-2b-v0190;
    # 4.8735 GiB without the tails)
    assert offset == 5_228_683_776
    assert plan.memory_budget.weights_bytes == offset + rope + 27 * MIB
