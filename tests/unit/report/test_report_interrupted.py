"""A bench stopped before its last cells (no run.json: `bench` writes none) is said to be so in report.md's status and
in a comparison's rows, and a run compared with itself is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from seed_run_files import seed_files, write_run

from onechip.errors import ConfigError
from onechip.report import render_markdown, write_report
from onechip.report.compare import render_compare


def _bench_only(path: Path, cut: bool) -> Path:
    """The seed run as `bench` leaves it: summary.json (and plan.json), no run.json; its 9-cell grid whole (the seed
    lacks 8,192 x 1: added), or `cut` before two cells (8,192 ctx at 1 and 16 clients)."""
    files = seed_files()
    del files["run.json"]
    cells = files["summary.json"]["cells"]
    cells.append(cells[0] | {"context_tokens": 8192})
    if cut:
        cells[:] = [c for c in cells if c["context_tokens"] != 8192 or c["clients"] == 64]
    return write_run(path, files)


def _status(markdown: str) -> str:
    return next(line for line in markdown.splitlines() if line.startswith("| status |")).split("|")[2].strip()


def test_the_status_of_a_bench_without_run_json_says_it_stopped(tmp_path: Path) -> None:
    # was "status —" whether the bench finished or was interrupted after 7 of its 9 cells
    assert _status(render_markdown(_bench_only(tmp_path / "cut", True))) == (
        "bench stopped or still running: 2 of 9 cells of the grid have no result (no run.json)"
    )
    assert _status(render_markdown(_bench_only(tmp_path / "whole", False))).startswith(
        "bench finished (summary.json holds"
    )


def test_a_compared_cell_an_interrupted_run_did_not_reach_says_so(tmp_path: Path) -> None:
    # was "absent | ... | not comparable", as if the run's grid had no such cell
    whole, cut = _bench_only(tmp_path / "whole", False), _bench_only(tmp_path / "cut", True)
    rows = [line for line in render_compare(whole, cut).splitlines() if line.startswith("| 8,192 | 16 |")]
    assert len(rows) == 1 and "| absent |" in rows[0], rows
    assert rows[0].endswith("not comparable; cut stopped before this cell (interrupted, or still running) |")
    assert "stopped before" not in render_compare(cut, whole).split("| 8,192 | 64 |", 1)[1].splitlines()[0]


def test_a_run_compared_with_itself_is_refused(tmp_path: Path) -> None:
    # `report RUN --compare RUN` wrote compare-RUN.md with every ratio 1.000x "within CV", without a word
    run = _bench_only(tmp_path / "run", False)
    for other in (run, tmp_path / "." / "run", tmp_path / "link"):
        if other.name == "link":
            other.symlink_to(run)
        with pytest.raises(ConfigError, match="is the run itself"):
            write_report(run, ["md"], compare=other)
    assert not list(run.glob("compare-*.md")) and not (run / "report.md").exists()


def test_the_status_of_a_check_run_without_run_json_says_it_stopped(tmp_path: Path) -> None:
    # `check` writes no run.json: a check run stopped by Ctrl-C read "status —"
    checks = seed_files()["checks.json"] | {"interrupted": True}
    assert _status(render_markdown(write_run(tmp_path / "chk", {"checks.json": checks}))) == (
        "check run stopped before every domain ran (no run.json)"
    )
    both = _bench_only(tmp_path / "both", True)
    (both / "checks.json").write_text(json.dumps(checks), encoding="utf-8")
    assert _status(render_markdown(both)) == (
        "check run stopped before every domain ran; bench stopped or still running: 2 of 9 cells of the grid have "
        "no result (no run.json)"
    )
    del checks["interrupted"]
    assert _status(render_markdown(write_run(tmp_path / "done", {"checks.json": checks}))) == "—"


def test_a_run_without_bench_cells_is_said_to_have_none_to_compare(tmp_path: Path) -> None:
    # a check run compared with a bench run wrote a row per cell of 'absent | ... | not comparable'
    checks = write_run(tmp_path / "chk", {"checks.json": seed_files()["checks.json"]})
    md = render_compare(checks, _bench_only(tmp_path / "whole", False))
    assert md.split("## Per cell", 1)[1].strip() == (
        "No cell to compare: chk has no measured cell (no bench summary, or a bench stopped in its first cell)."
    )
