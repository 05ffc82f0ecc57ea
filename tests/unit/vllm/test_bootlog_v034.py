"""What vLLM 0.32 - 0.34 print differently at start-up (issue 27): no boot log of 0.32 or later was found in public
issues, PRs or files (the stored indexes end in October 2026, vLLM 0.31.x), so these lines are the format strings of
the 0.32.0 - 0.34.0 sdists with their placeholders filled, each test naming where its string is. The figures are
placeholders: what is checked is which field each one lands in."""

from __future__ import annotations

from pathlib import Path

from onechip.vllm.bootlog import read_boot_log

_W0 = "(Worker_TP0 pid=11) INFO 12-01 10:00:{:02d} [{}] {}"
_W1 = "(Worker_TP1 pid=12) INFO 12-01 10:00:{:02d} [{}] {}"
_CORE = "(EngineCore pid=10) INFO 12-01 10:00:{:02d} [{}] {}"


def _log(*lines: str) -> str:
    return "\n".join(lines)


def test_the_extensible_kv_cache_pool_is_the_one_measured_after_warmup() -> None:
    # vllm/v1/worker/gpu_worker.py determine_available_memory ('Available KV cache memory: %s GiB': the reserved
    # capacity when enable_extensible_kv_cache, the 0.34 default on CUDA and ROCm) and its closing 'Free memory on
    # device ... Current kv cache memory in use is %s GiB.' (the same reserve); vllm/v1/worker/extensible_kv_cache.py
    # measure_kv_cache_blocks ('Memory after warmup: %s GiB free, %s GiB committed to the KV cache, %s GiB kept for
    # transient activations (%s GiB allocated at peak, %s GiB of torch reservation growth); %d KV cache blocks (%s GiB)
    # fit within the requested %s GiB. Torch may reserve up to %s GiB.'), one per rank; vllm/v1/core/kv_cache_utils.py
    # update_kv_cache_capacity, called from finalize_extensible_kv_cache with the fewest blocks of any rank; then
    # extend_kv_cache's 'Extended KV cache to %d blocks (%.2f GiB).' on each rank
    text = _log(
        _W0.format(1, "gpu_worker.py:796", "Available KV cache memory: 64.2 GiB"),
        _W1.format(1, "gpu_worker.py:796", "Available KV cache memory: 64.1 GiB"),
        _W0.format(9, "gpu_worker.py:1174", "Free memory on device (78.68/79.19 GiB) on startup. Desired GPU memory "
                   "utilization is (1.0, 78.68 GiB). Actual usage is 8.5 GiB for consumed memory (weights + "
                   "non-torch), 2.1 GiB for peak activation, and 0.84 GiB for CUDAGraph memory. Replace "
                   "gpu_memory_utilization config with `--kv-cache-memory=71000000000` (66.12 GiB) to fit into "
                   "requested memory, or `--kv-cache-memory=71000000000` (66.12 GiB) to fully utilize gpu memory. "
                   "Current kv cache memory in use is 64.2 GiB."),
        _W0.format(12, "extensible_kv_cache.py:693", "Memory after warmup: 12.3 GiB free, 51.1 GiB committed to the KV "
                   "cache, 2.1 GiB kept for transient activations (2.1 GiB allocated at peak, 0.4 GiB of torch "
                   "reservation growth); 31022 KV cache blocks (60.59 GiB) fit within the requested 78.68 GiB. Torch "
                   "may reserve up to 14.0 GiB."),
        _W1.format(12, "extensible_kv_cache.py:693", "Memory after warmup: 12.2 GiB free, 51.1 GiB committed to the KV "
                   "cache, 2.2 GiB kept for transient activations (2.2 GiB allocated at peak, 0.4 GiB of torch "
                   "reservation growth); 31010 KV cache blocks (60.57 GiB) fit within the requested 78.68 GiB. Torch "
                   "may reserve up to 14.0 GiB."),
        _CORE.format(13, "kv_cache_utils.py:1169", "GPU KV cache size: 496,160 tokens, Maximum concurrency for "
                     "131,072 tokens per request: 3.79x"),
        _W0.format(13, "extensible_kv_cache.py:536", "Extended KV cache to 31010 blocks (60.62 GiB)."),
        _W1.format(13, "extensible_kv_cache.py:536", "Extended KV cache to 31010 blocks (60.62 GiB)."),
    )  # fmt: skip
    record = read_boot_log(text, "vllm", "m")
    # was 64.2 (the reserve: the closing line's 'Current kv cache memory in use') and no block count
    assert (record.kv_cache_gib, record.kv_cache_num_blocks) == (60.57, 31010)
    assert (record.kv_cache_tokens, record.max_concurrency_context, record.max_concurrency) == (496160, 131072, 3.79)
    assert record.logged["gpu_memory_utilization"] == "1.0"


def test_a_boot_without_the_extensible_kv_cache_keeps_its_available_pool() -> None:
    # the same release with the cache sized by profiling (--no-enable-extensible-kv-cache, kv_cache_memory_bytes, no
    # VMM): no 'Memory after warmup' line, and the pool is 'Available KV cache memory' as before
    text = _log(
        _W0.format(1, "gpu_worker.py:796", "Available KV cache memory: 64.2 GiB"),
        _CORE.format(2, "kv_cache_utils.py:1169", "GPU KV cache size: 525,904 tokens, Maximum concurrency for "
                     "131,072 tokens per request: 4.01x"),
    )  # fmt: skip
    assert read_boot_log(text, "vllm", "m").kv_cache_gib == 64.2


