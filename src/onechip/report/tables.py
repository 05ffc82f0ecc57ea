"""Small pure helpers the renderers share: number formatting, Markdown tables, the bench grid and the
workload guidance derived from a run's own plan. Inputs are the result models `rundir` loads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from onechip.schemas import BenchRun, BootRecord, CellResult, CrossCheck, Plan, ServeFlag
from onechip.schemas.bench import ms_text
from onechip.schemas.common import GIB, plural
from onechip.vllm import flags

KV_RULE_FRACTION = 0.78  # seed article: "keep clients x context < 250,000 tokens -- about 78% of the KV pool"


def num(value: Any, digits: int = 1, unit: str = "") -> str:
    """A number with thousands separators and `digits` decimals ('0.0', not '-0.0', for one that rounds to 0: format's
    'z'); '—' for None or non-numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—" if value is None else str(value)
    text = f"{value:z,.{digits}f}" if isinstance(value, float) or digits else f"{value:,}"
    return f"{text}{unit}"


def ms(value: float | None) -> str:
    """A latency in ms for the report: ms_text (the CLI's rule too), '—' for None."""
    return "—" if value is None else ms_text(value)


def gib(value_bytes: Any, digits: int = 2) -> str:
    """Bytes as GiB (2**30), or '—'."""
    if isinstance(value_bytes, int | float) and not isinstance(value_bytes, bool):
        return f"{value_bytes / GIB:,.{digits}f} GiB"
    return "—"


def first(*values: Any) -> Any:
    """The first value that is neither None nor ''; None when there is none (run files fall back from
    one to the next: run.json, then plan.json, then the bench summary)."""
    return next((v for v in values if v not in (None, "")), None)


_PIPE = re.compile(r"(\\*)\|")  # a pipe and the backslashes right before it


class Markdown(str):
    """Text that is Markdown already, made safe for a table cell (md_text, md_code): md_escape leaves it as it is."""


# what inline Markdown reads as markup (CommonMark: emphasis, code, links and images, autolinks and raw HTML, entity
# references, backslash escapes; GFM: strikethrough, the table's pipe), each escaped only where it can be markup so
# the file stays readable: a backslash before ASCII punctuation, '_' not inside a word (CommonMark: an intraword '_'
# neither opens nor closes emphasis: gpu_memory_utilization is text), '&' starting an entity reference; '!' needs
# nothing once '[' is escaped, nor '>' once '<' is
_MARKUP = re.compile(r"\\(?=[!-/:-@\[-`{-~])|[`*\[\]<~|]|_(?![^\W_])|(?<![^\W_])_|&(?=#?\w+;)")
# what starts a block where a paragraph line starts: a heading, a block quote, a list item (bullet or ordered)
_BLOCK_START = re.compile(r"^(?=[#>+-])|^\d+(?=[.)])")


def _flat(text: Any) -> str:
    """`text` on one line: CommonMark ends a line at \\n, \\r and \\r\\n; each becomes a space."""
    return " ".join(str(text).splitlines()).strip()


def _escaped(text: Any) -> str:
    """`text` on one line with every markup character backslash-escaped where it can be markup (_MARKUP)."""
    return _MARKUP.sub(lambda m: "\\" + m.group(0), _flat(text))


def md_text(text: Any) -> Markdown:
    """Free text (a server's message, a model's answer in a check's note, a bench cell's reason, a plan warning) as
    Markdown that shows it as text, in a paragraph or a table cell: line breaks become spaces and every markup
    character is backslash-escaped where it can be markup (_MARKUP; at the start, _BLOCK_START), so '**', '# ',
    '<script>', a backtick or a pipe in it renders as written."""
    return Markdown(_BLOCK_START.sub(lambda m: m.group(0) + "\\", _escaped(text), count=1))


