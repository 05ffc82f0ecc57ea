"""The HTML report: the Markdown report converted to HTML (one source of truth for the content), plus
matplotlib plots of the bench grid embedded as base64 PNGs. Self-contained: no script, no stylesheet
or image fetched at view time.

The converter handles exactly the Markdown subset `markdown.py` emits: headings, pipe tables,
bullets, fenced code blocks (the serve command), paragraphs, **bold**, `code` of any fence and backslash escapes.
"""

from __future__ import annotations

import base64
import html
import re

from onechip.report import plots
from onechip.report.markdown import render_markdown_files
from onechip.report.rundir import RunFiles
from onechip.report.tables import cells_of, kv_pool_tokens

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#1b1b1b;line-height:1.45}
table{border-collapse:collapse;margin:.6em 0 1.2em}th,td{border:1px solid #ccc;padding:.25em .6em}
th{background:#f1f3f5}td.num{text-align:right}
code{background:#f4f4f4;padding:0 .2em;border-radius:3px;font-size:.9em}
pre{background:#f4f4f4;padding:.6em;overflow-x:auto;white-space:pre-wrap}
figure{display:inline-block;margin:.5em}img{max-width:100%}
"""

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
# Cells that read as a number (1,496.5 / $0.107 / 8.97 GiB / 1.010× / 123.7 (CV 2%) / —) align right.
_NUMERIC = re.compile(r"^(—|[-−]?\$?[\d,]+(\.\d+)?( ?(%|×|GiB|s))?( \(CV \d+%\))?)$")


# a code span (CommonMark: a run of backticks closed by a run as long) or a backslash escape of ASCII punctuation
_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)|\\([!-/:-@\[-`{-~])")


def _bold(text: str) -> str:
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", html.escape(text, quote=False))


def _inline(text: str) -> str:
    """Inline Markdown as the report writes it (tables.md_text, md_code): code spans of any fence (one space of
    padding each side dropped), backslash escapes shown as the character, **bold**. An escaped pipe is a pipe (the
    table's, GFM)."""
    text, out, at = text.replace("\\|", "|"), [], 0
    for m in _SPAN.finditer(text):
        out.append(_bold(text[at : m.start()]))
        code = m.group(2)
        if code is None:
            out.append(html.escape(m.group(3), quote=False))
        else:
            code = code[1:-1] if len(code) > 2 and code[0] == code[-1] == " " and code.strip() else code
            out.append(f"<code>{html.escape(code, quote=False)}</code>")
        at = m.end()
    return "".join(out) + _bold(text[at:])


def _td(cell: str) -> str:
    return f'<td class="num">{_inline(cell)}</td>' if _NUMERIC.match(cell) else f"<td>{_inline(cell)}</td>"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in _CELL_SPLIT.split(line.strip().strip("|"))]


def _table(lines: list[str], i: int) -> tuple[str, int]:
    """The pipe table starting at line `i` (header, separator, rows) and the line after it."""
    header = _cells(lines[i])
    i += 2
    rows = []
    while i < len(lines) and lines[i].startswith("|"):
        rows.append(_cells(lines[i]))
        i += 1
    head = "<table><thead><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in header) + "</tr></thead>"
    body = "<tbody>" + "".join("<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in rows)
    return f"{head}\n{body}</tbody></table>", i


def _code(lines: list[str], i: int) -> tuple[str, int]:
    """The fenced code block opening at line `i`, verbatim, and the line after its closing fence."""
    i += 1
    code = []
    while i < len(lines) and not lines[i].startswith("```"):
        code.append(lines[i])
        i += 1
    return f"<pre><code>{html.escape(chr(10).join(code), quote=False)}</code></pre>", i + 1


def _bullets(lines: list[str], i: int) -> tuple[str, int]:
    """The bullet list starting at line `i` and the line after it."""
    items = []
    while i < len(lines) and lines[i].startswith("- "):
        items.append(f"<li>{_inline(lines[i][2:])}</li>")
        i += 1
    return "<ul>" + "".join(items) + "</ul>", i


def markdown_to_html(markdown: str, after_section: dict[str, str] | None = None) -> str:
    """HTML body for the Markdown subset the report uses. `after_section` maps an h2 title to HTML
    inserted at the end of that section."""
    after = dict(after_section or {})
    lines = markdown.splitlines()
    out: list[str] = []
    current: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            title = line[level:].strip()
            if level <= 2 and current in after:
                out.append(after.pop(current))
            if level == 2:
                current = title
            out.append(f"<h{level}>{_inline(title)}</h{level}>")
        elif line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            block, i = _table(lines, i)
            out.append(block)
            continue
        elif line.startswith("```") or line.startswith("- "):
            block, i = (_code if line.startswith("```") else _bullets)(lines, i)
            out.append(block)
            continue
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    if current in after:
        out.append(after.pop(current))
    return "\n".join(out)


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></figure>'


def render_html_files(run: RunFiles) -> str:
    """A self-contained HTML page for already-read run files (plots only when there is a bench grid)."""
    figures = ""
    cells = cells_of(run.bench)
    if any(c.status == "ok" for c in cells):
        kv, _ = kv_pool_tokens(run.plan, run.boot, run.crosscheck)
        figures = "<h3>Plots</h3>\n" + "\n".join(
            [
                _img(plots.heatmap_png(cells), "heatmap of aggregate output tok/s over context x clients"),
                _img(plots.throughput_png(cells, kv), "aggregate output tok/s vs clients, KV wall marked"),
                _img(plots.ttft_png(cells), "median TTFT vs clients"),
            ]
            + (
                [_img(plots.turn_ttft_png(cells), "agent sessions: median TTFT per turn")]
                if any(c.turns for c in cells)
                else []
            )
        )
    markdown = render_markdown_files(run)
    title = markdown.splitlines()[0].lstrip("# ").strip()
    body = markdown_to_html(markdown, {"Benchmark": figures} if figures else None)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n"
    )
