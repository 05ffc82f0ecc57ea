"""`onechip bench` CLI: flags reach BenchConfig, the three tables show the summary's numbers, errors are
one line. The command module is registered on a bare typer app (the project's main registers it too)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import onechip.bench as bench_pkg
from fakes.vllm_server import FakeVllm
from onechip.cli import bench_cmd
from onechip.errors import ConfigError
from onechip.schemas.bench import BenchRun

WIDE = {"COLUMNS": "200"}


def app() -> typer.Typer:
    a = typer.Typer()
    bench_cmd.register(a)

    @a.callback()
    def root() -> None:
        """test root"""

    return a


def test_bench_command_prints_the_three_tables(fake_server: FakeVllm, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [
        "bench",
        fake_server.url,
        "--contexts",
        "16,40",
        "--clients",
        "1,2",
        "--reps",
        "1",
        "--output-tokens",
        "4",
        "--requests-per-client",
        "1",
        "--warmup-requests",
        "0",
        "--out",
        str(out),
    ]
    r = CliRunner().invoke(app(), args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    run = BenchRun.model_validate_json((out / "summary.json").read_text())
    assert run.config.contexts == [16, 40] and run.config.clients == [1, 2] and run.config.output_tokens == 4
    for title in ("aggregate output tok/s", "median TTFT ms", "per-stream tok/s"):
        assert title in r.output
    cell = run.cells[0]
    assert f"{cell.ttft_ms.median:,.1f}" in r.output  # the table shows the stored median, not a recomputation


def test_bench_json_and_bad_flags(fake_server: FakeVllm, tmp_path: Path) -> None:
    args = [
        "bench",
        fake_server.url,
        "--contexts",
        "16",
        "--clients",
        "1",
        "--reps",
        "1",
        "--output-tokens",
        "2",
        "--slo",
        "ttft_ms=60000,e2e_ms=60000",
        "--json",
        "--out",
        str(tmp_path / "j"),
    ]
    r = CliRunner().invoke(app(), args)
    assert r.exit_code == 0, r.output
    cell = json.loads(r.stdout)["cells"][0]
    assert cell["status"] == "ok" and cell["goodput_per_s"] > 0  # every request meets a 60 s objective
    assert json.loads(r.stdout)["config"]["slo"] == {"ttft_ms": 60000.0, "e2e_ms": 60000.0}
    bad = CliRunner().invoke(app(), ["bench", fake_server.url, "--contexts", "a,b", "--out", str(tmp_path / "b")])
    assert bad.exit_code != 0 and "--contexts must be comma-separated token counts" in str(bad.exception)


def test_bench_time_boxed_flags_and_workers(fake_server: FakeVllm, tmp_path: Path) -> None:
    common = ["bench", fake_server.url, "--contexts", "16", "--clients", "2", "--reps", "1", "--output-tokens", "2"]
    timed = [*common, "--duration-s", "0.2", "--warmup-s", "0.05", "--workers", "2", "--json", "--out"]
    r = CliRunner().invoke(app(), [*timed, str(tmp_path / "t")])
    assert r.exit_code == 0, r.output
    config = json.loads(r.stdout)["config"]
    assert (config["duration_s"], config["warmup_s"], config["workers"]) == (0.2, 0.05, 2)
    assert json.loads(r.stdout)["cells"][0]["status"] == "ok"
    for extra, message in (
        (["--requests-per-client", "2", "--duration-s", "1"], "give --requests-per-client or --duration-s"),
        (["--warmup-requests", "1", "--warmup-s", "1"], "give --warmup-requests or --warmup-s"),
    ):
        bad = CliRunner().invoke(app(), [*common, *extra, "--out", str(tmp_path / "b")])
        assert bad.exit_code != 0 and message in str(bad.exception)


def test_resume_needs_only_the_directory(fake_server: FakeVllm, tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    first = ["bench", fake_server.url, "--contexts", "16", "--clients", "1,2", "--reps", "1", "--output-tokens", "3"]
    assert CliRunner().invoke(app(), [*first, "--duration-s", "0.1", "--out", str(run_dir)]).exit_code == 0
    lines = (run_dir / "requests.jsonl").read_text().splitlines()
    (run_dir / "requests.jsonl").write_text("\n".join(x for x in lines if json.loads(x)["clients"] == 1) + "\n")
    r = CliRunner().invoke(app(), ["bench", "--resume", str(run_dir), "--json"])
    assert r.exit_code == 0, r.output
    resumed = json.loads(r.stdout)
    assert resumed["config"]["duration_s"] == 0.1 and [c["clients"] for c in resumed["cells"]] == [1, 2]
    for extra, message in (
        (["--clients", "1"], "--clients was 1,2, now 1"),
        (["--out", str(tmp_path / "elsewhere")], "give --out or --resume, not both"),
    ):
        bad = CliRunner().invoke(app(), ["bench", "--resume", str(run_dir), *extra])
        assert bad.exit_code != 0 and message in str(bad.exception)


@pytest.mark.parametrize("target", ["summary.json", "gone.json"], ids=["loop", "dangling"])
def test_resume_of_a_summary_that_is_a_broken_symlink_says_it_is_unreadable(tmp_path: Path, target: str) -> None:
    """saved_config took a summary.json that is a looping or dangling symlink for none (Path.is_file follows the
    link) and asked for the server URL, as if the run had saved nothing; the report reads such a file as damaged."""
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "summary.json").symlink_to(run_dir / target)
    r = CliRunner().invoke(app(), ["bench", "--resume", str(run_dir)])
    assert r.exit_code != 0 and f"cannot resume {run_dir}: summary.json is unreadable (" in str(r.exception)


def test_resume_of_a_directory_without_a_run_says_what_it_holds(tmp_path: Path) -> None:
    """An interrupted --find-max search says to run the same search into its directory again; `bench --resume` of
    that directory (search.json, no summary.json) and of an empty one asked for the server URL 'or --resume DIR of a
    run that saved its summary', which is what was given. Each now says why there is nothing to resume."""
    search = tmp_path / "search"
    search.mkdir()
    (search / "search.json").write_text("{}")
    empty = tmp_path / "empty"
    empty.mkdir()
    for run_dir, message in (
        (search, f"{search} holds a --find-max search: run the same search into it again (--out {search})"),
        (empty, f"nothing to resume in {empty}: no summary.json (give the server URL to start a run there)"),
        (tmp_path / "gone", f"nothing to resume in {tmp_path / 'gone'}: no summary.json"),
    ):
        r = CliRunner().invoke(app(), ["bench", "--resume", str(run_dir)])
        assert r.exit_code != 0 and message in str(r.exception), r.exception


