"""The non-KV memory per rank of every tensor-parallel (TP >= 2) boot in the corpus, logged against planned (issue 27).

For each TP >= 2 fixture that planner_accuracy plans with the log's weights (budget_row): the card, the engine, what
the log says about the links between the ranks (its NCCL/RCCL version line, vLLM's 'Custom allreduce is disabled ...'
and 'P2P' lines), and per rank, in GiB: the plan's requested memory, weights, non-torch term, activation peak and
CUDA-graph term; the non-KV memory the plan holds (requested - planned pool) and the log's (requested - its
'Available KV cache memory'); and what the log leaves for non-torch memory once the weights, graphs and the plan's
activation peak are taken out (the term the planner's TP >= 2 rule sizes). A row whose log prints no pool is listed
with its tokens. The requested memory is the catalog's visible memory x utilization (most logs print no total).

Run: PYTHONPATH=src python benchmarks/tp_non_torch.py
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

from planner_accuracy import ROOT, budget_row, chip_of

GIB = 1024**3
# the lines a boot log prints about the links between its ranks (vllm 0.19.0 sdist: pynccl.py 'vLLM is using
# nccl==%s'; custom_all_reduce.py 'Custom allreduce is disabled because ...'; NCCL_DEBUG's 'via P2P/...' lines)
LINK_LINES = re.compile(
    r"using nccl==[\d.]+|Custom allreduce is disabled[^.\n]*|P2P is not supported|via (?:P2P|SHM)\S*"
)


def tensor_parallel_size(entry: dict) -> int:
    """The fixture's TP size as its engine arguments state it (1 where they do not)."""
    args = entry.get("engine_args") or {}
    return int(args.get("tensor_parallel_size") or 1) if isinstance(args, dict) else 1


def link_lines(name: str) -> str:
    """The distinct link lines of the fixture's log, ';'-joined ('' where it prints none)."""
    log = ROOT / f"{name}.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return "; ".join(dict.fromkeys(m.group(0) for m in LINK_LINES.finditer(text)))


def main() -> int:
    corpus = json.loads((ROOT / "corpus.json").read_text(encoding="utf-8"))
    print(
        f"{'fixture':64} {'tp':>2} {'card':22} {'version':9} {'req':>6} {'weights':>7} {'nt':>5} {'act':>5} "
        f"{'graphs':>6} {'nonKV plan':>10} {'nonKV log':>9} {'diff':>6} {'nt left':>7}  links"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for entry in corpus:
            tp = tensor_parallel_size(entry)
            if tp < 2:
                continue
            row = budget_row(entry, Path(tmp))
            head = f"{entry['name'][:64]:64} {tp:>2} {str(chip_of(entry))[:22]:22} {entry.get('vllm_version') or '-':9}"
            plan = row.get("plan")
            if plan is None or plan.memory_budget is None:
                print(f"{head} not planned: {str(row.get('skip', ''))[:60]}")
                continue
            b = plan.memory_budget
            req, weights, graphs = b.requested_bytes / GIB, b.weights_bytes / GIB, b.cuda_graph_bytes / GIB
            act, planned = b.activation_peak_bytes / GIB, (b.requested_bytes - b.kv_cache_bytes) / GIB
            terms = f"{req:6.2f} {weights:7.2f} {b.non_torch_bytes / GIB:5.2f} {act:5.2f} {graphs:6.2f} {planned:10.2f}"
            pool = entry["logged"].get("available_kv_cache_gib")
            if pool is None:
                tokens = f"no logged pool: {row.get('predicted')} tokens planned, {row.get('logged')} logged"
                print(f"{head} {terms} {tokens}  {link_lines(entry['name'])}")
                continue
            logged = req - float(pool)
            left = logged - weights - graphs - act
            print(f"{head} {terms} {logged:9.2f} {planned - logged:+6.2f} {left:7.2f}  {link_lines(entry['name'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
