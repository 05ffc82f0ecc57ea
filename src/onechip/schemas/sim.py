"""Predicting: the step-time terms of one engine, a calibration (terms fitted to measured cells) and the
marker a predicted run carries (`BenchRun.prediction`).

Every time is in seconds and says what it multiplies in its name (`per_seq_s`: seconds per sequence in a
step). Terms are either roofline priors (from the plan and the chip catalog) or fitted; `fitted` names
which.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from onechip.schemas.common import Measured, ResultModel, StoredResult


class StepTerms(ResultModel):
    """One engine step's time: fixed_s + per_seq_s x sequences + per_token_s x (padded) tokens
    + per_kv_token_s x KV tokens read + per_attn_pair_s x (query, key) pairs of prefill attention;
    plus the API server, one event loop for all streams: request_overhead_s per request before the scheduler
    sees it, per_stream_chunk_s per request in each round of output delivery before the client sees its tokens
    (tokens of several steps merge into one chunk while the server is busy), and per_output_token_s per token
    each step emitted (processed one step output at a time, before any merging); and per_admit_s host work per
    request a step admits; and tokenize_scale, the size of the renderer thread's per-prompt tokenization against a
    measured table (dimensionless, the one term that is no time).

    Each term is a time: finite, not below 0 (Measured). A stored calibration edited to a NaN or negative term
    was read, and every step's max(...) and comparisons dropped it: advise and simulate printed a 'calibrated'
    prediction that term did not enter (per_token_s NaN or -1 both predicted as 0)."""

    fixed_s: Measured = Field(description="Per step: fixed host cost (plus streamed weights when weights_s is 0), s.")
    weights_s: Measured = Field(
        default=0.0,
        description="Per step: streamed weights / bandwidth, the device floor that compute overlaps "
        "(the step's device time is max(weights_s, per_token_s x padded tokens)), s.",
    )
    per_seq_s: Measured = Field(default=0.0, description="Per sequence in the step (host: inputs, sampling), s.")
    per_token_s: Measured = Field(description="Per token computed in the step (after bucket padding), s.")
    per_kv_token_s: Measured = Field(description="Per KV-cache token read by the step's attention, s.")
    per_attn_pair_s: Measured = Field(default=0.0, description="Per (query, key) pair of attention compute, s.")
    request_overhead_s: Measured = Field(
        default=0.0, description="API server time per request (HTTP, chat template, tokenization), serial, s."
    )
    per_stream_chunk_s: Measured = Field(
        default=0.0,
        description="API server time per request per delivery round (detokenize, SSE chunk, streaming "
        "parsers), serial, s.",
    )
    per_output_token_s: Measured = Field(
        default=0.0,
        description="API server time per token a step emitted, before deltas merge (vLLM V1 AsyncLLM "
        "output_handler -> OutputProcessor.process_outputs: stats, detokenize, stop check, a RequestOutput "
        "for every request of every step), serial, s.",
    )
    per_admit_s: Measured = Field(
        default=0.0,
        description="Per request the step admits from the waiting queue (host: the engine core's work for a new "
        "request, paid inside the step that admits it, so a wave admitted together delays that step for all), s.",
    )
    tokenize_scale: Measured = Field(
        default=0.0,
        description="Dimensionless: the serving host's prompt tokenization time over the measured table's "
        "(sim.steptime.TOKENIZE_US_PER_TOKEN, one CPU thread of the machine it was measured on); the API server's "
        "renderer thread tokenizes each prompt, one at a time, in scale x that table's time. 0: no term.",
    )


class CalibrationKey(ResultModel):
    """What a calibration is valid for: the same model, chip, engine rules and engine version."""

    model: str = Field(description="Plan.model.")
    chip: str = Field(description="Plan.chip.")
    engine: str = Field(description="Plan.engine (rule set).")
    engine_version: str = Field(default="", description="Engine version the measurement ran on ('' = unknown).")

    def slug(self) -> str:
        """A file name for this key (model and chip are enough to read; the rest keeps keys apart)."""
        raw = f"{self.model}__{self.chip}__{self.engine}__{self.engine_version or 'any'}"
        return "".join(c if c.isalnum() or c in "-_." else "-" for c in raw)


class Calibration(StoredResult):
    """Step-time terms fitted to a few measured cells of one run, stored per CalibrationKey."""

    key: CalibrationKey
    step_model: int = Field(
        default=1,
        description="Version of the step-time model the terms belong to (sim.steptime.STEP_MODEL); a stored "
        "calibration of another version is not reused. 1 = before weights_s and output rounds.",
    )
    terms: StepTerms = Field(description="The fitted terms.")
    priors: StepTerms | None = Field(default=None, description="The roofline priors the fit started from.")
    fitted: list[str] = Field(
        default_factory=list,
        description="Terms the measurement pinned, judged jointly (sim.calibrate.identified); others: near the prior.",
    )
    unseparated: list[str] = Field(
        default_factory=list,
        description="Terms the cells measure only in combination (each alone would be pinned, jointly not): "
        "e.g. the fixed host cost and the weight read where every cell's one-client step is on one side of "
        "max(host, device). Their split is the prior's, not the data's.",
    )
    held: dict[str, str] = Field(
        default_factory=dict,
        description="Terms the fit did not set, held at 0, and why (per_admit_s without sim.calibrate.ADMIT; "
        "tokenize_scale without sim.calibrate.TOKENIZE, or for a model with no measured tokenizer table).",
    )
    pinning_judged: bool = Field(
        default=False,
        description="`fitted` and `unseparated` were judged jointly at the fit's solution (sim.calibrate.identified), "
        "so both empty means the cells pinned no term; False: stored before that judgement (or made by hand), "
        "both empty read as every term pinned (sim.calibrate.pinned_terms).",
    )
    cells: list[str] = Field(default_factory=list, description="Cells used, as 'context x clients'.")
    source_run: str = Field(default="", description="The run directory it was fitted on.")
    residuals_pct: dict[str, float] = Field(
        default_factory=dict,
        description="Per calibration figure ('<context>x<clients> <figure>', sim.figures.FIGURES), (model - measured) "
        "/ measured, %: how far the fit misses its own cells, which a calibrated range is never narrower than "
        "(sim.uncertainty.own_factors); {} (stored without them): no such floor.",
    )
    created_at: str = Field(default="", description="ISO-8601 UTC.")


class Prediction(ResultModel):
    """The marker of a predicted run: what it was predicted from, and how the ranges were made."""

    predicted: bool = Field(default=True, description="Always true: this run was simulated, not measured.")
    calibration: Calibration | None = Field(
        default=None, description="The calibration used; None = roofline priors only (optimistic bound)."
    )
    terms: StepTerms = Field(description="The step-time terms the simulation ran with.")
    seeds: int = Field(description="Simulations per cell (client start phases drawn per seed); the reps.")
    calibration_misfit: str | None = Field(
        default=None,
        description="The calibration misses its own cells by more than the calibrated error, or pinned no term "
        "(sim.uncertainty.misfit_note); None: neither, or no calibration.",
    )
    note: str = Field(default="", description="What the prediction does not model, and its caveats.")
    replicas: int = Field(default=1, description="Engines of the plan the clients were split over.")
    router_policy: str | None = Field(
        default=None, description="The vllm-router policy the agent sessions were routed by (replicas > 1)."
    )
    engine_version: str | None = Field(
        default=None,
        description="The engine version predicted for (the plan's, Plan.engine_version; None: the plan names none); "
        "the calibration's own is calibration.key.engine_version.",
    )


class AdviceRow(ResultModel):
    """One deployment `advise` considered: a chip (or slice) with N engines of tensor-parallel size TP."""

    chip: str = Field(description="Accelerator catalog key.")
    engines: int = Field(
        default=1,
        description="Engines (replicas) on the slice, or one-chip engines each on its own chip when the chip "
        "has one; clients split evenly (round robin). Priced as engines x tensor_parallel_size chips.",
    )
    tensor_parallel_size: int = Field(default=1, description="Chips per engine.")
    router_policy: str | None = Field(
        default=None, description="Agent sessions on several engines: the vllm-router policy they were routed by."
    )
    prefix_cache_hit_share: float | None = Field(
        default=None, description="Agent sessions: predicted prefix-cache hits / prompt tokens (server counters)."
    )
    fits: bool = Field(description="The plan fits and a cell could be predicted.")
    planned_fits: bool | None = Field(
        default=None,
        description="The plan's own verdict: True it fits, False it does not fit (`verdict` says why); None: no plan, "
        "refused as `plan` refuses it (bad input, such as a length past the model's positions: `verdict` says why).",
    )
    platform_unsupported: str | None = Field(
        default=None,
        description="The plan's platform-unsupported warning: the engine's official builds do not run this card "
        "(engines.json cuda_min_capability, rocm_architectures), so the row stands only for a build that does; None: "
        "supported or not judged.",
    )
    verdict: str = Field(default="", description="Why it does not fit or was not predicted, else ''.")
    utilization: float | None = Field(
        default=None,
        description="gpu_memory_utilization the row is planned at where the engine's default asks more than the card "
        "has free at start (unified memory: GB10): the highest the card's free memory covers, as the plan's verdict "
        "names it (planner.start_utilization); None: the engine's default.",
    )
    calibrated: bool = Field(default=False, description="True when a stored calibration was used, else priors.")
    calibrated_on: str | None = Field(
        default=None, description="Chip the calibration was measured on (another chip: carried over)."
    )
    calibration_misfit: str | None = Field(
        default=None,
        description="The calibration behind the row misses its own cells by more than the calibrated error, or "
        "pinned no term (sim.uncertainty.misfit_note): its ranges are widened to its own misses, or a prior's; None: "
        "neither, or no calibration.",
    )
    kv_tokens: int | None = Field(default=None, description="KV pool tokens per engine (plan).")
    output_tok_per_s: float | None = Field(
        default=None,
        description="Predicted aggregate output tok/s, median over seeds: the steady window (bench's "
        "output_tok_per_s: every stream busy, what the chip sustains under this load), not the whole run; "
        "usd_per_mtok is priced at it.",
    )
    output_tok_per_s_range: tuple[float, float] | None = Field(
        default=None,
        description="Low and high: the seeds' spread widened to the error of this row's source measured on the "
        "same steady figure (serving_measurements.json prediction_error steady_output_tok_per_s, sim.uncertainty).",
    )
    ttft_ms: float | None = Field(default=None, description="Predicted median TTFT, ms.")
    tpot_ms: float | None = Field(default=None, description="Predicted median TPOT, ms.")
    pricing: str | None = Field(default=None, description="Pricing model of the price used.")
    usd_per_hour: float | None = Field(default=None, description="Price of the whole slice per hour, USD.")
    price_source: str | None = Field(
        default=None, description="Price used: chip key, region, pricing, its source and read date; or why none."
    )
    price_date: str | None = Field(default=None, description="ISO date the price used was read.")
    price_stale: bool = Field(default=False, description="The price was read more than stale_after_days ago.")
    usd_per_mtok: float | None = Field(default=None, description="USD per million output tokens at the prediction.")
    meets_slo: bool | None = Field(
        default=None, description="slo_verdict as a bool: True pass, False fail, None cannot tell or no SLO."
    )
    source: Literal["calibrated", "carried", "prior"] | None = Field(
        default=None,
        description="Where the terms came from: calibrated on this chip, carried from another chip's "
        "calibration, or priors from published measurements (no calibration).",
    )
    chip_measured: bool | None = Field(
        default=None,
        description="The chip has published serving measurements of its own behind its efficiencies and host "
        "cost (catalog serving_measurements.json); False: they are other chips' (its range is wider).",
    )
    error_source: str | None = Field(default=None, description="Where the error behind the ranges was measured.")
    ttft_ms_range: tuple[float, float] | None = Field(
        default=None, description="Median TTFT range: the measured error of this source around the prediction, ms."
    )
    tpot_ms_range: tuple[float, float] | None = Field(
        default=None, description="Median TPOT range: the measured error of this source around the prediction, ms."
    )
    usd_per_mtok_range: tuple[float, float] | None = Field(
        default=None, description="USD per million output tokens at the high and the low end of the tok/s range."
    )
    slo_verdict: Literal["pass", "fail", "cannot tell"] | None = Field(
        default=None,
        description="pass: the whole TTFT/TPOT range within the SLO; fail: beyond it; else cannot tell (None: no SLO).",
    )
    could_flip_with: list[str] = Field(
        default_factory=list,
        description="Rows ranked below this one whose $/M range reaches below this row's (the order could flip).",
    )


class Advice(ResultModel):
    """`onechip advise`: every deployment considered, best first: SLO pass, cannot tell, fail; measured rows
    (calibrated, carried) before prior-only ones; then by $/M at the pessimistic end of the range."""

    model: str = Field(description="The model as given.")
    workload: dict[str, float] = Field(description="ctx, clients, output_tokens.")
    slo: dict[str, float] = Field(default_factory=dict, description="ttft_ms / tpot_ms upper bounds.")
    pricing: list[str] = Field(
        default_factory=lambda: ["spot"],
        description="Pricing models ranked by, in order of preference; a row with none of them says its own.",
    )
    rows: list[AdviceRow] = Field(default_factory=list, description="Ranked deployments, then ones that do not fit.")
    notes: list[str] = Field(default_factory=list, description="What the figures are and are not.")
