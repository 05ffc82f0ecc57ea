"""onechip, llm-d-planner and hf-mem plan the same logged vLLM GPU boots, offline, side by side (issue 27).

The corpus is tests/fixtures/bootlogs/corpus.json, read through benchmarks/planner_accuracy.py (its fixtures,
chips, engine versions, deployments and weights: the WITH-THE-LOG'S-WEIGHTS table there). Only the GPU logs are
compared: neither peer has a TPU or CPU target. Every planner gets the same inputs where it takes them:
  - the config: the corpus's config.json for the fixture, in a directory with a header-only model.safetensors of
    the weights planner_accuracy gives onechip (checkpoint bytes, or the log's loaded weights x GPUs; said per
    row; catalog models: their bundled tensor inventory);
  - the card: the visible memory onechip's catalog gives it (per GPU), and the utilization onechip plans with
    (the log's, else vLLM's default);
  - the deployment: max_model_len, tensor- and pipeline-parallel sizes, block size, KV-cache dtype, as each
    planner accepts them.
How each peer is fed (no network: the Hub calls are served from that directory):
  - llm-d-planner (PyPI `llm-d-planner`, measured with 0.3.3): planner.capacity_planner, as its `planner plan`
    CLI calls it. Config: `get_model_config_from_hf(directory)` (transformers AutoConfig of a local directory,
    offline; the `estimation` extra). Parameters: `get_safetensors_metadata_from_hf` replaced by the header's
    bytes as BF16 parameters (bytes / 2), so its dtype rules count the same bytes onechip is given. Card memory
    in GiB as a float (its CLI takes whole GB). Figures: allocatable_kv_cache_memory / GPUs (KV memory per
    GPU), total_kv_cache_blocks x block size (KV tokens), max_concurrent_requests >= 1 (fit), and a TP that
    find_possible_tp refuses is a refusal, as in its CLI. Inputs it lacks: engine version, served dtype,
    KV-cache dtype, runtime quantization, max_num_seqs, max_num_batched_tokens, enforce_eager.
  - hf-mem (PyPI `hf-mem`, measured with 0.5.6): hf_mem.run.arun(experimental=True) with its fetches of the
    file list, config.json and safetensors header served from the directory. It is a calculator, not a planner:
    weights bytes and the KV bytes of one max_model_len request; it takes no card, utilization, TP/PP, served
    dtype or engine version, and counts no activation, non-torch or CUDA-graph memory. Its figures are read as
    vLLM's budget with those terms at zero: KV memory per GPU = visible x utilization - weights / GPUs; tokens =
    that x GPUs / (its KV bytes per token); fits when weights + one request's KV fit in the GPUs' requested
    memory. Where it asks for --kv-cache-dtype (a quant_method it does not read), it gets the model dtype.
Figures scored, each against the log: KV memory per GPU ('Available KV cache memory'), KV tokens (the token
line), KV tokens given the log's own KV memory (each planner's token arithmetic alone), and the fit verdict.
A fixture whose budget rests on an input no planner is given (corpus.json budget_unscored: a co-tenant's memory on a
shared unified-memory box) is compared on the tokens given its logged pool only, and listed with that reason.
A fixture whose model has no config.json in the corpus, or that has no weights figure (no checkpoint bytes, no loaded
weights in the log), or whose log names no card (and prints no total memory), is not given to onechip: its cell says
'no config', 'no weights figure' or 'no card' (not 'refused': it was never planned), it is left out of onechip's
'planned' counts, and the report names it apart. A card named that the catalog lacks stays 'refused' (a gap).
In-sample rows are scored apart: for onechip the logs planner_accuracy.FITTED_ON names; for llm-d-planner its
own accuracy sweep (the H100 vLLM 0.19.0 logs from llm-d-incubation/llm-d-planner, which its
vllm_memory_constants.json was calibrated on). A planner that is not installed is said and skipped.
Each case where a peer is closer than onechip beyond the log's resolution is followed by why (corpus.json
`peer_closer`, peer -> the cause with the numbers that show it: often luck, two of the peer's errors cancelling or a
term it omits being small there; or onechip's own error, its known_error), or 'not found' where no one has read it.

Run: PYTHONPATH=src python benchmarks/planner_vs_peers.py [--peers-site /tmp/peers-venv/lib/python3.11/site-packages]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import math
import struct
import sys
import tempfile
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import planner_accuracy as corpus  # benchmarks/ is on sys.path when this file runs

from onechip.errors import OnechipError
from onechip.planner.rules import accelerator, engine_rules
from onechip.planner.source import catalog_entry, inventory
from onechip.schemas.common import GIB

PLANNERS = ("onechip", "llm-d-planner", "hf-mem")
FIGURES = ("kv_gib", "kv_tokens", "tokens_given_pool")
FIGURE_TITLES = {
    "kv_gib": "KV memory per GPU",
    "kv_tokens": "KV tokens",
    "tokens_given_pool": "KV tokens given the logged pool",
}


@dataclass
class Result:
    """One planner on one fixture: a plan's figures, or why it gave none."""

    kv_gib: float | None = None
    kv_tokens: int | None = None
    tokens_given_pool: int | None = None
    fits: bool | None = None
    refused: str | None = None  # the planner's own refusal (or 'not installed')
    notes: list[str] = field(default_factory=list)


