"""The QA pass of the eighth session (2026-12-03), one regression test per finding, each failing before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize("command", ["check", "bench"])
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:abc",  # was internal error (InvalidURL: Invalid port: 'abc'), exit 1
        "http://127.0.0.1:99999",  # was exit 6, 'cannot reach ...: Connection refused'
        "localhost:8000",  # was exit 6, "unsupported protocol 'localhost://'"
        "notaurl",  # was exit 6, "Request URL is missing an 'http://' or 'https://' protocol"
        "ftp://127.0.0.1",
        "http://",  # was exit 6, 'cannot reach http:/v1/models'
        "http://127.0.0.1:0",
    ],
)
def test_a_url_that_names_no_server_is_bad_input(run, tmp_path: Path, command: str, url: str):
    line = one_error_line(run, command, url, "--out", str(tmp_path / "out"))
    assert "not a server URL: give http://HOST:PORT or https://HOST:PORT" in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:9", "https://example.com/v1/", "http://[::1]:8000"])
def test_a_server_url_is_taken_as_given(url: str):
    from onechip.schemas.common import server_url

    assert server_url(url) == url


LONG_NAME = "A" * 300  # over the 255 bytes a file name may have (NAME_MAX): Path.exists raises on Python 3.11


def test_an_out_dir_name_too_long_is_refused_before_anything(run, tmp_path: Path):
    # the refusal of an earlier run's directory called Path.exists, which raised ENAMETOOLONG inside the request's
    # validation: over MCP an 'Error executing tool' with the SDK's traceback logged
    line = one_error_line(run, "check", "http://127.0.0.1:9", "--out", str(tmp_path / LONG_NAME))
    assert line.startswith("Invalid value for '--out'") and "File name too long" in line, line


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("check", {"base_url": "http://127.0.0.1:9", "out_dir": LONG_NAME}),
        ("plan", {"model": LONG_NAME, "chip": "l4"}),  # mcp.tools._local_model asked Path.exists too
    ],
)
def test_a_name_too_long_is_one_line_over_mcp(monkeypatch, tmp_path: Path, tool: str, args: dict):
    import anyio
    from mcp import Client

    from onechip.mcp.server import build_server

    monkeypatch.chdir(tmp_path)  # the working folder is where MCP file arguments may lie

    async def go():
        async with Client(build_server(False)) as client:
            return await client.call_tool(tool, args)

    answer = anyio.run(go)
    text = " ".join(c.text for c in answer.content if hasattr(c, "text"))
    assert answer.is_error and "\n" not in text and "Error executing tool" not in text, text


def test_a_chip_named_twice_is_advised_once():
    # was two identical rows per deployment, each 'could flip, within the ranges, with' its own copy
    from onechip.api._predict import _deployments
    from onechip.schemas.requests import AdviseRequest

    request = AdviseRequest(model="gemma-4-E2B-it", chips=["v5e-1", "V5E-1", "trillium-1", "v6e-1"])
    assert _deployments(request) == [("v5e-1", 1, 1), ("v5e-1", 2, 1), ("v6e-1", 1, 1), ("v6e-1", 2, 1)]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["bench", "http://127.0.0.1:9", "--contexts", "16,16"],
            "Invalid value for '--contexts': contexts: names 16 twice",
        ),
        (
            ["bench", "http://127.0.0.1:9", "--clients", "1,4,1"],
            "Invalid value for '--clients': clients: names 1 twice",
        ),
    ],
)
def test_a_grid_value_named_twice_is_refused(run, tmp_path: Path, argv: list[str], said: str):
    # was measured once and listed in summary.json as many times as named: 4 identical cells for 16,16 x 1,1
    line = one_error_line(run, *argv, "--out", str(tmp_path / "out"))
    assert line.startswith(said), line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("value", "got"), [("4x", "(got '4x')"), ("A" * 5000, "... (5,002 characters))")])
def test_a_bad_duration_is_shown_once_and_cut(run, value: str, got: str):
    # was "a duration looks like 4h, 30m, 90s or 1h30m, got '4x' (got '4x')", and a 5,000-character value was
    # echoed whole once (the refusal's own '(got ...)' cuts it)
    line = one_error_line(
        run, "cloud", "up", "--chip", "v5e-1", "--project", "my-proj-123", "--max-run-duration", value
    )
    assert line.startswith(
        "Invalid value for '--max-run-duration': max_run_duration_s: a duration looks like 4h, 30m, "
    )
    assert line.endswith(got) and line.count("got") == 1 and len(line) < 300, line


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        # was 'give a throughput (--output-tok-per-s) or a run with a bench summary (--run)': it had one
        (["cost", "--chip", "v5e-1", "--run", "RUN"], "--run RUN: summary.json could not be read: "),
        # with a throughput the damaged run was ignored and the throughput priced, exit 0
        (["cost", "--chip", "v5e-1", "--output-tok-per-s", "5", "--run", "RUN"], "--run RUN: summary.json could not"),
        # was '--calibrate RUN: no bench summary.json there'
        (["simulate", "--plan", "PLAN", "--calibrate", "RUN", "--out", "OUT"], "--calibrate RUN: summary.json could"),
    ],
)
def test_a_damaged_summary_is_named_not_called_missing(run, tmp_path: Path, argv: list[str], prefix: str):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text("{garbage")
    plan = tmp_path / "plan.json"
    code, out, err = run("plan", "gemma-4-E2B-it", "--chip", "v5e-1", "--json")
    assert code == 0, err
    plan.write_text(out)
    where = {"RUN": str(run_dir), "PLAN": str(plan), "OUT": str(tmp_path / "out")}
    line = one_error_line(run, *(where.get(a, a) for a in argv))
    assert line.startswith(prefix.replace("RUN", str(run_dir))), line


def test_resuming_a_predicted_run_says_so(run, tmp_path: Path):
    # was "cannot resume DIR: base_url was 'http://predicted.v5e-1', now 'http://127.0.0.1:9'"
    plan, predicted = tmp_path / "plan.json", tmp_path / "predicted"
    code, out, err = run("plan", "gemma-4-E2B-it", "--chip", "v5e-1", "--json")
    assert code == 0, err
    plan.write_text(out)
    code, _, err = run("simulate", "--plan", str(plan), "--out", str(predicted))
    assert code == 0, err
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--resume", str(predicted))
    assert line == f"cannot resume {predicted}: it is a predicted run (onechip simulate), not a bench run"


@pytest.mark.parametrize("flag", [["--host", "0.0.0.0"], ["--port", "9999"], ["--token-file", "t"]])
def test_mcp_http_options_without_http_are_refused(run, monkeypatch, flag: list[str]):
    # were ignored: `onechip mcp --host 0.0.0.0` served stdio, exit 0, as if the flag had been taken
    from onechip.mcp import server

    monkeypatch.setattr(server, "serve", lambda *args: None)  # what would run: nothing is served in a test
    line = one_error_line(run, "mcp", *flag)
    assert line.startswith("--host, --port and --token-file set up the HTTP server: give --http too"), line


@pytest.mark.parametrize("content", ["HF_TOKEN=hf_SECRETVALUE123\n", "export HF_TOKEN hf_SECRETVALUE123\n"])
def test_a_token_file_holding_a_dotenv_line_is_refused(run, tmp_path: Path, content: str):
    # was read whole as the token ('HF_TOKEN=hf_...'), which the Hub refuses only once the engine boots
    token = tmp_path / "token"
    token.write_text(content)
    token.chmod(0o600)
    argv = ["up", "--engine", "vllm", "--model", "gemma-4-E2B-it", "--chip", "l4", "--hf-token-file", str(token)]
    line = one_error_line(run, *argv, "--dry-run")
    said = "its first line is not a bare token (it holds '=' or a space, as a .env line does); write the token alone"
    assert line == f"--hf-token-file {token}: {said}"
    assert "SECRETVALUE" not in line


@pytest.mark.parametrize(
    ("item", "said"),
    [
        # were dropped without a word: onechip writes --host and --port after the --set items
        ("host=0.0.0.0", "--set host: onechip writes --host itself; the engine binds where onechip reaches it"),
        ("--port=1", "--set port: onechip writes --port itself; use --port"),
        # was written after the positional model, which `vllm serve` takes instead, so the plan printed a --model
        # the engine ignores
        ("model=other/model", "--set model: onechip writes --model itself; the model is the command's MODEL argument"),
    ],
)
def test_set_of_a_flag_onechip_writes_is_refused(run, item: str, said: str):
    line = one_error_line(run, "plan", "gemma-4-E2B-it", "--chip", "l4", "--set", item)
    assert line.startswith(said), line


def test_demo_with_docker_and_no_host_pulls_on_this_machine(run, monkeypatch, tmp_path: Path):
    # was 'error: ssh localhost: ssh: connect to host localhost port 22: Connection refused': the pull went over
    # ssh to 'localhost' (and through sudo) while `up` runs docker here
    from onechip.engines import remote
    from onechip.errors import EngineError

    ran: list[tuple[str | None, str]] = []

    def pull(shell: remote.Shell, command: str, **_: object) -> str:
        ran.append((shell.target, command))
        raise EngineError("stop here: no docker in a test")

    monkeypatch.setattr(remote.Shell, "run", pull)
    argv = [
        "demo",
        "--engine",
        "vllm-docker",
        "--model",
        "gemma-4-E2B-it",
        "--chip",
        "l4",
        "--out",
        str(tmp_path / "d"),
    ]
    line = one_error_line(run, *argv, code=5)
    assert line == "stop here: no docker in a test"
    assert ran == [(None, "docker pull vllm/vllm-openai:v0.32.0")]


@pytest.mark.parametrize("value", ["http://127.0.0.1:abc", "notaurl"])
def test_an_hf_endpoint_that_names_no_server_is_one_line(run, monkeypatch, value: str):
    # 'http://127.0.0.1:abc' was internal error (ValueError: Port could not be cast to integer value), raised by
    # huggingface_hub's own import; 'notaurl' was said to be unreachable
    monkeypatch.setenv("HF_ENDPOINT", value)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    line = one_error_line(run, "plan", "org/model", "--chip", "l4")
    assert (
        line
        == f"HF_ENDPOINT={value!r}: not a server URL: give http://HOST:PORT or https://HOST:PORT, e.g. http://127.0.0.1:8000"
    )


def test_cost_of_a_policy_comparison_names_the_runs_inside_it(run, tmp_path: Path):
    # was 'give a throughput (--output-tok-per-s) or a run with a bench summary (--run)', with --run given: a
    # `--router-policies a,b` directory holds policies.json and one run per policy, no summary.json of its own
    (tmp_path / "policies.json").write_text("{}")
    line = one_error_line(run, "cost", "--chip", "v5e-1", "--run", str(tmp_path))
    assert line == (
        f"--run {tmp_path}: no bench summary there (summary.json) to price; a policy comparison keeps one run per "
        f"policy: --run {tmp_path}/<policy>"
    )
