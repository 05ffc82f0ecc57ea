"""vLLM's own checks of the scheduler sizes, and the sizes it runs with when one of them is not given.

vLLM refuses at start-up (vllm/config/scheduler.py SchedulerConfig: `_verify_args` in vllm/config.py of the 0.6.6 -
0.10.0 sdists, `verify_max_model_len` from 0.19.0; the same two checks in every release read: 0.6.6, 0.7.3, 0.8.5,
0.9.0 - 0.9.2, 0.10.0 - 0.10.2, 0.11.0, 0.19.0 and 0.34.0):
  - max_num_batched_tokens < max_num_seqs: "max_num_batched_tokens (B) must be greater than or equal to
    max_num_seqs (S)";
  - max_num_batched_tokens < max_model_len without chunked prefill: "... is smaller than max_model_len (L). This
    effectively limits the maximum sequence length ...". The V1 engine turns chunked prefill on for every
    generative model (vllm/engine/arg_utils.py: "V1 always uses chunked prefills", 0.8.5 - 0.11.0;
    ModelConfig.is_chunked_prefill_supported from 0.19.0); the V0 engine only above 32K tokens
    (planner.gpu_plan._defaults).
Both compare the values vLLM holds after its defaults (vllm/engine/arg_utils.py): a max_num_seqs not given is the
engine's default, and from `default_seqs_capped_from` on (engines.json; vLLM 0.10.1, the V1 engine only)
min(that default, max_num_batched_tokens) - so `--max-num-batched-tokens 1` alone starts there with one sequence,
and is refused before; a max_num_batched_tokens not given is the engine's default, and from
`default_batch_capped_from` on (0.11.1, V1) min(that default, max_num_seqs x max_model_len).
"""

from __future__ import annotations

from onechip.errors import ConfigError

_WHERE = (
    "SchedulerConfig in vllm/config.py to 0.10.0, vllm/config/scheduler.py from 0.10.1; every release read, 0.6.6 - "
    "0.34.0"
)
_RULE = (
    f"vLLM refuses max_num_batched_tokens < max_num_seqs ('must be greater than or equal to max_num_seqs', {_WHERE})"
)
_LEN_RULE = f"vLLM then refuses max_num_batched_tokens < max_model_len ('is smaller than max_model_len', {_WHERE})"


def scheduler_sizes(
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    *,
    defaults: tuple[int | None, int],
    seqs_capped: bool,
    batch_capped: bool = False,
    max_model_len: int,
    chunked_prefill: bool,
    engine: str,
) -> tuple[int | None, int]:
    """(max_num_seqs, max_num_batched_tokens) vLLM runs with: the given ones, else `defaults` (the engine's
    (max_num_seqs, max_num_batched_tokens) for this card and version; a max_num_seqs default of None: not read,
    the first check is then made on given values only), the default max_num_seqs capped by the batched tokens
    where `seqs_capped`, the default max_num_batched_tokens capped at max_num_seqs x max_model_len where
    `batch_capped`. `engine`: the engine and version the defaults are of, as the message names them.
    Raises ConfigError (one line, naming the flags) for what vLLM refuses at start-up (module docstring)."""
    default_seqs, default_batch = defaults
    batch = max_num_batched_tokens if max_num_batched_tokens is not None else default_batch
    seqs = max_num_seqs if max_num_seqs is not None else default_seqs
    if max_num_batched_tokens is None and seqs is not None and batch_capped:
        batch = min(batch, seqs * max_model_len)
    if max_num_seqs is None and seqs is not None and seqs_capped:
        seqs = min(seqs, batch)
    # vLLM's order: the model-length check comes first in _verify_args / verify_max_model_len (0.6.6 - 0.34.0),
    # so a batch short of both is told the one whose fix starts it
    if not chunked_prefill and batch < max_model_len:
        raise ConfigError(
            f"--max-num-batched-tokens {batch} is less than --max-model-len {max_model_len} and {engine} runs this "
            f"deployment without chunked prefill: {_LEN_RULE}"
        )
    if seqs is not None and batch < seqs:
        if max_num_batched_tokens is None:
            what = f"--max-num-seqs {seqs} is more than the {batch} tokens {engine} batches by default here"
            fix = f"give --max-num-batched-tokens {seqs} or more, or fewer --max-num-seqs"
        elif max_num_seqs is None:
            what = (
                f"--max-num-batched-tokens {batch} is less than the {seqs} sequences {engine} schedules by default "
                "here (its default --max-num-seqs does not follow --max-num-batched-tokens before vLLM 0.10.1)"
            )
            fix = f"give --max-num-seqs {batch} or fewer, or --max-num-batched-tokens {seqs} or more"
        else:
            what = f"--max-num-batched-tokens {batch} is less than --max-num-seqs {seqs}"
            fix = "raise one or lower the other"
        raise ConfigError(f"{what}: {_RULE}; {fix}")
    return seqs, batch
