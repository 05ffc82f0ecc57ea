"""`onechip plan`: parse the flags, call onechip.api.plan, draw the budget with rich (or print JSON).

print_serve_command is also what `up --dry-run` prints, so both show the same command the same way.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from onechip import api
from onechip.cli.options import options_from
from onechip.cli.render import new_console, print_json, print_whole
from onechip.schemas import CrossCheck, LayerKV, Plan, ServeCommand
from onechip.schemas.common import GIB
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import PlanRequest


def _kv(pool_bytes: int) -> str:
    """The KV line's figure: GiB, or what is missing when the other terms take more than the budget (the
    arithmetic goes negative: no KV at all, never a negative pool)."""
    if pool_bytes >= 0:
        return f"{pool_bytes / GIB:8.2f} GiB"
    return f"    none (short by {-pool_bytes / GIB:.2f} GiB)"


def _weights_kind(plan: Plan) -> str:
    """The served dtype, and the online quantization the weights figure counts (--quantization fp8: 1 byte a
    quantized weight), so a quantized figure is not labelled as the unquantized dtype."""
    online = plan.serve.quantization
    return plan.dtype if online is None else f"{plan.dtype}, {online.value} where quantized"


def _budget(plan: Plan, console: Console) -> None:
    """cap - weights = KV pool (TPU, CPU, Ascend NPU): the seed article's drawing."""
    if plan.memory_bytes is not None and plan.cap_bytes is not None:
        console.print(f" {plan.memory_bytes / GIB:8.2f} GiB  visible memory")
        console.print(f"x {plan.utilization:8.2f}      utilization")
        console.print(f" {plan.cap_bytes / GIB:8.2f} GiB  cap")
    console.print(f"- {plan.weights_bytes / GIB:8.2f} GiB  weights ({_weights_kind(plan)})")
    # a hybrid's blocks are raised to hold a recurrent state and shared by its layer groups (planner.kv_groups):
    # blocks x block_size is then not its token figure, and the engine logs a group-aware one (kv_tokens_logged)
    sized = f" x {plan.block_size}" if plan.num_blocks * plan.block_size == plan.kv_tokens else " over the layer groups"
    logged = f" (logged as {plan.kv_tokens_logged:,})" if plan.kv_tokens_logged not in (None, plan.kv_tokens) else ""
    if plan.state_slots is not None:  # attention-free (Mamba): states, one set per sequence, no KV tokens
        console.print(f" {_kv(plan.kv_pool_bytes)}  state pool -> {plan.state_slots:,} concurrent sequences")
    else:
        console.print(
            f" {_kv(plan.kv_pool_bytes)}  KV pool -> {plan.num_blocks:,} blocks{sized} = {plan.kv_tokens:,} tokens"
            f"{logged} at {plan.kv_bytes_per_token:,} B/token"
        )
    if plan.outside_cap_bytes is not None and plan.engine == "vllm-ascend":
        console.print(f" {plan.outside_cap_bytes / GIB:8.2f} GiB  outside the cap")
    elif plan.outside_cap_bytes is not None:
        console.print(f" {plan.outside_cap_bytes / GIB:8.2f} GiB  outside the cap (compiled programs)")


