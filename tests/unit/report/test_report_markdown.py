"""The Markdown report of a synthetic run built from the seed article's v5e-1 numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console
from seed_run_files import seed_files, write_run

from onechip.cli.bench_cmd import print_run
from onechip.errors import ConfigError
from onechip.report import read_run, render_markdown, write_report


def _table_row(markdown: str, title: str, first_cell: str) -> list[str]:
    """Cells of the row starting with `first_cell` in the first table after heading `title`."""
    section = markdown.split(title, 1)[1]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} after {title!r}")


def test_identity(seed_run: Path) -> None:
    md = render_markdown(seed_run)
    assert md.startswith("# onechip report: seed-v5e\n")
    assert "| model | google/gemma-4-E2B-it |" in md
    assert "| engine | vllm-tpu 0.26.1rc1 |" in md
    assert "| chip | v5e-1 |" in md
    assert "`--kv-cache-dtype auto` `--max-model-len 32768`" in md  # the plan's settings, in seed order


def test_memory_planned_vs_reported(seed_run: Path) -> None:
    md = render_markdown(seed_run)
    # Seed: v5e-1, E2B, 0.92, block 64 -> 321,344 tokens, and the engine reported the same.
    assert _table_row(md, "## Memory budget", "KV pool tokens") == ["KV pool tokens", "321,344", "321,344"]
    assert _table_row(md, "## Memory budget", "weights") == ["weights", "8.97 GiB", "8.97 GiB"]
    assert "plan agrees with the engine" in md


def test_three_grids_with_contexts_as_rows_and_marked_cells(seed_run: Path) -> None:
    md = render_markdown(seed_run)
    assert _table_row(md, "### Aggregate output tok/s", "128") == [
        "128",
        "123.7 (CV 2%)",
        "failed",
        "1,496.5 (CV 2%)",
    ]
    assert _table_row(md, "### Aggregate output tok/s", "8,192") == [
        "8,192",
        "—",
        "399.6 (CV 2%)",
        "infeasible",
    ]
    assert _table_row(md, "### Median TTFT (ms)", "1,024") == ["1,024", "40.0", "99.0", "422.0"]  # to 0.1 ms
    assert _table_row(md, "### Per-stream output tok/s", "128") == ["128", "123.7", "failed", "23.4"]
    assert "8,192 ctx × 64 clients: **infeasible** — 64 x 8,192 tokens exceeds" in md
    assert "128 ctx × 16 clients: **failed** — connection reset" in md


def test_guidance_uses_the_runs_kv_pool(seed_run: Path) -> None:
    md = render_markdown(seed_run)
    # Seed: "keep clients x context < 250,000 tokens -- about 78% of the 321,344-token KV pool";
    # 0.78 x 321,344 = 250,648 (the article rounds it to 250,000).
    assert "= 250,648 tokens of this run's 321,344" in md
    assert _table_row(md, "## Workload guidance", "batch / offline")[1] == "128 ctx × 64 clients"
    # 8,192 x 16 = 131,072 fits the rule; the article's RAG / long-documents pick is 8K ctx, 16 clients.
    assert _table_row(md, "## Workload guidance", "long documents")[1] == "8,192 ctx × 16 clients"
    # Article: interactive agents at <=1K, 16 clients (per-stream 70 >= half of one client's 120).
    assert _table_row(md, "## Workload guidance", "interactive agents")[1] == "1,024 ctx × 16 clients"


def test_guidance_excludes_cells_over_the_rule(tmp_path: Path) -> None:
    files = seed_files()
    files["boot.json"]["kv_cache_tokens"] = 100_000  # rule: 78,000 tokens; 1,024 x 64 = 65,536 still fits
    files["crosscheck.json"]["reported_kv_tokens"] = 100_000
    md = render_markdown(write_run(tmp_path / "small", files))
    assert "= 78,000 tokens of this run's 100,000 (reported by the engine at boot)" in md
    assert _table_row(md, "## Workload guidance", "long documents")[1] == "1,024 ctx × 64 clients"


def test_guidance_applies_no_kv_rule_to_an_attention_free_model(tmp_path: Path) -> None:
    # a Mamba plan's kv_tokens are its state pages x block size and the engine's token line its slots x a length:
    # the report ruled 'keep clients x context under 78% of the KV pool' on them and left cells out of the guidance
    files = seed_files()
    files["plan.json"]["state_slots"] = 2845
    files["boot.json"]["kv_cache_tokens"] = 100_000  # as test_guidance_excludes_cells_over_the_rule: 78,000 ruled
    files["crosscheck.json"]["reported_kv_tokens"] = 100_000
    md = render_markdown(write_run(tmp_path / "mamba", files))
    assert "Rule of thumb" not in md
    assert (
        "No KV pool size in this run (the model is attention-free: its state cache holds 2,845 sequences of any "
        "length (plan), not KV tokens): the clients × context rule is not applied." in md
    )
    # the rule left 8,192 x 16 = 131,072 out (long documents: 1,024 x 64); no rule, the longest measured is the pick
    assert _table_row(md, "## Workload guidance", "long documents")[1] == "8,192 ctx × 16 clients"
    # the memory table gave its state pages x block size as 'KV pool tokens'
    assert "| KV pool tokens |" not in md
    row = _table_row(md, "## Memory budget", "sequences the state cache holds (attention-free: no KV tokens)")
    assert row[1] == "2,845"


def test_checks_and_boot(seed_run: Path) -> None:
    md = render_markdown(seed_run)
    assert _table_row(md, "## Capability checks", "tool_calling")[1:3] == ["**partial**", "1/2"]
    # Seed: cold start 857 s, of which 685 s is recompilation.
    assert _table_row(md, "## Boot timeline", "compiled")[1:3] == ["805.0", "685.0"]
    assert "Ready after 857.0 s." in md


def test_cost_section(seed_run: Path) -> None:
    md = render_markdown(seed_run)
    assert _table_row(md, "## Cost", "spot")[3:5] == ["$0.107", "$422"]
    assert _table_row(md, "$/M output tokens per measured cell", "8,192")[2:] == [
        "399.6",
        "$0.402",
        "$0.417",
        "$0.834",
    ]
    assert "every **6.2 h** (cold" in md and "every **3.6 h** (warm" in md
    assert "⚠ stale" in md


def test_empty_run_dir_renders_every_section_as_absent(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    md = render_markdown(tmp_path / "empty")
    assert "Not in this run: plan, boot, checks, bench, cost." in md
    for line in (
        "No benchmark summary in this run.",
        "No capability checks in this run.",
        "No boot record in this run.",
        "No plan, boot record or cross-check in this run.",
    ):
        assert line in md


def test_unreadable_file_is_reported_not_fatal(tmp_path: Path) -> None:
    run = write_run(tmp_path / "broken", {"run.json": {"run_id": "broken"}})
    (run / "summary.json").write_text("{not json", encoding="utf-8")
    (run / "checks.json").write_text("[1, 2]", encoding="utf-8")
    files = read_run(run)
    assert files.bench is None and files.checks is None
    md = render_markdown(run)
    assert re.search(r"⚠ summary.json could not be read", md)
    assert "⚠ checks.json is not a JSON object; ignored" in md


def test_old_cost_layout_list_of_lines(tmp_path: Path) -> None:
    line = {
        "pricing": "spot",
        "region": "us-west4",
        "usd_per_chip_hour": 0.5779,
        "output_tok_per_s": 1496.5,
        "usd_per_mtok": 0.10727,
        "monthly_usd": 421.867,
        "stops_itself": False,
        "price_date": "2026-08-09",
    }
    md = render_markdown(write_run(tmp_path / "old", {"cost.json": [line]}))
    assert _table_row(md, "## Cost", "spot")[3] == "$0.107"


def test_missing_dir_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        render_markdown(tmp_path / "nope")


def test_write_report_md(seed_run: Path) -> None:
    (path,) = write_report(seed_run, ["md"])
    assert path == seed_run / "report.md"
    assert path.read_text(encoding="utf-8") == render_markdown(seed_run)


def test_write_report_unknown_format(seed_run: Path) -> None:
    with pytest.raises(ConfigError, match="unknown report format pdf; known: md"):
        write_report(seed_run, ["pdf"])


def test_failed_requests_and_the_client_host_are_reported(tmp_path: Path) -> None:
    files = seed_files()
    cell = files["summary.json"]["cells"][0]
    cell.update(requests_failed=1, first_error="ClientPayloadError: stream cut mid-way")
    files["summary.json"]["client"] = {"host": "bench-host", "python": "3.11.7", "cpus": 2}
    del files["run.json"]["host"], files["run.json"]["python"]  # a bench-only run: no manifest identity
    md = render_markdown(write_run(tmp_path / "r", files))
    assert "| host | bench-host |" in md and "| python | 3.11.7 |" in md
    ctx, clients = cell["context_tokens"], cell["clients"]
    load = f"{clients} client{'' if clients == 1 else 's'}"  # the count's noun singular at 1 (schemas.common.plural)
    assert f"- {ctx:,} ctx × {load}: 1 failed; first: ClientPayloadError: stream cut mid-way" in md


def test_report_says_which_tok_per_s_window_it_uses(seed_run: Path) -> None:
    md = render_markdown(seed_run)
    assert "### Aggregate output tok/s (steady window)" in md
    assert "### Whole-run output tok/s (vllm bench serve / GuideLLM / AIPerf definition)" in md
    assert "**steady window**" in md and "**whole run**" in md


def test_a_run_with_slos_reports_its_goodput_grid_as_the_console_does(tmp_path: Path, seed_run: Path) -> None:
    # bench --slo measures goodput_per_s and its console prints a goodput grid; report.md, rendered from the same
    # summary.json, had none: the figure the SLOs were given for was nowhere in the report
    files = seed_files()
    files["summary.json"]["config"]["slo"] = {"ttft_ms": 500.0, "tpot_ms": 50.0}
    for cell, goodput in zip(files["summary.json"]["cells"], [0.95, 5.5, 0.9, 7.25, 0.0, 1.5], strict=False):
        cell["goodput_per_s"] = goodput
    md = render_markdown(write_run(tmp_path / "r", files))
    title = "### Goodput requests/s meeting every SLO (ttft_ms <= 500, tpot_ms <= 50; steady window)"
    assert _table_row(md, title, "128") == ["128", "0.95", "failed", "5.50"]  # the cells' goodput_per_s
    assert _table_row(md, title, "1,024") == ["1,024", "0.90", "7.25", "0.00"]
    assert "Goodput" not in render_markdown(seed_run)  # no SLO given, no goodput measured


def test_a_sub_10_ms_ttft_reads_the_same_in_report_md_and_the_console(tmp_path: Path) -> None:
    # a local engine's median TTFT of 4.56 ms: the console's grid showed 4.6, report.md rounded it to 5 (whole ms)
    # from the same summary.json; both now give a latency in ms to 0.1 ms (schemas.bench.ms_text)
    files = seed_files()
    files["summary.json"]["cells"][0]["ttft_ms"].update(median=4.56, p90=6.04)  # the 128 ctx x 1 client cell
    run_dir = write_run(tmp_path / "r", files)
    md = render_markdown(run_dir)
    assert _table_row(md, "### Median TTFT (ms)", "128")[1] == "4.6"
    console = Console(record=True, width=200)
    print_run(read_run(run_dir).bench, console)
    grid = console.export_text().split("median TTFT ms", 1)[1]
    assert re.search(r"128 │ +4\.6 │", grid), grid


def test_report_says_how_the_runs_tokens_were_counted(tmp_path: Path) -> None:
    # the bench's notes (a server with no usage counted by /tokenize, no per-chunk usage so ITL per chunk) and its ITL
    # convention were said on the console only: report.md gave the same tok/s and ITL without saying how they came
    files = seed_files()
    counted = "server sent no usage: output tokens are its /tokenize count of the generated text"
    files["summary.json"]["notes"] = [counted, "server sent no per-chunk usage: ITL is split per chunk, not per token"]
    md = render_markdown(write_run(tmp_path / "r", files))
    assert f"Notes on this run:\n- {counted}\n- server sent no per-chunk usage" in md
    assert "ITL convention: per-token: when the server sends continuous usage" in md
    assert md.index("ITL convention") < md.index("## Workload guidance")


def test_an_old_summary_with_loose_server_and_client_dicts_still_loads():
    """summary.json files written while server/client were free dicts (extra keys, keys missing) read as the
    typed BenchServer / BenchClient."""
    from onechip.schemas import BenchRun

    old = {
        "tool_version": "0.1",
        "created_at": "2026-08-09T00:00:00+00:00",
        "server": {"base_url": "http://127.0.0.1:8000", "model": "m", "vllm_extra": "x"},
        "client": {"host": "h", "cpus": 2},
        "config": {"base_url": "http://127.0.0.1:8000"},
    }
    run = BenchRun.model_validate(old)
    assert (run.server.model, run.server.engine_version, run.client.host, run.client.python) == ("m", None, "h", None)


def test_cells_of_the_grid_a_stopped_bench_never_reached_are_listed(tmp_path: Path) -> None:
    """bench rewrites summary.json after each cell, so an interrupted bench's summary holds the cells it finished
    and its config the whole grid; the report read as a finished run of fewer cells (a 2 x 2 grid stopped in its
    second cell: one row, no word of the three others), and a bench stopped in its first cell as 'No benchmark
    summary in this run', beside a summary.json holding its settings."""
    files = seed_files()
    files["summary.json"]["config"].update(contexts=[128, 1024], clients=[1, 64])
    files["summary.json"]["cells"] = files["summary.json"]["cells"][:1]  # 128 x 1 finished
    md = render_markdown(write_run(tmp_path / "stopped", files))
    assert "Cells of the grid with no result (3 of 4:" in md
    assert "- 128 ctx × 64 clients\n- 1,024 ctx × 1 client\n- 1,024 ctx × 64 clients\n" in md
    files["summary.json"]["cells"] = []
    md = render_markdown(write_run(tmp_path / "first", files))
    assert "No benchmark summary" not in md and "The bench summary holds no finished cell." in md
    assert "Cells of the grid with no result (4 of 4:" in md
    files["summary.json"]["config"]["contexts"] = [128]
    files["summary.json"]["cells"] = seed_files()["summary.json"]["cells"][:2]  # 128 x 1 and 128 x 64: all of it
    assert "no result" not in render_markdown(write_run(tmp_path / "whole", files))


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"interrupted": True}, "The check run was stopped (Ctrl-C or SIGTERM) before every domain ran"),
        ({"endpoint_failing": "the server failed every request the probes sent"}, "the server failed every request"),
        ({"server_busy": "the server stayed busy (429/503)"}, "the server stayed busy (429/503)"),
    ],
)
def test_checks_say_how_the_run_ended(tmp_path: Path, fields: dict[str, object], said: str) -> None:
    # Before: a check run stopped after 2 of 5 domains (checks.json 'interrupted': true) rendered as a finished run of
    # those 2, and one whose endpoint failed every request as plain model failures: the report, re-rendered from the
    # files, dropped what `check` had said on the terminal
    from onechip.schemas.checks import CheckReport, CheckResult

    checks = CheckReport(
        base_url="http://127.0.0.1:8000", model="m", results=[CheckResult(domain="chat", verdict="pass")], **fields
    )
    (tmp_path / "checks.json").write_text(checks.model_dump_json())
    section = render_markdown(tmp_path).split("## Capability checks", 1)[1].split("\n## ", 1)[0]
    assert said in section, section