@dataclass
class Case:
    """One GPU fixture: what the log says and the inputs every planner gets."""

    name: str
    outcome: str
    weights: str
    logged_kv_gib: float | None
    logged_tokens: int | None
    in_sample: dict[str, str]
    results: dict[str, Result] = field(default_factory=dict)
    # corpus.json budget_unscored: the boot's budget rests on an input no planner is given (a co-tenant's memory on a
    # shared unified-memory box), so only the token arithmetic given the logged pool is compared, as planner_accuracy
    budget_unscored: str | None = None
    # corpus.json peer_closer: peer -> why that peer is closer to this log than onechip (luck: two of its errors
    # cancel, or a term it omits is small here; or the cause in onechip not yet fixed), with the numbers that show it
    peer_closer: dict[str, str] = field(default_factory=dict)


def error(predicted: float | None, logged: float | None) -> float | None:
    """(predicted - logged) / logged; None when either is missing or the log says 0."""
    if predicted is None or not logged:
        return None
    return (predicted - logged) / logged


def summary(errors: list[float]) -> str:
    """'n, mean |e|, worst' of signed errors (worst by magnitude, sign kept)."""
    if not errors:
        return "-"
    worst = max(errors, key=abs)
    return f"{len(errors)}: {sum(abs(e) for e in errors) / len(errors):.1%} mean, worst {worst:+.1%}"


def closer(theirs: float, ours: float, logged_kv_gib: float | None) -> bool:
    """Their error is smaller than ours by more than the log can tell apart: it prints the KV memory to 0.01 GiB,
    so errors within 0.005 GiB / pool of each other are ties (0 when the log prints no pool)."""
    resolution = 0.005 / logged_kv_gib if logged_kv_gib else 0.0
    return abs(theirs) < abs(ours) - resolution


def verdict_right(result: Result, outcome: str) -> bool | None:
    if result.fits is None:
        return None
    return result.fits == (outcome == "started")


def case_verdict(case: Case, result: Result) -> bool | None:
    """verdict_right, or None where the budget is not comparable (Case.budget_unscored): the verdict rests on it."""
    return None if case.budget_unscored else verdict_right(result, case.outcome)


def planned(result: Result) -> bool:
    """Gave a verdict (a refusal quoting the engine's own error counts: planner_accuracy scores it)."""
    return result.fits is not None


NOT_GIVEN = (corpus.NO_CONFIG, corpus.NO_WEIGHTS, corpus.NO_CARD)


