"""Issue 17, one regression test per defect: every bad input is one line and a non-zero exit, nothing
measured is lost, and `check` can gate a pipeline (exit codes from onechip.cli.check_cmd's docstring)."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from factories import embedded_plan, engine_state
from fakes.vllm_server import FakeVllm, Reply
from onechip import checks
from onechip.bench import run_grid
from onechip.cli import render
from onechip.cli.render import PlainProgress
from onechip.engines import startup
from onechip.engines import state as engine_state_store
from onechip.engines.launch import read_hf_token
from onechip.errors import BusyError, ChecksNotPassed, ConfigError, EndpointError, Interrupted, redact
from onechip.paths import exclusive
from onechip.progress import ProgressEvent
from onechip.schemas import BenchConfig
from onechip.schemas.checks import CheckResult, Probe
from onechip.schemas.requests import CheckRequest, ServeOptions
from onechip.schemas.run import RUN_FILES

GARBAGE = {
    "html": (200, b"<html><body>proxy login</body></html>", "text/html"),
    "invalid-json": (200, b"{not json", "application/json"),
    "json-list": (200, b"[1, 2]", "application/json"),
    "no-data": (200, b'{"object": "list"}', "application/json"),
}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- check: exit codes, garbage answers, timeout, Ctrl-C, --out


def test_check_exits_10_when_a_verdict_fails_and_0_when_it_is_allowed(run) -> None:
    # empty answers to the chat probes: the chat domain fails (checks/smoke.py)
    with FakeVllm([Reply("")] * 4) as srv:
        code, out, err = run("check", srv.url, "--only", "smoke")
        assert code == ChecksNotPassed.exit_code == 10
        assert err.splitlines()[-1].startswith("error: checks did not pass: chat fail") and "chat" in out
        assert "[check] smoke: running (0/1)" in err  # off a terminal, progress is plain lines on stderr
        code, _, _ = run("check", srv.url, "--only", "smoke", "--allow", "fail")
        assert code == 0


def test_check_exits_0_when_every_domain_passes(run) -> None:
    with FakeVllm([Reply("Paris.")]) as srv:
        code, out, _ = run("check", srv.url, "--only", "chat", "--json")
    assert code == 0 and json.loads(out)["results"][0]["verdict"] == "pass"


@pytest.mark.parametrize("kind", list(GARBAGE))
def test_check_on_a_garbage_models_answer_is_could_not_run(run, kind: str) -> None:
    with FakeVllm(raw_answers={"/v1/models": GARBAGE[kind]}) as srv:
        code, _, err = run("check", srv.url)
    assert code == EndpointError.exit_code == 6
    assert f"{srv.url}/v1/models" in _one_line(err)


def test_check_timeout_s_bounds_a_server_that_never_answers(run) -> None:
    # a socket that completes the handshake (the kernel's backlog) and never answers: before --timeout-s,
    # `check` printed nothing for 182 s; now it gives up after --timeout-s and says where
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        code, _, err = run("check", url, "--timeout-s", "0.2")
    assert code == 6 and f"{url}/v1/models" in _one_line(err)


def test_check_ctrl_c_keeps_the_finished_domains_marked_interrupted(tmp_path: Path) -> None:
    def press_ctrl_c_at_determinism(event: ProgressEvent) -> None:
        if event.message == "determinism: running":
            raise KeyboardInterrupt

    with FakeVllm([Reply("Paris.")]) as srv, pytest.raises(Interrupted, match="1 of 2 domains"):
        checks.run_checks(
            srv.url, only=["smoke", "determinism"], out_dir=tmp_path / "c", on_progress=press_ctrl_c_at_determinism
        )
    saved = json.loads((tmp_path / "c" / "checks.json").read_text())
    assert saved["interrupted"] is True
    assert [(r["domain"], r["verdict"]) for r in saved["results"]] == [("chat", "pass")]


def test_ctrl_c_says_interrupted_and_exits_130(run, monkeypatch) -> None:
    # typer 0.29 catches KeyboardInterrupt itself and returns 130: the CLI exited 130 with nothing said
    from onechip import api

    def ctrl_c(request: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "cost", ctrl_c)
    code, _, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "100")
    assert code == 130 and _one_line(err).startswith("interrupted"), err
    # cost measures nothing, so it does not say that what it measured is kept (bench, check and demo do)
    assert "kept on disk" not in err


def _ctrl_c(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


# argv of each command that measures, run at 127.0.0.1:9 (nothing listens) or on the embedded engine (demo), its job
# (api.bench, api.check, api.demo) replaced by one that is stopped by a Ctrl-C
MEASURING = {
    "bench": ("bench", ["http://127.0.0.1:9", "--contexts", "128", "--clients", "1"]),
    "check": ("check", ["http://127.0.0.1:9"]),
    "demo": ("demo", []),
}


@pytest.mark.parametrize("command", MEASURING)
def test_ctrl_c_before_a_measuring_command_wrote_anything_says_nothing_was_written(
    run, monkeypatch, tmp_path: Path, command: str
) -> None:
    # Ctrl-C outside the job's own handler (here in api.<job> before it measured) said 'what was measured is kept on
    # disk' of a run that wrote nothing (check, demo; bench before 33a61194), its new runs/<id>/ removed again
    # (paths.run_dir)
    from onechip import api

    job, argv = MEASURING[command]
    monkeypatch.setattr(api, job, _ctrl_c)
    code, _, err = run(command, *argv)
    assert code == 130 and _one_line(err) == f"error: {command} interrupted; nothing written", err
    assert not (tmp_path / "runs").exists()


def _wrote_then_ctrl_c(name: str) -> Callable[..., None]:
    """A job that writes its run's file `name` (schemas.run.RUN_FILES) into its out_dir, then is stopped by a Ctrl-C
    (as it returns, or after: while its tables are drawn)."""

    def job(first: object, *args: object, **kwargs: object) -> None:
        out_dir = kwargs.get("out_dir") or first.out_dir  # bench's out_dir=; check's and demo's request.out_dir
        out_dir.mkdir(exist_ok=True)
        (out_dir / RUN_FILES[name]).write_text("{}")
        raise KeyboardInterrupt

    return job


@pytest.mark.parametrize(("command", "written"), [("bench", "bench"), ("check", "checks"), ("demo", "manifest")])
def test_ctrl_c_after_a_measuring_command_wrote_its_run_says_where_it_is(
    run, monkeypatch, tmp_path: Path, command: str, written: str
) -> None:
    # a Ctrl-C once the run's files are written keeps them: the line says where (check and demo said 'what was
    # measured is kept on disk', not where)
    from onechip import api

    job, argv = MEASURING[command]
    monkeypatch.setattr(api, job, _wrote_then_ctrl_c(written))
    code, _, err = run(command, *argv, "--out", str(tmp_path / "r"))
    assert code == 130, err
    assert _one_line(err) == f"error: {command} interrupted; what was measured is in {tmp_path / 'r'}"


@pytest.mark.parametrize("command", MEASURING)
def test_ctrl_c_while_a_measuring_command_reads_its_flags_says_nothing_was_measured(
    run, monkeypatch, command: str
) -> None:
    # before the command itself runs (its flags parsed; at start, its imports) nothing can have been measured; check
    # and demo said 'what was measured is kept on disk'
    import typer.core

    monkeypatch.setattr(typer.core.TyperCommand, "parse_args", _ctrl_c)
    code, _, err = run(command, *MEASURING[command][1])
    assert code == 130 and _one_line(err) == "interrupted (nothing measured yet; nothing written)", err


@pytest.mark.parametrize(("signum", "code", "said"), [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")])
def test_a_signal_exits_128_plus_its_number(run, monkeypatch, signum: str, code: int, said: str) -> None:
    # a real signal to this process mid-command: SIGTERM used to exit 130 like Ctrl-C; the shell's convention
    # is 128 + the signal's number (SIGTERM 15 -> 143, SIGINT 2 -> 130), what the process was stopped by
    from onechip import api

    def stopped(request: object) -> None:
        os.kill(os.getpid(), getattr(signal, signum))
        deadline = time.monotonic() + 60  # the handler raises in this frame, at once unless the machine is starved
        while time.monotonic() < deadline:  # (a 5 s sleep ran out at load 15: cost then read None, an AttributeError)
            time.sleep(0.05)
        raise AssertionError(f"{signum} was not handled within 60 s")

    previous = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(api, "cost", stopped)
    try:
        got, _, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "100")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert got == code and _one_line(err).startswith(said), err


def test_check_out_onto_an_earlier_check_is_refused_before_any_request(run, tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "checks.json").write_text("{}")
    with FakeVllm() as srv:
        code, _, err = run("check", srv.url, "--out", str(tmp_path / "c"))
        assert srv.chat_requests == []
    assert code == 2 and "already holds a run" in _one_line(err)
    assert (tmp_path / "c" / "checks.json").read_text() == "{}"


def test_check_out_onto_a_file_is_one_line(run, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    code, _, err = run("check", "http://127.0.0.1:9", "--out", str(tmp_path / "f"))
    assert code == 2 and "is a file, not a directory" in _one_line(err)
    code, _, err = run("check", "http://127.0.0.1:9", "--out", "/dev/null")  # a character device, not a file
    assert code == 2 and "/dev/null is a character device, not a directory" in _one_line(err)


def test_only_takes_check_names_and_domain_names() -> None:
    request = CheckRequest.model_validate({"base_url": "http://x", "only": "chat,tool_calling,long_context,agent"})
    assert request.only == ["smoke", "tools", "needle", "agent"]


def test_console_and_report_count_the_same_probes() -> None:
    result = CheckResult(
        domain="tool_calling",
        verdict="partial",
        probes=[Probe(name="a", verdict="partial"), Probe(name="b", verdict="fail"),
                Probe(name="c", verdict="pass", informational=True)],
    )  # fmt: skip
    assert result.probes_passed() == "0/2, 1 partial"


# --- a run directory is never overwritten


def test_demo_out_onto_an_earlier_run_refuses_before_anything_starts(run, tmp_path: Path, monkeypatch) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / RUN_FILES["manifest"]).write_text('{"run_id": "old"}')
    monkeypatch.setattr("onechip.engines.model_store.ensure_model", lambda: pytest.fail("demo started"))
    code, _, err = run("demo", "--out", str(run_dir))
    assert code == 2 and "already holds a run (run.json" in _one_line(err)
    assert (run_dir / RUN_FILES["manifest"]).read_text() == '{"run_id": "old"}'


def test_bench_out_onto_an_earlier_run_refuses_before_probing(run, tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / RUN_FILES["bench"]).write_text("{}")
    # an unreachable URL: had it probed, the error would be the endpoint's (6), not the refusal (2)
    code, _, err = run("bench", "http://127.0.0.1:9", "--out", str(tmp_path / "b"))
    assert code == 2 and "already holds a bench run" in _one_line(err)


def test_bench_out_onto_a_run_another_bench_is_writing_is_busy_not_a_resume(run, tmp_path: Path) -> None:
    """A second bench onto the --out of one still measuring was told 'already holds a bench run; resume it
    (--resume DIR)' with exit 2: a resume of a run in progress. The README's lock promise is exit 8."""
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / RUN_FILES["bench"]).write_text("{}")
    with exclusive(tmp_path / "b", "held by this test"):  # the first bench holds its --out while it measures
        code, _, err = run("bench", "http://127.0.0.1:9", "--out", str(tmp_path / "b"))
    line = _one_line(err)
    assert code == BusyError.exit_code and "another bench is writing" in line and "--resume" not in line, err
    assert (tmp_path / "b" / RUN_FILES["bench"]).read_text() == "{}"


def test_a_failed_bench_leaves_no_empty_out_dir(run, tmp_path: Path) -> None:
    code, _, err = run("bench", "http://127.0.0.1:9", "--out", str(tmp_path / "new"))
    assert code == 6 and _one_line(err)
    assert not (tmp_path / "new").exists()


def test_bench_without_out_writes_a_new_run_dir_each_time(run, tmp_path: Path, monkeypatch) -> None:
    """Without --out every bench wrote runs/bench, so the second was refused ('already holds a bench run'): each
    makes a new runs/<run-id>/ (paths.run_dir, as simulate and bench over MCP), names it, and a bench that fails
    before measuring leaves none."""
    monkeypatch.chdir(tmp_path)
    args = ["--contexts", "16", "--clients", "1", "--reps", "1", "--output-tokens", "4"]
    with FakeVllm() as srv:
        outs = [run("bench", srv.url, *args) for _ in range(2)]
    assert [code for code, _, _ in outs] == [0, 0], outs[1][2]
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all((r / RUN_FILES["bench"]).is_file() for r in runs)
    named = [r for r in runs for _, out, _ in outs if f"{r.relative_to(tmp_path)}/summary.json" in out]
    assert sorted(named) == runs
    assert run("bench", "http://127.0.0.1:9", *args)[0] == 6
    assert sorted((tmp_path / "runs").iterdir()) == runs


def test_bench_resume_after_an_early_kill_keeps_the_first_settings(tmp_path: Path) -> None:
    def kill_at_first_request(event: ProgressEvent) -> None:
        if event.message.endswith("starting"):
            raise KeyboardInterrupt

    base = {"contexts": [16], "clients": [1], "reps": 2, "output_tokens": 4, "requests_per_client": 1}
    with FakeVllm() as srv:
        with pytest.raises(Interrupted):
            run_grid(BenchConfig(base_url=srv.url, **base), tmp_path / "b", on_progress=kill_at_first_request)
        saved = json.loads((tmp_path / "b" / RUN_FILES["bench"]).read_text())
        assert saved["config"]["output_tokens"] == 4  # stored before the first request was sent
        changed = BenchConfig(base_url=srv.url, **{**base, "output_tokens": 16})
        with pytest.raises(ConfigError, match="--output-tokens was 4, now 16"):
            run_grid(changed, tmp_path / "b", resume=True)


# --- inputs bounded before work


def test_a_context_beyond_the_servers_max_model_len_is_infeasible_before_any_prompt(run, tmp_path: Path) -> None:
    with FakeVllm(max_model_len=512) as srv:
        code, out, _ = run("bench", srv.url, "--contexts", "1000", "--clients", "1", "--reps", "1",
                           "--out", str(tmp_path / "b"), "--json")  # fmt: skip
        sent = [len(json.dumps(b)) for b in srv.chat_requests]
    cell = json.loads(out)["cells"][0]
    assert code == 2  # nothing could be measured: not a success
    assert cell["status"] == "infeasible" and "max_model_len 512 (server /v1/models)" in cell["reason"]
    assert all(size < 2000 for size in sent)  # only the tiny extras probe went out, no 1,000-token prompt


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "http://127.0.0.1:9", "--contexts", "99999999999999999999999"],
        ["bench", "http://127.0.0.1:9", "--clients", "1000000"],
        ["bench", "http://127.0.0.1:9", "--rate", "1e-300"],
        ["cost", "--chip", "v5e-1", "--output-tok-per-s", "1e-300"],
        ["cost", "--chip", "v5e-1", "--output-tok-per-s", "nan"],
        ["cost", "--chip", "v5e-1", "--output-tok-per-s", "inf"],
        ["up", "--timeout-s", "1e300", "--dry-run"],
        ["plan", "SmolLM2-135M-Instruct", "--chip", "h100", "--cpu-offload-gb", "-1"],
        ["plan", "SmolLM2-135M-Instruct", "--chip", "h100", "--cpu-offload-gb", "nan"],
        # its bytes overflowed int() in the planner (OverflowError traceback before the bound)
        ["plan", "SmolLM2-135M-Instruct", "--chip", "h100", "--cpu-offload-gb", "1e308"],
        # a version with a junk tail was planned under its leading release; on an NPU 'junk' itself was planned
        ["plan", "gemma-4-E2B-it", "--chip", "910B3", "--engine-version", "junk"],
        ["plan", "SmolLM2-135M-Instruct", "--chip", "h100", "--engine-version", "0.19.0junk"],
        ["up", "--model", "SmolLM2-135M-Instruct", "--chip", "h100", "--engine", "vllm-docker",
         "--engine-version", "a7a204cc6e0f5a1b2c3d4e5f60718293a4b5c6d7", "--dry-run"],
    ],
)  # fmt: skip
def test_numbers_out_of_any_useful_range_are_refused_naming_the_flag(run, argv: list[str]) -> None:
    code, _, err = run(*argv)
    assert code == 2 and argv[-2 if argv[-1] != "--dry-run" else -3] in _one_line(err)


# --- file-system errors: one line with the path and the OS reason


def test_report_into_a_read_only_directory_is_one_line(run, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / RUN_FILES["requests"]).write_text("")

    def refuse(path: Path, text: str) -> Path:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("onechip.report.write.write_text_atomic", refuse)
    code, _, err = run("report", str(tmp_path))
    assert code == 1 and _one_line(err) == f"error: {tmp_path / 'report.md'}: Permission denied"


def test_cost_write_into_a_read_only_run_is_one_line(run, tmp_path: Path, monkeypatch) -> None:
    def refuse(path: Path, text: str) -> Path:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("onechip.api._report.write_text_atomic", refuse)
    (tmp_path / RUN_FILES["requests"]).write_text("")
    code, _, err = run("cost", "--run", str(tmp_path), "--chip", "v5e-1", "--output-tok-per-s", "100", "--write")
    assert code == 1 and _one_line(err) == f"error: {tmp_path / 'cost.json'}: Permission denied"


def test_demo_out_in_a_read_only_directory_is_one_line(run, tmp_path: Path, monkeypatch) -> None:
    # the tests run as root, for whom chmod does not refuse: the OS's answer is raised where mkdir runs
    target = tmp_path / "ro" / "sub"
    real_mkdir = Path.mkdir

    def mkdir(self: Path, *args: object, **kwargs: object) -> None:
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", mkdir)
    monkeypatch.setattr("onechip.engines.model_store.ensure_model", lambda: pytest.fail("demo started"))
    code, _, err = run("demo", "--out", str(target))
    assert code == 1 and _one_line(err) == f"error: {target}: Permission denied"


def test_demo_out_under_a_file_is_one_line(run, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    code, _, err = run("demo", "--out", str(tmp_path / "f" / "sub"))
    assert code == 1 and _one_line(err) == f"error: {tmp_path / 'f' / 'sub'}: Not a directory"


def test_up_with_a_launcher_that_does_not_exist_is_one_line(run) -> None:
    code, _, err = run("up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4",
                       "--launcher", "/nonexistent/vllm serve")  # fmt: skip
    # was exit 1, 'error: /nonexistent/vllm: No such file or directory', naming no option (the launch itself failed)
    assert code == 2 and _one_line(err) == (
        "error: --launcher /nonexistent/vllm: no such program on PATH (or not an executable file)"
    )


def test_launcher_is_split_like_a_shell_line() -> None:
    options = ServeOptions(launcher="'/opt/my vllm/bin/vllm' serve")
    target = startup.serve_target(embedded_plan(), "vllm", launcher=options.launcher)
    assert target.launcher == ["/opt/my vllm/bin/vllm", "serve"]
    with pytest.raises(ValueError, match="No closing quotation"):
        ServeOptions(launcher="'/opt/my vllm")


# --- progress off a terminal, redaction, logs after down, help


def test_plain_progress_prints_each_step_and_a_heartbeat_every_10_s() -> None:
    now = [0.0]
    lines: list[str] = []
    plain = PlainProgress(lines.append, every_s=10.0, clock=lambda: now[0])
    plain(ProgressEvent("check", "smoke: running", done=0, total=2))
    plain(ProgressEvent("check", "smoke: probe 1", done=0, total=2))  # same step, within 10 s: quiet
    now[0] = 3.0
    plain(ProgressEvent("check", "determinism: running", done=1, total=2))
    now[0] = 14.0
    plain.tick()  # nothing for 11 s: say it is still running
    assert lines == [
        "[check] smoke: running (0/2) [0 s]",
        "[check] determinism: running (1/2) [3 s]",
        "[check] determinism: running (1/2) [14 s] still running",
    ]


def test_plain_progress_prints_a_boot_wait_every_10_s_not_every_poll() -> None:
    """A boot's progress is its elapsed seconds against the timeout (engines/local.py), polled every 0.5 s: each
    poll moved `done`, so a plain log printed '(9.70579/600)' twice a second, 66 lines for a 29.5 s embedded
    boot (`onechip up` piped, 2026-12-04). Seconds are no step: a line at a new stage message or every 10 s."""
    now = [0.0]
    lines: list[str] = []
    plain = PlainProgress(lines.append, every_s=10.0, clock=lambda: now[0])
    for i in range(60):
        now[0] = 0.1 + 0.5 * i
        plain(ProgressEvent("boot", "engine booting (starting)", 0.1 + 0.5 * i, 600))
    plain(ProgressEvent("boot", "engine ready", 29.6, 29.6))
    assert lines == [
        "[boot] engine booting (starting) (0/600) [0 s]",
        "[boot] engine booting (starting) (10/600) [10 s]",
        "[boot] engine booting (starting) (20/600) [20 s]",
        "[boot] engine ready (30/30) [30 s]",
    ]


def test_secrets_are_redacted_by_source(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "plainvalue42")  # no known shape: redacted because of its name
    token_file = tmp_path / "token"
    token_file.write_text("justsomewords-xyz\n")
    token_file.chmod(0o600)
    read_hf_token(token_file)  # a value read from a token file is a secret from now on
    assert redact("a plainvalue42 b justsomewords-xyz c") == "a *** b *** c"


def test_logs_after_down_still_shows_the_file(run, tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text("INFO started\nINFO ready\n")
    engine_state_store.save(engine_state(log_path=str(log)))
    assert run("down")[0] == 0
    code, out, _ = run("logs")
    assert code == 0 and out.splitlines() == ["INFO started", "INFO ready"]


def test_logs_redacts_the_token_of_the_file_up_read(run, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("tokenwithoutashape123\n")
    log = tmp_path / "engine.log"
    log.write_text("INFO using token tokenwithoutashape123\n")
    engine_state_store.save(engine_state(log_path=str(log)))
    engine_state_store.note_token_file(token_file)  # what `up --hf-token-file` records (the path only)
    saved = engine_state_store.state_path().read_text()
    assert "tokenwithoutashape123" not in saved and str(token_file) in saved
    code, out, _ = run("logs")
    assert code == 0 and out.splitlines() == ["INFO using token ***"]


def test_help_shows_no_bool_metavar_and_names_arguments_in_upper_case(run) -> None:
    os.environ["COLUMNS"] = "200"
    try:
        code, out, _ = run("plan", "--help")
    finally:
        del os.environ["COLUMNS"]
    ours = [line for line in out.splitlines() if "--help" not in line]  # typer's own --help keeps its <bool>
    assert code == 0 and not any("<bool>" in line for line in ours)
    assert "{MODEL}" in out and "{model}" not in out


def test_no_stale_spinner_line_is_left_after_an_error(monkeypatch) -> None:
    screen = StringIO()
    monkeypatch.setattr(render, "console", Console(file=screen, force_terminal=True, width=80))
    with pytest.raises(ConfigError), render.live_progress() as on_progress:
        on_progress(ProgressEvent("demo", "stage: boot"))
        raise ConfigError("boom")
    # a transient live display erases its last frame when it stops: the spinner's text is not left last
    assert "stage: boot" not in screen.getvalue().rsplit("\x1b[2K", 1)[-1]