def test_resume_of_a_search_directory_with_the_url_says_how_the_search_resumes(tmp_path: Path) -> None:
    """`bench URL --resume DIR` of an interrupted --find-max search said 'choose another --out', a flag not given,
    where the run was asked to continue; it says how that search resumes, as `bench --resume DIR` does."""
    search = tmp_path / "search"
    search.mkdir()
    (search / "search.json").write_text("{}")
    # a port nothing listens on: the directory is refused before any request
    r = CliRunner().invoke(app(), ["bench", "http://127.0.0.1:9", "--resume", str(search)])
    said = str(r.exception)
    assert r.exit_code != 0 and f"run the same search into it again (--out {search})" in said, said
    assert "choose another --out" not in said


def test_failures_are_shown_and_an_all_failed_grid_exits_non_zero(fake_server: FakeVllm, tmp_path: Path) -> None:
    fake_server.cut_requests = {3}  # probe 1, warm-up 2, then the first of 3 measured requests is cut
    some = ["bench", fake_server.url, "--contexts", "16", "--clients", "1", "--reps", "1", "--output-tokens", "4"]
    r = CliRunner().invoke(app(), [*some, "--requests-per-client", "3", "--out", str(tmp_path / "a")], env=WIDE)
    assert r.exit_code == 0 and "1 of 3 measured requests failed" in r.output
    fake_server.max_model_len = 64  # every prompt of 100 tokens overflows: HTTP 400 for all
    # ... on a server that does not list its max_model_len (else every cell is infeasible before sending)
    models = {"object": "list", "data": [{"id": fake_server.model, "object": "model"}]}
    fake_server.raw_answers["/v1/models"] = (200, json.dumps(models).encode(), "application/json")
    over = ["bench", fake_server.url, "--contexts", "100", "--clients", "1", "--reps", "1", "--out"]
    r = CliRunner().invoke(app(), [*over, str(tmp_path / "b")], env=WIDE)
    assert r.exit_code != 0 and "every measured cell failed" in str(r.exception)
    bad = CliRunner().invoke(app(), ["bench", fake_server.url, "--arrivals", "constant", "--out", str(tmp_path / "c")])
    assert bad.exit_code != 0 and "give --rate too" in str(bad.exception)


def test_bench_core_never_imports_rich_typer_or_the_cli() -> None:
    """DESIGN.md layering: bench/ reports progress through callbacks and imports no shell."""
    for path in Path(bench_pkg.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [
            m for m in names if m.split(".")[0] in {"rich", "typer", "click", "mcp"} or m.startswith("onechip.cli")
        ], path


@pytest.mark.parametrize("typed", ["8k", "8K", "2.5k", "1_024", "128,4k"])
def test_contexts_take_the_forms_max_model_len_takes(typed: str) -> None:
    # `--max-model-len 8k` was taken (vLLM's human_readable_int), `bench --contexts 8k` refused as 'must be
    # comma-separated integers'; plan --contexts and simulate --contexts too. Now one parser reads all of them.
    from onechip.schemas.bench import BenchConfig
    from onechip.schemas.inputs import build_request
    from onechip.schemas.requests import PlanRequest, SimulateRequest

    lens = [build_request(PlanRequest, {"model": "m", "chip": "l4", "max_model_len": t}).max_model_len
            for t in typed.split(",")]  # fmt: skip
    assert build_request(BenchConfig, {"base_url": "http://127.0.0.1:9", "contexts": typed}).contexts == lens
    assert build_request(PlanRequest, {"model": "m", "chip": "l4", "contexts": typed}).contexts == lens
    assert build_request(SimulateRequest, {"plan": "p.json", "contexts": typed}).contexts == lens


def test_contexts_say_the_forms_they_take_when_refused(fake_server: FakeVllm) -> None:
    got = CliRunner().invoke(app(), ["bench", fake_server.url, "--contexts", "1.5K"], env=WIDE)
    said = "--contexts must be comma-separated token counts (8192, 8k or 8K), got '1.5K'"
    assert isinstance(got.exception, ConfigError) and str(got.exception) == said
    assert len(fake_server.chat_requests) == 0


def test_bench_help_says_what_ends_ttft_for_a_thinking_model() -> None:
    """--help says the TTFT convention (schemas.bench.TTFT_CONVENTION), report.md's too: the first reasoning token
    ends TTFT; it said only 'TTFT' before, and a user benchmarking a thinking model could not tell which token."""
    r = CliRunner().invoke(app(), ["bench", "--help"], env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.replace("│", " ").split())
    assert "A thinking model's first reasoning token ends it" in said
    assert "never the role-only opening chunk" in said
