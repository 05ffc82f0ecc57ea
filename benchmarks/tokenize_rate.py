"""How long the API server's tokenizer takes on the prompts `vllm bench serve --dataset-name random` sends.

    python benchmarks/tokenize_rate.py [--tokenizer TOKENIZER_JSON] [--lengths 128,1024,8192,32768]

vllm bench serve's random dataset decodes random token ids to text and sends that text (vllm 0.34.0 sdist,
benchmarks/datasets/datasets.py RandomDataset, benchmarks/lib/endpoint_request_func.py: payload 'prompt'); the server
tokenizes it again on its renderer thread pool, one worker by default (vllm/renderers/base.py,
config/model.py renderer_num_workers = 1), so each request's prompt is encoded before it reaches the scheduler and
requests queue for that one thread. This prints, per prompt length, the best of `--reps` encodes (ms and us a token)
with the tokenizer given, as `tokenizers` (the fast tokenizer vLLM loads) runs it on this machine.

Issue 22 (sim68b): the simulation's one-client TTFT on the v6e one-client sweep is low by 1.5 - 4.1 us a prompt token,
growing with length, where the saturated prefill rate is flat (sim_accuracy.py says where); a superlinear
tokenizer would give that shape. Measured 2026-12-07 on this machine (2 cores shared, load average 6-7) with
SmolLM2-135M's tokenizer (ByteLevel BPE; not Gemma's, which was not at hand), RAYON_NUM_THREADS=1, best of 5 (a
second run, best of 3, in brackets): 128 tokens 1.6 (1.4) us a token, 1,024 2.4, 2,048 6.5, 4,096 20.7 (8.3), 8,192
13.1, 16,384 27.7 (16.8), 32,768 34.5 (1,131 ms): noisy under the load, but the per-token cost grows with the prompt
in every run. Gemma's tokenizer on the grid's prompts, on the serving VM's CPU, is the
measurement a per-prompt-token term would need.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from tokenizers import Tokenizer

DEFAULT_TOKENIZER = Path.home() / ".cache/onechip/models/smollm2-135m-instruct/tokenizer.json"


def encode_s(tokenizer: Tokenizer, text: str, reps: int) -> float:
    """The best of `reps` encodes of `text`, in seconds."""
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        tokenizer.encode(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER, help="a tokenizer.json")
    parser.add_argument("--lengths", default="128,1024,2048,4096,8192,16384,32768", help="prompt lengths, tokens")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    if not args.tokenizer.is_file():
        parser.exit(2, f"error: no tokenizer file at {args.tokenizer}\n")
    tokenizer = Tokenizer.from_file(str(args.tokenizer))
    vocab = tokenizer.get_vocab_size()
    for n in (int(x) for x in args.lengths.split(",")):
        rng = random.Random(n)  # seeded: the same prompt each run
        text = tokenizer.decode([rng.randrange(vocab) for _ in range(n)])
        tokens = len(tokenizer.encode(text).ids)
        s = encode_s(tokenizer, text, args.reps)
        print(f"{n:>6} random ids -> {tokens:>6} tokens re-encoded: {s * 1e3:8.1f} ms, {s / n * 1e6:6.2f} us a token")


if __name__ == "__main__":
    main()