def _gpu_budget(plan: Plan, console: Console) -> None:
    """vLLM's GPU profiling budget, per GPU, with the range of the uncertain terms."""
    b = plan.memory_budget
    assert b is not None
    per = f"per GPU, {plan.devices} GPU(s)" if plan.devices > 1 else "per GPU"
    console.print(f"memory rule: vLLM {b.rule_versions} ({per})")
    if plan.memory_bytes is not None:
        console.print(f" {plan.memory_bytes / plan.devices / GIB:8.2f} GiB  visible memory")
    console.print(f" {b.requested_bytes / GIB:8.2f} GiB  requested (x {plan.utilization})")
    console.print(f"- {b.weights_bytes / GIB:8.2f} GiB  weights ({_weights_kind(plan)})")
    console.print(f"- {b.non_torch_bytes / GIB:8.2f} GiB  non-torch memory")
    console.print(f"- {b.activation_peak_bytes / GIB:8.2f} GiB  activation peak of the profiling run")
    if b.cuda_graph_bytes:
        console.print(f"- {b.cuda_graph_bytes / GIB:8.2f} GiB  CUDA graphs")
    low, high = plan.kv_tokens_range or (plan.kv_tokens, plan.kv_tokens)
    # a hybrid's attention block is raised to hold a recurrent state: say the size the blocks really have
    raised = f" of {b.min_block_size:,} tokens" if b.min_block_size > plan.block_size else ""
    if plan.state_slots is not None:  # attention-free (Mamba): the pool holds states, one set per sequence
        console.print(
            f" {_kv(b.kv_cache_bytes)}  state cache -> {plan.num_blocks:,} state pages in {b.kv_groups} group(s) of "
            f"{b.group_layers} layer(s), {b.blocks_per_request} per sequence = {plan.state_slots:,} concurrent "
            f"sequences of any length (no KV tokens: vLLM logs {plan.kv_tokens_logged:,} 'tokens', a slot count x "
            "a length)"
        )
        if plan.calibrated_from:
            console.print(f"[green]calibrated from the boot of {plan.calibrated_from}[/]")
        return
    console.print(
        f" {_kv(b.kv_cache_bytes)}  KV cache -> {plan.num_blocks:,} blocks{raised} in {b.kv_groups} group(s) of "
        f"{b.group_layers} layer(s) = {plan.kv_tokens:,} tokens (logged as {plan.kv_tokens_logged:,})"
    )
    # the range counts tokens as the engine's token line does (Plan.kv_tokens_range), the logged figure; the
    # dominant term as a label, which reads for a plural term and for a calibrated plan's 'none (measured at boot)'
    counted = " as logged" if plan.kv_tokens_logged not in (None, plan.kv_tokens) else ""
    console.print(
        f"           range {max(0, b.kv_cache_low_bytes) / GIB:.2f} - {max(0, b.kv_cache_high_bytes) / GIB:.2f} GiB = "
        f"{low:,} - {high:,} tokens{counted}; dominant uncertainty: {b.dominant_uncertainty}"
    )
    if plan.calibrated_from:
        console.print(f"[green]calibrated from the boot of {plan.calibrated_from}[/]")


def _layer_groups(layers: list[LayerKV]) -> list[tuple[list[int], tuple[str, int, str, str, int]]]:
    """The layers with the same type, KV heads, head dim (K's, and V's where it differs: '192 (V 128)'), cache and
    bytes per token, one group each, in the order each first appears (`plan --json` keeps one record per layer)."""
    groups: dict[tuple[str, int, str, str, int], list[int]] = {}
    for layer in layers:
        cache = "own" if layer.owns_cache else "none" if layer.shares_from is None else f"from {layer.shares_from}"
        dim = str(layer.head_dim) if layer.v_head_dim is None else f"{layer.head_dim} (V {layer.v_head_dim})"
        key = (layer.state_kind or layer.attention_type, layer.kv_heads, dim, cache, layer.bytes_per_token)
        groups.setdefault(key, []).append(layer.index)
    return [(indices, key) for key, indices in groups.items()]