def not_given(result: Result) -> str | None:
    """What onechip was not given for the log, where it was not: the corpus holds no config.json of its model
    (planner_accuracy.NO_CONFIG) or no weights figure (NO_WEIGHTS; the entry's known_error may follow it), or the log
    names no card (NO_CARD), so it neither planned nor refused it; left out of its counts, as the peers' 'not fed' logs
    are not theirs. None otherwise. A card the catalog lacks is no such input: 'chip not in catalog' stays a refusal."""
    # the reason whole, before any '; <known_error>': a peer's 'no card memory or checkpoint ...' (NOT_FED) is not one
    said = (result.refused or "").split(";")[0]
    return said if said in NOT_GIVEN else None


def render_markdown(header: list[str], rows: list[list[str]]) -> str:
    """A pipe table, as the closing notes print them."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def header_tensors(directory: Path) -> dict[str, Any]:
    """The JSON header of directory/model.safetensors (the header-only files planner_accuracy writes)."""
    raw = (directory / "model.safetensors").read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    return dict(json.loads(raw[8 : 8 + size]))


def header_bytes(tensors: dict[str, Any]) -> int:
    return sum(t["data_offsets"][1] - t["data_offsets"][0] for k, t in tensors.items() if k != "__metadata__")


def write_catalog_checkpoint(directory: Path, key: str) -> None:
    """config.json and a header-only safetensors file of a catalog model's bundled tensor inventory."""
    found = catalog_entry(key)
    assert found is not None
    header: dict[str, Any] = {}
    offset = 0
    for tensor in inventory(*found):
        size = tensor.nbytes()
        header[tensor.name] = {
            "dtype": tensor.dtype,
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(found[1].config), encoding="utf-8")
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)


@dataclass(frozen=True)
class Inputs:
    """The deployment as the peers take it."""

    directory: Path
    visible_gib: float
    utilization: float
    max_model_len: int | None
    tp: int
    pp: int
    block_size: int
    kv_cache_dtype: str  # 'auto' or an fp8 spelling
    logged_kv_gib: float | None

    @property
    def gpus(self) -> int:
        return self.tp * self.pp


# ---------------------------------------------------------------- onechip


def logged_pool_gib(entry: dict[str, Any]) -> float | None:
    """The pool per GPU the log gives (planner_accuracy.given_pool_gib) when positive; None with pipeline
    parallelism where the corpus does not state the smallest rank's pool, as only stage 0 prints its pool and the
    stage that binds the token count may have less (h100x2-llama31-8b-pp2-v0190: 66.54 GiB printed by PP0, 65.63 GiB
    on PP1)."""
    pp = entry["engine_args"].get("pipeline_parallel_size") or 1
    if pp > 1 and "smallest_rank_kv_cache_gib" not in entry["logged"]:
        return None
    logged = corpus.given_pool_gib(entry)
    return float(logged) if logged and logged > 0 else None  # <= 0: refused for want of memory, the verdict scores it


def onechip_case(entry: dict[str, Any], workdir: Path) -> tuple[Result, Inputs | None, str]:
    """planner_accuracy's prediction (with the log's weights), plus the plan again given the logged KV memory."""
    row = corpus.predict(entry, workdir)
    engine, _ = corpus.engine_of(entry)
    chip = corpus.chip_of(entry)
    weights = row.get("weights", "-")
    result = Result()
    if "skip" in row:
        result.refused = row["skip"]
    elif "plan" not in row:  # refused as the engine refused it
        result.fits = False
        result.notes.append(row.get("note", "").strip())
    else:
        plan = row["plan"]
        result.fits = plan.fits
        result.kv_tokens = plan.kv_tokens_logged
        if plan.memory_budget is not None:
            result.kv_gib = plan.memory_budget.kv_cache_bytes / GIB
        logged_kv = logged_pool_gib(entry)
        if logged_kv:
            try:
                pool = {"kv_cache_memory_bytes": int(logged_kv * GIB)}
                given = corpus.plan_fields(row["model"], row["fields"] | pool)
                result.tokens_given_pool = given.kv_tokens_logged
            except OnechipError as exc:
                result.notes.append(f"given the logged pool: {exc}")
    return result, peer_inputs(entry, row, engine, chip, workdir), weights