def test_every_auto_fit_wording_gives_the_length_the_engine_runs() -> None:
    # 'Using max model len %s' (vllm/config/model.py) is the model's own length; --max-model-len auto ('max_model_len':
    # -1 in non-default args) fits it to the pool afterwards: kv_cache_utils.py of 0.14 - 0.31 ('... to fit in available
    # GPU memory (%s GiB available for KV cache)'), 0.32 - 0.33 ('... to fit in available KV cache memory (%s)'),
    # kv_cache_planning.py of 0.34 (the tentative line with '; the final length is set after CUDA graph capture and
    # warmup', then 'Auto-fit max_model_len: using max_model_len=%d, which fits in the KV cache memory left after CUDA
    # graph capture and warmup (%s).' or '--max-model-len auto reduced max_model_len from %d to %d (%s).', a WARNING
    # with 'Requests longer than %d tokens will be rejected.' below 8,192 tokens)
    head = "(APIServer pid=1) INFO 12-01 10:00:00 [model.py:2152] Using max model len 262144"
    fits = {
        "Auto-fit max_model_len: reduced from 262144 to 200000 to fit in available GPU memory (29.72 GiB available "
        "for KV cache)": "200000",
        "Auto-fit max_model_len: reduced from 262144 to 200000 to fit in available KV cache memory (29.72 GiB GPU)": (
            "200000"
        ),
        "Auto-fit max_model_len: reduced from 262144 to 200000 to fit in available KV cache memory (29.72 GiB GPU); "
        "the final length is set after CUDA graph capture and warmup": "200000",
        "Auto-fit max_model_len: full model context length 262144 fits in available KV cache memory (29.72 GiB GPU)": (
            "262144"
        ),
        "Auto-fit max_model_len: using max_model_len=262144, which fits in the KV cache memory left after CUDA graph "
        "capture and warmup (29.72 GiB GPU).": "262144",
        "--max-model-len auto reduced max_model_len from 262144 to 190000 (27.1 GiB GPU left for the KV cache after "
        "CUDA graph capture and warmup).": "190000",
        "--max-model-len auto reduced max_model_len from 262144 to 4000 (0.5 GiB GPU available for the KV cache). "
        "Requests longer than 4000 tokens will be rejected. Increase `gpu_memory_utilization` or set --max-model-len "
        "explicitly.": "4000",
        "Auto-fit max_model_len: attention-free model, using derived max_model_len=262144": "262144",
    }
    read = {
        line: read_boot_log(_log(head, _CORE.format(5, "kv_cache_planning.py:1479", line)), "vllm", "m").logged[
            "max_model_len"
        ]
        for line in fits
    }
    assert read == fits


def test_the_start_of_weight_loading_is_read_from_the_v2_runners_line() -> None:
    # vLLM 0.34 has only the V2 model runner, whose load_model prints 'Loading model from scratch...' (vllm/v1/worker/
    # gpu/model_runner.py, 0.31.0 - 0.34.0 sdists); V1's 'Starting to load model %s...' went with gpu_model_runner.py.
    # The real 0.11.0 boot of the corpus prints only the former too (its line 5), and read no 'weights_loading' event
    line = "(EngineCore pid=10) INFO 12-01 10:00:03 [model_runner.py:412] Loading model from scratch..."
    assert [e.name for e in read_boot_log(line, "vllm", "m").events] == ["weights_loading"]
    name = "gpu2-qwen3-next-80b-a3b-thinking-fp8-mtp2-tp2-len131072-v0110-html"
    text = (Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / f"{name}.log").read_text(encoding="utf-8")
    assert "weights_loading" in [e.name for e in read_boot_log(text, "vllm", "m").events]


def test_a_refusal_at_the_extensible_kv_caches_full_memory_does_not_say_raise_the_utilization() -> None:
    # vllm/v1/core/kv_cache_planning.py _check_enough_kv_cache_memory of the 0.34.0 sdist puts
    # _more_kv_cache_memory_hint into both refusals: with the extensible KV cache at utilization 1.0 (its default,
    # vllm/config/cache.py) the hint says 'The extensible KV cache already takes all device memory left after ...;
    # decrease `max_model_len` or `max_num_seqs`, or the model needs a device with more memory.', so 'raise
    # --gpu-memory-utilization' is no remedy; below 1.0 ('... within `gpu_memory_utilization`=0.9; increase it ...')
    # and without the extensible cache ('Try increasing `gpu_memory_utilization` ...') it is
    full = (
        "The extensible KV cache already takes all device memory left after the model, its activations, CUDA graphs "
        "and warmup; decrease `max_model_len` or `max_num_seqs`, or the model needs a device with more memory. CUDA "
        "graphs take less with fewer or smaller capture sizes in the compilation config."
    )
    below = (
        "The KV cache gets what is left after the model and its activations within `gpu_memory_utilization`=0.9; "
        "increase it (with the extensible KV cache it defaults to 1.0) or decrease `max_model_len` or `max_num_seqs`."
    )
    plain = (
        "Try increasing `gpu_memory_utilization` when initializing the engine (this flag also controls CPU memory "
        "reservation on the CPU backend, despite its name)."
    )
    docs = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    short = (
        "ValueError: To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (9.5 GiB). Based on the available memory, the "
        "estimated maximum model length is 77824. {} Decreasing `max_model_len` also reduces what is needed. " + docs
    )
    empty = "ValueError: No available memory for the cache blocks. {} " + docs

    def cause(message: str, hint: str) -> str:
        line = _CORE.format(20, "core.py:1346", message.format(hint)).replace(" INFO ", " ERROR ")
        cause = read_boot_log(line, "vllm", "m").failure_cause
        assert cause is not None
        return cause

    for message in (short, empty):
        assert "raise --gpu-memory-utilization" not in cause(message, full)
        assert "--max-num-seqs" in cause(message, full)
        assert "raise --gpu-memory-utilization" in cause(message, below)
        assert "raise --gpu-memory-utilization" in cause(message, plain)