def test_a_check_runs_report_names_its_model_and_endpoint(tmp_path: Path) -> None:
    # Before: `check --out DIR` then `report DIR` showed model, endpoint and created as '—' beside a table of that
    # model's verdicts: checks.json holds all three (model, base_url, started_at), the identity read them from no file
    # but run.json, plan, boot and summary.json
    from onechip.schemas.checks import CheckReport, CheckResult

    checks = CheckReport(
        base_url="http://127.0.0.1:8000", model="SmolLM2-135M-Instruct", started_at="2026-12-05T18:58:01+00:00",
        results=[CheckResult(domain="chat", verdict="pass")],
    )  # fmt: skip
    (tmp_path / "checks.json").write_text(checks.model_dump_json())
    md = render_markdown(tmp_path)
    assert _table_row(md, "# onechip report", "model")[1] == "SmolLM2-135M-Instruct"
    assert _table_row(md, "# onechip report", "endpoint")[1] == "http://127.0.0.1:8000"
    assert _table_row(md, "# onechip report", "created")[1] == "2026-12-05T18:58:01+00:00"


def test_check_notes_with_pipes_fences_and_carriage_returns_stay_in_their_cell(tmp_path: Path) -> None:
    # Before: md_escape turned only '\n' into a space, so a note with a lone '\r' (or '\r\n', which left the '\r')
    # ended the Markdown row mid-cell: the checks table rendered a broken row and lost the rest of the note
    notes = ["server said: bad | worse\r\nsee `--tool-call-parser`", "content='```json\n{\"a|b\": 1}\n```'\rend"]
    cells, html = _checks_cells(tmp_path, notes)
    assert len(cells) == 5, html  # one row: domain, verdict, probes passed, conditions, notes
    assert cells[4] == (  # a note is text: its backticks show as written (test_markdown_in_a_check_note_shows_as_text)
        "server said: bad | worse see `--tool-call-parser`; content='```json {&quot;a|b&quot;: 1} ```' end"
    )


