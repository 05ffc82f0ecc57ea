"""Re-rendering a saved run directory without re-running it: Markdown, self-contained HTML with
matplotlib plots, a JSON dump, the serving-report 1.1 JSON (validated by its JSON Schema), and a
side-by-side comparison of two runs.

    rundir          lenient reading of a run directory's JSON files
    tables          formatting, grids, workload guidance (pure)
    markdown        render_markdown(run_dir) -> str
    plots           matplotlib figures as PNG bytes
    html            render_html_files(run) -> str
    serving_report  build / validate / export, SCHEMA
    compare         render_compare(run_dir, other_dir) -> str
    write           write_report(run_dir, formats, compare) -> paths written
"""

from onechip.paths import write_text_atomic
from onechip.report.compare import render_compare
from onechip.report.markdown import render_markdown
from onechip.report.rundir import RunFiles, read_run
from onechip.report.write import FORMATS, parse_formats, write_report

__all__ = [
    "FORMATS",
    "RunFiles",
    "parse_formats",
    "read_run",
    "render_compare",
    "render_markdown",
    "write_report",
    "write_text_atomic",
]
