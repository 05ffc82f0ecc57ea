"""Free text a run's files hold (bench reasons and errors, plan warnings, the bench's notes, boot-log lines, a run
error, a cost warning) shows in report.md and report.html as written: a '|', '*', '<tag>', newline or backtick in it
neither breaks a table nor renders (tables.md_text / md_escape / md_code, one rule for every cell)."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt  # a dependency of rich
from seed_run_files import seed_files, write_run

from onechip.report.html import render_html_files
from onechip.report.markdown import render_markdown
from onechip.report.rundir import read_run

ODD = "bad | worse **bold** <b>tag</b>\nnext line"
SHOWN = "bad | worse **bold** &lt;b&gt;tag&lt;/b&gt; next line"  # as HTML escapes the text itself
LINE = "loaded `weights` | done ``x``"


def _odd_run(tmp_path: Path) -> Path:
    files = seed_files()
    bench = files["summary.json"]
    bench["cells"][-1] |= {"status": "failed", "reason": ODD}
    bench["notes"] = [ODD]
    files["plan.json"]["warnings"][0]["message"] = ODD
    files["boot.json"]["events"][1]["line"] = LINE
    files["boot.json"]["warnings"] = [LINE]
    files["run.json"]["error"] = ODD
    files["cost.json"]["warnings"] = [ODD]
    return write_run(tmp_path / "odd", files)


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def test_free_text_shows_as_written_in_report_md(tmp_path: Path) -> None:
    # the reason, a plan warning, a note, the run error and a cost warning rendered '**bold**' bold and '<b>' as raw
    # HTML, and the boot-log line's backtick closed its code span early ('`loaded `weights` | done ``x```')
    html = _html(render_markdown(_odd_run(tmp_path)))
    assert "<strong>bold</strong>" not in html and "<b>" not in html, html
    assert html.count(SHOWN) == 5, html  # the cell's reason, the note, the plan warning, the run error, cost warning
    assert "<td><code>loaded `weights` | done ``x``</code></td>" in html, html
    assert "<code>loaded `weights` | done ``x``</code>" in html.split("warning line(s)", 1)[1]
    for row in re.findall(r"<tr>(.*?)</tr>", html, re.S):  # every row of the boot table has its four cells
        if "loaded" in row:
            assert row.count("<td>") == 4, row


def test_free_text_shows_as_written_in_report_html(tmp_path: Path) -> None:
    # report.html is converted from report.md by html.py, which knew neither backslash escapes nor longer fences
    page = render_html_files(read_run(_odd_run(tmp_path)))
    assert "<strong>bold</strong>" not in page and "<b>tag" not in page
    assert page.count(SHOWN) == 5
    assert "\\*" not in page and "\\|" not in page
    assert "<code>loaded `weights` | done ``x``</code>" in page