def _ranges(indices: list[int]) -> str:
    """Ascending layer indices as runs: [0, 1, 2, 4, 6, 7] -> '0-2, 4, 6-7'."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def render(plan: Plan, console: Console) -> None:
    """The memory budget the way the seed article draws it, then geometry, concurrency, flags, warnings."""
    version = plan.engine_version or ""
    console.print(f"[bold]{plan.model}[/] on [bold]{plan.chip}[/] ({plan.engine} {version})")
    if plan.memory_budget is not None:
        _gpu_budget(plan, console)
    else:
        _budget(plan, console)
    table = Table("layers", "count", "type", "KV heads", "head dim", "cache", "B/token")
    for indices, (kind, heads, dim, cache, per_token) in _layer_groups(plan.layers):
        table.add_row(_ranges(indices), str(len(indices)), kind, str(heads), dim, cache, f"{per_token:,}")
    print_whole(table, console)
    conc = Table("context tokens", "max concurrency")
    for c in plan.concurrency:
        conc.add_row(f"{c.context_tokens:,}", f"{c.max_concurrency:.2f}x")
    print_whole(conc, console)
    engine, windowed, full = (
        plan.kv_bytes_per_sequence,
        plan.kv_bytes_per_sequence_windowed,
        plan.kv_bytes_per_sequence_full_context,
    )
    if engine is not None and windowed is not None and full is not None:
        console.print(
            f"KV per {plan.max_model_len:,}-token request: engine {engine / GIB:.3f} GiB, "
            f"windowed {windowed / GIB:.3f} GiB, every cached layer full {full / GIB:.3f} GiB"
        )
    if plan.tpot_floor_ms is not None and plan.decode_bytes_per_step is not None:
        console.print(f"TPOT floor: {plan.decode_bytes_per_step / GIB:.2f} GiB/step -> {plan.tpot_floor_ms:.2f} ms")
    if plan.serve_command is not None:
        print_serve_command(plan.serve_command, console)
        for warning in plan.serve_command.warnings:
            if not warning.startswith("plan: "):  # the plan's own warnings follow
                console.print(f"[yellow]warning[/] {escape(warning)}", highlight=False)
    for w in plan.warnings:
        console.print(f"[yellow]warning[/] {w.code}: {escape(w.message)} [dim]({escape(_short(w.source))})[/]")
    for note in plan.notes:
        console.print(f"[yellow]note[/] {escape(note)}", highlight=False)
    binding = f" (binding limit: {plan.binding_limit})" if plan.binding_limit else ""
    console.print(f"verdict: {plan.verdict}{binding}")
    if plan.replica_commands:
        console.print(f"[bold]{plan.replicas} replicas behind vllm-router; every command `up` runs:[/]")
        for line in plan.replica_commands:
            typer.echo(line)
    if plan.crosscheck is not None:
        version = plan.crosscheck.engine_version or "version not logged"
        print_crosscheck(plan.crosscheck, f"against the boot log ({version})", console)


# A warning's source as the terminal shows it: an engine rule's provenance runs to ~6,000 characters (60 lines
# under every plan); `plan --json` keeps each source whole.
SOURCE_CHARS = 300


def _short(source: str) -> str:
    if len(source) <= SOURCE_CHARS:
        return source
    return source[:SOURCE_CHARS].rsplit(" ", 1)[0] + " ... (the whole source: plan --json)"


def print_crosscheck(cc: CrossCheck, head: str, console: Console) -> None:
    """'<head>: agrees|differs; <note>', or '<head>: <note>' when nothing compared (the note says 'nothing to
    compare: <why>' itself), then, when the boot was not stored as the deployment's measured boot, the line saying
    why (CrossCheck.not_stored)."""
    said = f"{crosscheck_mark(cc)}; {escape(cc.note)}" if cc.compared else f"[yellow]{escape(cc.note)}[/]"
    console.print(f"{head}: {said}", highlight=False)
    if cc.not_stored:
        console.print(f"[yellow]{escape(cc.not_stored)}[/]", highlight=False)


def crosscheck_mark(cc: CrossCheck) -> str:
    """'agrees' or 'differs' (of a check that compared), as rich markup."""
    return "[green]agrees[/]" if cc.agrees else "[red]differs[/]"


def print_serve_command(command: ServeCommand, console: Console) -> None:
    """The serve command as `plan` and `up --dry-run` both print it: where it runs, every flag and env
    variable with its reason and origin, the docker groups, then its one shell line, unwrapped."""
    where = command.target.host or "this machine"
    console.print(
        f"[bold]{command.target.kind}[/] {escape(command.model)} on {where} ({command.engine_rules} rules)",
        highlight=False,
    )
    for flag in command.flags:
        value = f" {flag.value}" if flag.value is not None else ""
        console.print(f"  {escape(flag.flag + value)}  [dim]# {escape(flag.reason)} \\[{flag.origin}][/]",
                      highlight=False)  # fmt: skip
    for key, value in command.env.items():
        reason = command.env_reasons.get(key, "")
        console.print(f"  env {escape(key)}={escape(value)}  [dim]# {escape(reason)}[/]", highlight=False)
    for group in command.docker:
        words = " ".join(group.words[:6]) + (" ..." if len(group.words) > 6 else "")
        console.print(f"  docker: {escape(words)}  [dim]# {escape(group.reason)}[/]", highlight=False)
    if command.target.token_source:
        console.print(f"  HF token: from {escape(command.target.token_source)} -> "
                      f"{command.target.token_path or 'engine environment'} (never on a command line)",
                      highlight=False)  # fmt: skip
    console.print("[bold]command:[/]")
    console.print(command.shell, markup=False, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    @app.command("plan")
    @options_from(PlanRequest)
    def plan_command(
        as_json: bool = typer.Option(False, "--json", help="Print the Plan as JSON."), **fields: Any
    ) -> None:
        """Memory budget, KV capacity, concurrency and serve flags for MODEL on CHIP.

        Exit 0: it fits; 10: the verdict is does not fit (the plan, or its --json, is printed first); 2: bad input.
        """
        plan = api.plan(build_request(PlanRequest, fields))
        if as_json:
            print_json(plan)
        else:
            render(plan, new_console())
        if not plan.fits:
            raise api.does_not_fit(plan)
