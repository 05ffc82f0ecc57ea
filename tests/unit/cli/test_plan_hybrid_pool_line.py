"""`onechip plan` on a hybrid CPU plan: the KV pool line does not claim blocks x block_size tokens (the blocks are
raised to hold a recurrent state and shared by the layer groups) and names the figure the engine logs."""

from __future__ import annotations

from pathlib import Path

from factories import tiny_random_checkpoint

DATA = Path(__file__).parents[2] / "data"


def test_the_hybrid_pool_line_names_the_logged_tokens(run, tmp_path) -> None:
    """tests/data/vllm_cpu_0.32_tiny_qwen3_next_boot.log: 8,192 blocks of 256 tokens, 'CPU KV cache size: 1,198,372
    tokens'; the line said '8,192 blocks x 128 = 524,288 tokens', neither the block nor the figure the log gives."""
    tiny_random_checkpoint(tmp_path / "m", "tiny_qwen3_next_config.json", "Qwen3NextForCausalLM", "Qwen3NextConfig")
    code, out, err = run("plan", str(tmp_path / "m"), "--chip", "cpu", "--max-model-len", "2048",
                         "--kv-cache-memory", str(1 << 30))  # fmt: skip
    assert code == 0, err
    said = " ".join(out.split())
    assert "KV pool -> 8,192 blocks over the layer groups = 524,288 tokens (logged as 1,198,372)" in said
    assert "CPU KV cache size: 1,198,372 tokens" in (DATA / "vllm_cpu_0.32_tiny_qwen3_next_boot.log").read_text()