def peer_inputs(
    entry: dict[str, Any], row: dict[str, Any], engine: str, chip: str | None, workdir: Path
) -> Inputs | None:
    """The inputs onechip planned with, as the peers take them; None when there is no card or checkpoint."""
    if chip is None or engine != "vllm-gpu" or entry.get("config_file") is None:
        return None
    args = entry["engine_args"]
    model = row.get("model")
    config = json.loads((corpus.ROOT / entry["config_file"]).read_text(encoding="utf-8"))
    gpus = (args.get("tensor_parallel_size") or 1) * (args.get("pipeline_parallel_size") or 1)
    catalog_model = model is not None and not Path(model).is_dir()
    # a boot refused before it printed any KV figure was refused before memory counted (argument validation):
    # its verdict does not rest on the weights, so the placeholder planner_accuracy writes serves. The pool as
    # logged, any PP size and sign: a pipeline-parallel boot refused at the KV check printed one (logged_pool_gib
    # leaves PP out for the token figures, not for this)
    pool = entry["logged"].get("available_kv_cache_gib")
    before_memory = entry["outcome"] == "refused" and not (corpus.logged_tokens(entry) or pool is not None)
    if not catalog_model and not before_memory and corpus.weights_of(entry, gpus, config)[0] is None:
        return None  # planner_accuracy has no weights figure (it plans a placeholder): nothing to give the peers
    plan = row.get("plan")
    if plan is not None:
        visible, util = (plan.memory_bytes or 0) // plan.devices, plan.utilization  # memory_bytes: all devices
    else:
        visible = accelerator(chip).memory_visible_bytes or accelerator(chip).memory_bytes
        util = args.get("gpu_memory_utilization") or engine_rules(engine).default_utilization
    directory = workdir / "log" / entry["name"]
    if catalog_model:  # its bundled inventory
        directory = workdir / "catalog" / entry["name"]
        write_catalog_checkpoint(directory, model)
    if not (directory / "model.safetensors").exists() or not visible or not util:
        return None
    kv_dtype = args.get("kv_cache_dtype") or "auto"
    return Inputs(
        directory=directory,
        visible_gib=visible / GIB,
        utilization=float(util),
        max_model_len=args.get("max_model_len"),
        tp=args.get("tensor_parallel_size") or 1,
        pp=args.get("pipeline_parallel_size") or 1,
        block_size=args.get("block_size") or 16,
        kv_cache_dtype=kv_dtype,
        logged_kv_gib=logged_pool_gib(entry),
    )


# ---------------------------------------------------------------- llm-d-planner


def load_llmd() -> types.ModuleType | None:
    try:
        import planner.capacity_planner as cp  # type: ignore[import-not-found]
    except ImportError:
        return None
    return cp