def _checks_cells(tmp_path: Path, notes: list[str], **report: object) -> tuple[list[str], str]:
    """The notes cell of a checks table holding one failed probe per note (rendered by markdown-it, as GitHub's
    GFM tables read it), and the section's HTML."""
    from markdown_it import MarkdownIt  # a dependency of rich

    from onechip.schemas.checks import CheckReport, CheckResult, Probe

    probes = [Probe(name=f"p{i}", verdict="fail", note=n) for i, n in enumerate(notes)]
    checks = CheckReport(
        base_url="http://127.0.0.1:8000",
        model="m",
        results=[CheckResult(domain="tool_calling", verdict="fail", probes=probes)],
        **report,
    )
    (tmp_path / "checks.json").write_text(checks.model_dump_json())
    section = render_markdown(tmp_path).split("## Capability checks", 1)[1].split("\n## ", 1)[0]
    html = MarkdownIt("commonmark").enable("table").render(section)
    return re.findall(r"<td>(.*?)</td>", html, re.S), html


def test_a_backslash_before_a_pipe_in_a_cell_keeps_both(tmp_path: Path) -> None:
    # md_escape made 'a\|b' 'a\\|b': the table took one backslash off the escaped pipe, and the inline '\|' that was
    # left is an escaped pipe, so the cell read 'a|b' (a filter's regex, a Windows path before a pipe lost it)
    cells, html = _checks_cells(tmp_path, [r"filter id\|x", r"C:\\|end"])
    assert len(cells) == 5, html
    assert cells[4] == r"filter id\|x; C:\\|end"


def test_markdown_in_a_check_note_shows_as_text(tmp_path: Path) -> None:
    # a model's answer quoted in a note rendered: '**8**' bold, '<script>' raw HTML in report.html's source, a
    # backtick a code span; the note, and the run's end lines (server_busy quotes a server's message), show as written
    answer = "content='# Answer\n**8** <script>alert(1)</script> [x](http://e) `id >= 10` a_b_ ~~no~~ &amp; | \\*'"
    busy = "server busy: ... the last: HTTP 429: <b>slow down</b> **now**"
    cells, html = _checks_cells(tmp_path, [answer], server_busy=busy)
    assert len(cells) == 5, html
    shown = answer.replace("\n", " ").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert cells[4] == shown, cells[4]
    assert "<script>" not in html and html.count("<strong>") == 1  # the verdict's own **fail**
    assert "<code>" not in html and "<a " not in html and "<h1>" not in html
    assert "<p>server busy: ... the last: HTTP 429: &lt;b&gt;slow down&lt;/b&gt; **now**</p>" in html
