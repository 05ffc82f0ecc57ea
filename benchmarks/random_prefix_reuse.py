"""How many leading tokens prompt k of one `vllm bench serve --dataset-name random --seed S` run shares with prompt k of
another run at another input length: what the server's prefix cache can reuse across cells (sim.protocol.replay).

    python benchmarks/random_prefix_reuse.py --gguf FILE.gguf [--cells 16000x64,8192x64,4096x64,8192x32] [--prompts 8]

Each cell is built as vllm 0.26.0's RandomDataset builds it (benchmarks/datasets/datasets.py RandomDataset.sample,
generate_token_sequence, gen_prompt_decode_to_target_len; datasets/utils.py get_sampling_params), range ratio 0, no
prefix: input length minus the special tokens the tokenizer adds, the lengths drawn (no draws at one value), then
num_prompts = 3 x clients offsets from default_rng(seed); prompt i is the allowed ids (offset_i + i + arange(n)) % len,
decoded, re-encoded and truncated or padded with ids drawn from the same rng until it is n tokens, sent as text. The
server tokenizes that text; each later cell's prompt k is compared with the earlier cell's prompt k, printing the
common prefix and the tokens vLLM V1 would hit there (whole blocks of `--block`, within the earlier prompt's filled
blocks and at most the later prompt minus one token: kv_cache_manager.py max_cache_hit_length). replay assumes the
shorter prompt is a prefix of the longer; a re-encode that does not round-trip would cut that at the first difference.
The tokenizer is the one tokenize_rate.py loads (Gemma 3's from a GGUF stands in for Gemma 4's: same vocabulary size
and algorithm, its pieces not compared).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tokenize_rate import DEFAULT_TOKENIZER, RETRIES, SEED, load  # noqa: E402


def cell_prompts(tokenizer, allowed: np.ndarray, input_len: int, num_prompts: int, first: int) -> list[list[int]]:  # type: ignore[no-untyped-def]
    """The server's tokens of prompts 0..first-1 of one RandomDataset cell (seed SEED)."""
    rng = np.random.default_rng(SEED)
    special = len(tokenizer.encode("", add_special_tokens=True).ids)
    n = input_len - special
    rng.integers(n, n + 1, size=num_prompts)  # input lengths: one value, no draws
    rng.integers(128, 129, size=num_prompts)  # output lengths, the same
    offsets = rng.integers(0, tokenizer.get_vocab_size(), size=num_prompts)
    out = []
    for i in range(first):
        ids = allowed[(int(offsets[i]) + i + np.arange(n)) % len(allowed)].tolist()
        for left in range(RETRIES, -1, -1):
            text = tokenizer.decode(ids, skip_special_tokens=False)
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            if left == 0 or len(ids) == n:
                break
            if len(ids) < n:
                ids += rng.integers(0, tokenizer.get_vocab_size(), size=n - len(ids)).tolist()
            else:
                ids = ids[:n]
        out.append(tokenizer.encode(text, add_special_tokens=True).ids)
    return out


def common(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER, help="a tokenizer.json")
    source.add_argument("--gguf", type=Path, help="a GGUF file whose metadata holds the tokenizer")
    parser.add_argument("--cells", default="16000x64,8192x64,4096x64,8192x32", help="CONTEXTxCLIENTS in run order")
    parser.add_argument("--prompts", type=int, default=8, help="prompts compared a cell")
    parser.add_argument("--block", type=int, default=64, help="KV block size, tokens (v6e-1 boot log: 64)")
    args = parser.parse_args()
    path = args.gguf or args.tokenizer
    if not path.is_file():
        parser.exit(2, f"error: no tokenizer file at {path}\n")
    tokenizer = load(None if args.gguf else args.tokenizer, args.gguf)
    special = {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special}
    allowed = np.array(sorted(set(range(tokenizer.get_vocab_size())) - special))
    cells = [tuple(int(v) for v in c.split("x")) for c in args.cells.split(",")]
    prompts = {c: cell_prompts(tokenizer, allowed, c[0], 3 * c[1], args.prompts) for c in cells}
    for earlier, later in zip(cells, cells[1:], strict=False):
        shared, hits = [], []
        for a, b in zip(prompts[later], prompts[earlier], strict=True):
            shared.append(common(a, b))
            hits.append(min(shared[-1], len(b) // args.block * args.block, len(a) - 1) // args.block * args.block)
        print(
            f"{later[0]}x{later[1]} after {earlier[0]}x{earlier[1]}: prompts {sorted({len(p) for p in prompts[later]})}"
            f" tokens, common prefix {min(shared)} - {max(shared)}, hit {min(hits)} - {max(hits)} tokens"
            f" (median {statistics.median(hits):.0f})"
        )


if __name__ == "__main__":
    main()