def llmd_case(cp: types.ModuleType, inputs: Inputs) -> Result:
    """llm-d-planner's figures for the deployment (see the module docstring for how it is fed)."""
    tensors = header_tensors(inputs.directory)
    metadata = types.SimpleNamespace(parameter_count={"BF16": header_bytes(tensors) // 2})
    cp.get_safetensors_metadata_from_hf = lambda model_name, hf_token=None: metadata
    name = str(inputs.directory)
    try:
        config = cp.get_model_config_from_hf(name)
        if inputs.tp not in cp.find_possible_tp(config):
            return Result(fits=False, refused=f"Invalid tp value {inputs.tp}", notes=["refuses the TP"])
        max_len = inputs.max_model_len or cp.max_context_len(config)
        card = (name, config)
        memory = (inputs.visible_gib, inputs.utilization)
        alloc = cp.allocatable_kv_cache_memory(*card, *memory, inputs.tp, inputs.pp, 1, max_model_len=max_len)
        blocks = cp.total_kv_cache_blocks(*card, max_len, *memory, 1, inputs.block_size, inputs.tp, inputs.pp, 1)
        concurrent = cp.max_concurrent_requests(*card, max_len, *memory, 1, inputs.tp, inputs.pp, 1)
        result = Result(kv_gib=alloc / inputs.gpus, kv_tokens=blocks * inputs.block_size, fits=concurrent >= 1)
        if inputs.logged_kv_gib:
            own = cp.allocatable_kv_cache_memory
            cp.allocatable_kv_cache_memory = lambda *a, **k: inputs.logged_kv_gib * inputs.gpus
            try:
                given = cp.total_kv_cache_blocks(*card, max_len, *memory, 1, inputs.block_size, inputs.tp, inputs.pp, 1)
            finally:
                cp.allocatable_kv_cache_memory = own
            result.tokens_given_pool = given * inputs.block_size
        return result
    except Exception as exc:  # a peer's failure is a row, not the end of the run
        return Result(refused=f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}")


# ---------------------------------------------------------------- hf-mem


def load_hfmem() -> types.ModuleType | None:
    try:
        return importlib.import_module("hf_mem.run")  # hf_mem's package exports a `run` function of that name
    except ImportError:
        return None


def serve_directory(hf_run: types.ModuleType, directory: Path) -> None:
    """Serve hf-mem's Hub fetches (file list, config.json, safetensors header) from `directory`."""

    async def get_json_file(client: Any, url: str, headers: Any = None) -> Any:
        if "/tree/" in url:
            return [{"path": p.name, "type": "file"} for p in directory.iterdir()]
        if url.endswith("/config.json"):
            return json.loads((directory / "config.json").read_text(encoding="utf-8"))
        raise RuntimeError(f"offline: hf-mem asked for {url}")

    async def fetch_safetensors_metadata(client: Any, url: str, headers: Any = None) -> Any:
        return header_tensors(directory)

    hf_run.get_json_file = get_json_file
    hf_run.fetch_safetensors_metadata = fetch_safetensors_metadata


def hfmem_case(hf_run: types.ModuleType, inputs: Inputs) -> Result:
    """hf-mem's weights and KV bytes read as vLLM's budget with no overhead terms (module docstring)."""
    serve_directory(hf_run, inputs.directory)
    kv_dtype = "fp8" if inputs.kv_cache_dtype.startswith("fp8") else "auto"
    notes: list[str] = []

    def run(dtype: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call = hf_run.arun(
                model_id=str(inputs.directory),
                experimental=True,
                max_model_len=inputs.max_model_len,
                kv_cache_dtype=dtype,
            )
            return asyncio.run(call)

    try:
        try:
            out = run(kv_dtype)
        except RuntimeError as exc:
            if "--kv-cache-dtype" not in str(exc) or kv_dtype != "auto":
                raise
            out, _ = run("bfloat16"), notes.append("--kv-cache-dtype bfloat16 given (it asked)")
    except Exception as exc:
        return Result(refused=f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
    if out.kv_cache is None or out.kv_cache_metadata is None:
        config = json.loads((inputs.directory / "config.json").read_text(encoding="utf-8"))
        missing = "'architectures'" if "architectures" not in config else "a field it needs"
        return Result(refused=f"no KV cache estimate: config.json has no {missing} (hf-mem needs it)")
    per_token = out.kv_cache / out.kv_cache_metadata.max_model_len
    requested = inputs.visible_gib * GIB * inputs.utilization
    pool = requested - out.memory / inputs.gpus
    result = Result(
        kv_gib=pool / GIB,
        kv_tokens=max(0, math.floor(pool * inputs.gpus / per_token)),
        fits=out.memory + out.kv_cache <= requested * inputs.gpus,
        notes=notes,
    )
    if inputs.logged_kv_gib:
        result.tokens_given_pool = math.floor(inputs.logged_kv_gib * GIB * inputs.gpus / per_token)
    return result


# ---------------------------------------------------------------- the comparison


def in_sample(entry: dict[str, Any]) -> dict[str, str]:
    """Which planners had a constant fitted on this log."""
    marks = {}
    if entry["name"] in corpus.FITTED_ON:
        marks["onechip"] = corpus.FITTED_ON[entry["name"]]
    if "llm-d-incubation/llm-d-planner" in entry.get("source", ""):
        marks["llm-d-planner"] = "its own accuracy sweep"
    return marks


def run_corpus(peers: dict[str, Callable[[Inputs], Result] | None], workdir: Path) -> list[Case]:
    entries = json.loads((corpus.ROOT / "corpus.json").read_text(encoding="utf-8"))
    cases = []
    for entry in entries:
        if corpus.engine_of(entry)[0] != "vllm-gpu":
            continue
        if entry.get("unstated_args"):  # no planner is given the run's real inputs: compared for none of them
            print(f"not compared: {entry['name']} (the log does not state {', '.join(entry['unstated_args'])})")
            continue
        ours, inputs, weights = onechip_case(entry, workdir)
        case = Case(
            name=entry["name"],
            outcome=entry["outcome"],
            weights=weights,
            logged_kv_gib=logged_pool_gib(entry),
            logged_tokens=corpus.logged_tokens(entry),
            in_sample=in_sample(entry),
            budget_unscored=entry.get("budget_unscored"),
            peer_closer=entry.get("peer_closer", {}),
        )
        case.results["onechip"] = ours
        for name, plan in peers.items():
            if plan is None:
                case.results[name] = Result(refused=NOT_FED[0])
            elif inputs is None:
                case.results[name] = Result(refused=NOT_FED[1])
            else:
                case.results[name] = plan(inputs)
        cases.append(case)
    return cases


def figure_errors(case: Case, result: Result) -> dict[str, float | None]:
    """Each figure's error against the log; the whole-budget ones None where Case.budget_unscored says why."""
    whole = not case.budget_unscored
    return {
        "kv_gib": error(result.kv_gib, case.logged_kv_gib) if whole else None,
        "kv_tokens": error(result.kv_tokens, case.logged_tokens) if whole else None,
        "tokens_given_pool": error(result.tokens_given_pool, case.logged_tokens),
    }


NOT_FED = ("not installed", "no card memory or checkpoint to give it")


def cell(case: Case, result: Result) -> str:
    if not planned(result):
        if reason := not_given(result):
            return reason
        return "refused" if result.refused not in NOT_FED else "not fed"
    err = figure_errors(case, result)
    parts = [f"{err[f]:+.1%}" if err[f] is not None else "-" for f in FIGURES]
    return " / ".join(parts) + (" WRONG" if case_verdict(case, result) is False else "")


def print_report(cases: list[Case], installed: dict[str, bool]) -> None:
    print("Per log: error of KV memory per GPU / KV tokens / tokens given the logged pool; WRONG = fit verdict")
    rows = []
    for case in cases:
        marks = ", ".join(f"{k}: {v}" for k, v in case.in_sample.items())
        rows.append(
            [case.name, case.outcome]
            + [cell(case, case.results[p]) for p in PLANNERS]
            + [
                case.weights
                + (f"; in sample for {marks}" if marks else "")
                + ("; whole budget not compared (below)" if case.budget_unscored else "")
            ]
        )
    print(render_markdown(["log", "outcome", *PLANNERS, "weights; in sample"], rows))
    for scope, keep in (
        ("held out for that planner", lambda c, p: p not in c.in_sample),
        ("in sample for that planner (constants fitted on these logs)", lambda c, p: p in c.in_sample),
    ):
        print(f"\nSummary, {scope}: n, mean |error|, worst")
        table = []
        for planner_name in PLANNERS:
            if not installed[planner_name]:
                table.append([planner_name, "not installed"] + ["-"] * (len(FIGURES) + 1))
                continue
            kept = [c for c in cases if keep(c, planner_name)]
            picked = [c for c in kept if not not_given(c.results[planner_name])]
            left = len(kept) - len(picked)
            unconfigured = f" ({left} with no config, weights or card left out)" if left else ""
            results = [(c, c.results[planner_name]) for c in picked]
            covered = sum(planned(r) for _, r in results)
            errs = {f: [e for c, r in results if (e := figure_errors(c, r)[f]) is not None] for f in FIGURES}
            verdicts = [v for c, r in results if (v := case_verdict(c, r)) is not None]
            table.append(
                [planner_name, f"{covered} of {len(picked)}{unconfigured}"]
                + [summary(errs[f]) for f in FIGURES]
                + [f"{sum(verdicts)} of {len(verdicts)}"]
            )
        print(render_markdown(["planner", "planned", *(FIGURE_TITLES[f] for f in FIGURES), "fit right"], table))
    covered = ", ".join(f"{p} {sum(planned(c.results[p]) for c in cases)}" for p in PLANNERS if installed[p])
    print(f"\nPlanned, of all {len(cases)} GPU logs: {covered}")
    for reason in NOT_GIVEN:
        names = [c.name for c in cases if not_given(c.results["onechip"]) == reason]
        where = "the log" if reason == corpus.NO_CARD else "the corpus"
        print(f"\nNot given to onechip, '{reason}' in {where} ({len(names)}): {', '.join(names) or 'none'}")
    print("\nWhy each planner gave no plan ('not fed': no weights figure or card to give it, or not installed):")
    for planner_name in PLANNERS:
        for case in cases:
            result = case.results[planner_name]
            if not planned(result) and result.refused not in NOT_FED and not not_given(result):
                print(f"  {planner_name}, {case.name}: {(result.refused or '')[:140]}")
    print_gaps(cases, installed)


def print_gaps(cases: list[Case], installed: dict[str, bool]) -> None:
    """Every case a peer plans that onechip does not, or plans closer to the log (any figure, or the verdict)."""
    gaps = []
    for case in cases:
        ours = case.results["onechip"]
        ours_err = figure_errors(case, ours)
        for peer in PLANNERS[1:]:
            theirs = case.results[peer]
            if not installed[peer] or not planned(theirs):
                continue
            tag = f" [in sample for {peer}: {case.in_sample[peer]}]" if peer in case.in_sample else ""
            if not planned(ours):
                gaps.append(f"{case.name}: {peer} plans it, onechip refuses ({(ours.refused or '')[:100]}){tag}")
                continue
            found = []
            if case_verdict(case, theirs) and case_verdict(case, ours) is False:
                found.append(f"{case.name}: {peer}'s fit verdict is right, onechip's is not{tag}")
            for f, e in figure_errors(case, theirs).items():
                if e is not None and ours_err[f] is not None and closer(e, ours_err[f], case.logged_kv_gib):
                    found.append(f"{case.name}: {FIGURE_TITLES[f]}, {peer} {e:+.2%} vs onechip {ours_err[f]:+.2%}{tag}")
            if found:
                why = case.peer_closer.get(peer, "not found (corpus.json peer_closer)")
                gaps += found + [f"  why {peer} is closer: {why}"]
    count = sum(not line.startswith("  why ") for line in gaps)
    print(f"\nCases where a peer plans and onechip does not, or is closer beyond the log's resolution ({count}):")
    for line in gaps or ["none"]:
        print(f"  {line}")
    unknowable = [f"  {c.name}: {c.budget_unscored}" for c in cases if c.budget_unscored]
    if unknowable:
        print("Whole budget and verdict not compared (an input no planner is given; given the pool still):")
        print("\n".join(unknowable))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--peers-site",
        type=Path,
        help="site-packages of an environment with llm-d-planner and hf-mem, appended to sys.path",
    )
    args = parser.parse_args(argv)
    if args.peers_site is not None:
        sys.path.append(str(args.peers_site))
    cp, hf_run = load_llmd(), load_hfmem()
    installed = {"onechip": True, "llm-d-planner": cp is not None, "hf-mem": hf_run is not None}
    for name, ok in installed.items():
        if not ok:
            print(f"{name} is not installed here: skipped (pip install it, or pass --peers-site)")
    peers: dict[str, Callable[[Inputs], Result] | None] = {
        "llm-d-planner": (lambda inputs: llmd_case(cp, inputs)) if cp is not None else None,
        "hf-mem": (lambda inputs: hfmem_case(hf_run, inputs)) if hf_run is not None else None,
    }
    with tempfile.TemporaryDirectory() as tmp:
        try:
            cases = run_corpus(peers, Path(tmp))
        except OnechipError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    print_report(cases, installed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
