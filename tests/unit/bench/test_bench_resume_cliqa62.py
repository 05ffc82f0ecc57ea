"""bench --resume reads the run's summary.json once (helper cliqa62)."""

from __future__ import annotations

from pathlib import Path

from test_bench_resume_inputs import TRACE, trace_run, write_trace

from fakes.vllm_server import FakeVllm
from onechip.bench import run_grid


def test_a_resume_reads_summary_json_once(fake_server: FakeVllm, tmp_path: Path, monkeypatch) -> None:
    # _check_resume read it twice, once for the config (saved_config) and once for the run (saved_run): a file
    # changed between the two reads was judged as one run and resumed as another
    trace = write_trace(tmp_path / "t.jsonl", TRACE)
    run_grid(trace_run(fake_server, trace), tmp_path / "run")
    summary = tmp_path / "run" / "summary.json"
    reads: list[Path] = []
    real = Path.read_text

    def counted(self: Path, *args, **kwargs) -> str:
        if self == summary:
            reads.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    run = run_grid(trace_run(fake_server, trace), tmp_path / "run", resume=True)
    assert run.cells[0].status == "ok"
    assert len(reads) == 1