def md_code(text: Any, cell: bool = True) -> Markdown:
    """`text` as a code span (a boot-log line, a flag) on one line: fenced by one backtick more than its longest run
    of backticks, padded by a space where it starts or ends with one (CommonMark, code spans), so a backtick in it
    does not end the span. In a table `cell` its pipes are escaped as md_escape does (GFM reads the table's cells
    before their code spans; inside one an escaped pipe renders as '|')."""
    flat = _flat(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    body = _PIPE.sub(lambda m: m.group(1) * 2 + "\\|", flat) if cell else flat
    return Markdown(f"{fence}{pad}{body}{pad}{fence}")


def md_escape(text: Any) -> str:
    """Make a value safe inside a Markdown table cell, by the one rule md_text has for free text: a run's names,
    commands and reasons are text (a '*' or '<tag>' in one rendered), Markdown (md_text, md_code) is left as it is.
    Backticks are escaped, and backslashes right before a pipe doubled: the table takes one backslash off each
    escaped pipe before the cell is read as inline Markdown, where a backslash before a pipe is an escape, so
    'a\\|b' rendered 'a|b' (and GFM's cell scanner reads an even run of backslashes as escaping each other)."""
    return text if isinstance(text, Markdown) else _escaped(text)


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A GitHub-flavoured Markdown table as lines."""
    out = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return out


def cells_of(bench: BenchRun | None) -> list[CellResult]:
    """The cells of a bench summary (summary.json), or [] without one."""
    return list(bench.cells) if bench is not None else []


def unfinished_cells(bench: BenchRun | None) -> list[tuple[int, int]] | None:
    """(context, clients) of each cell of the run's grid (BenchConfig.grid_cells) with no result in summary.json, in
    grid order: bench rewrites summary.json after each cell it finishes, so these are the cells an interrupted (or
    still running) bench had not reached. None when that cannot be told: no summary, or a trace replay, whose cell
    is named by the trace's median prompt, which the summary alone does not give."""
    if bench is None or bench.config.workload == "trace" or bench.config.trace_file is not None:
        return None
    done = {(c.context_tokens, c.clients) for c in bench.cells}
    return [cell for cell in dict.fromkeys(bench.config.grid_cells()) if cell not in done]


def grid_axes(cells: Sequence[CellResult]) -> tuple[list[int], list[int]]:
    """Sorted distinct contexts (rows) and clients (columns) of the cells."""
    contexts = sorted({c.context_tokens for c in cells})
    clients = sorted({c.clients for c in cells})
    return contexts, clients


def cell_at(cells: Sequence[CellResult], context: int, clients: int) -> CellResult | None:
    """The cell measured at (`context`, `clients`), or None."""
    return next((c for c in cells if c.context_tokens == context and c.clients == clients), None)


def grid_rows(
    cells: Sequence[CellResult], value: Callable[[CellResult], str], column: Callable[[int], str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a context x clients grid. `value(cell)` renders an 'ok' cell; infeasible and
    failed cells read 'infeasible' / 'failed', absent ones '—'. `column(clients)` names a column (open loop:
    BenchConfig.load_text, the rate and the in-flight cap); None: the clients."""
    contexts, clients = grid_axes(cells)
    if column is not None:
        header = ["context \\ load"] + [column(n) for n in clients]
    else:
        header = ["context \\ clients"] + [str(n) for n in clients]
    rows = []
    for ctx in contexts:
        row = [f"{ctx:,}"]
        for n in clients:
            cell = cell_at(cells, ctx, n)
            row.append("—" if cell is None else value(cell) if cell.status == "ok" else cell.status)
        rows.append(row)
    return header, rows


def flag_words(flags: Sequence[ServeFlag]) -> list[str]:
    """'FLAG VALUE' or 'FLAG' for each serve flag, in order."""
    return [f.flag if f.value is None else f"{f.flag} {f.value}" for f in flags]


FlagSource = Literal["serve_command", "plan", "none"]


def serve_flags(plan: Plan | None) -> tuple[list[ServeFlag], FlagSource]:
    """The serve flags of a run and what they are: 'serve_command' when plan.json recorded the command
    the engine ran, else 'plan' (the plan's own serve settings, spelled by the same table the command is:
    onechip.vllm.flags.plan_flags; they need not be what ran), else 'none'."""
    if plan is not None and plan.serve_command is not None:
        return list(plan.serve_command.flags), "serve_command"
    planned = flags.plan_flags(plan) if plan is not None else []
    return planned, "plan" if planned else "none"


def state_slots(plan: Plan | None, boot: BootRecord | None, cross: CrossCheck | None) -> tuple[int, int | None] | None:
    """An attention-free model's pool (Plan.state_slots: Mamba): the sequences of any length its state cache holds,
    planned and as the engine reported them (its max concurrency, one slot per sequence whatever the length; None when
    it reported none). None for any other plan, whose pool is KV tokens."""
    if plan is None or plan.state_slots is None:
        return None
    reported = first(boot and boot.max_concurrency, cross and cross.reported_max_concurrency)
    return plan.state_slots, None if reported is None else round(reported)


def kv_pool_tokens(plan: Plan | None, boot: BootRecord | None, crosscheck: CrossCheck | None) -> tuple[int | None, str]:
    """KV pool tokens for the workload rule and where they came from: the engine's reported figure
    when there is one (it is what the engine actually allocated), else the plan's. None and why for an
    attention-free model's plan (Plan.state_slots: Mamba): it caches no KV tokens, and the engine's token line is
    its state slots x a length."""
    if plan is not None and plan.state_slots is not None:
        return None, (
            f"the model is attention-free: its state cache holds {plan.state_slots:,} sequences of any length (plan), "
            "not KV tokens"
        )
    for value, origin in (
        (boot.kv_cache_tokens if boot else None, "reported by the engine at boot"),
        (crosscheck.reported_kv_tokens if crosscheck else None, "reported by the engine at boot"),
        (plan.kv_tokens if plan else None, "planned"),
    ):
        if value is not None and value > 0:
            return value, origin
    return None, ""


def _ok_cells(cells: Sequence[CellResult]) -> list[CellResult]:
    return [c for c in cells if c.status == "ok" and c.output_tok_per_s is not None]


def _label(c: CellResult) -> str:
    return f"{c.context_tokens:,} ctx × {plural(c.clients, 'client')}"


def _tok_s(c: CellResult) -> float:
    return c.output_tok_per_s or 0.0


def _interactive(fits: Sequence[CellResult], ok: Sequence[CellResult]) -> list[CellResult]:
    """Cells whose per-stream tok/s is at least half of one client's at the same context."""
    out = []
    for c in fits:
        single = next((s for s in ok if s.context_tokens == c.context_tokens and s.clients == 1), None)
        base = single.per_stream_tok_per_s if single else None
        mine = c.per_stream_tok_per_s
        if mine is not None and base is not None and base > 0 and mine >= 0.5 * base:
            out.append(c)
    return out


def guidance(cells: Sequence[CellResult], kv_tokens: int | None) -> list[tuple[str, str, str]]:
    """(workload, cell, why) suggestions from the measured ok cells.

    - under the KV rule: clients x context <= 78% of the KV pool (seed article's rule of thumb);
    - interactive agents: the most clients at a context whose per-stream tok/s is still at least half
      of that context's single-client per-stream tok/s, under the rule;
    - batch / offline: the highest aggregate tok/s under the rule;
    - long documents: the highest aggregate tok/s at the largest measured context, under the rule.
    """
    ok = _ok_cells(cells)
    limit = KV_RULE_FRACTION * kv_tokens if kv_tokens else None
    fits = [c for c in ok if limit is None or c.context_tokens * c.clients <= limit]
    out: list[tuple[str, str, str]] = []
    interactive = _interactive(fits, ok)
    if interactive:
        best = max(interactive, key=lambda c: (c.clients, _tok_s(c)))
        out.append(
            (
                "interactive agents",
                _label(best),
                f"{num(best.per_stream_tok_per_s)} tok/s per stream (≥ half of one client's), "
                f"median TTFT {ms(best.ttft_ms.median)} ms",
            )
        )
    if fits:
        best = max(fits, key=_tok_s)
        out.append(("batch / offline", _label(best), f"{num(best.output_tok_per_s)} tok/s aggregate"))
        longest = max(c.context_tokens for c in fits)
        best = max((c for c in fits if c.context_tokens == longest), key=_tok_s)
        out.append(
            (
                "long documents",
                _label(best),
                f"{num(best.output_tok_per_s)} tok/s aggregate at the longest context that fits the rule",
            )
        )
    return out
