"""Re-rendering a saved run directory without re-running it: Markdown, self-contained HTML with
matplotlib plots, a JSON dump, the serving-report 1.1 JSON (validated by the JSON Schema generated
from its model), and a side-by-side comparison of two runs. Everything renders from result models.

    rundir          run files -> result models (lenient; problems listed, never fatal)
    tables          formatting, grids, serve flags, workload guidance (pure)
    markdown        render_markdown(run_dir) -> str; identity, serve command, memory, checks, boot
    markdown_bench  the bench grids and workload guidance sections
    markdown_cost   the cost section
    plots           matplotlib figures as PNG bytes
    html            render_html_files(run) -> str
    serving_report  build / validate / export, SCHEMA (generated from schemas.serving_report)
    compare         render_compare(run_dir, other_dir) -> str
    write           write_report(run_dir, formats, compare) -> paths written
"""

from onechip.paths import write_text_atomic
from onechip.report.compare import render_compare
from onechip.report.markdown import render_markdown
from onechip.report.rundir import RunFiles, read_run, require_run_files
from onechip.report.write import FORMATS, parse_formats, write_report

__all__ = [
    "FORMATS",
    "RunFiles",
    "parse_formats",
    "read_run",
    "render_compare",
    "render_markdown",
    "require_run_files",
    "write_report",
    "write_text_atomic",
]
