"""planner/source.py: a Hub id that is neither local nor in the catalog fails fast and on one line when the
Hub cannot be reached (it took ~26 s of huggingface_hub retries offline), and still goes to the Hub when
the Hub answers. No test here needs the network: HF_ENDPOINT points at 127.0.0.1."""

from __future__ import annotations

import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from onechip.cli.main import main
from onechip.errors import ConfigError
from onechip.planner import source

UNKNOWN = "nosuch-owner/nosuch-model"  # not a directory here, not in catalog/models.json


@pytest.fixture(autouse=True)
def hub_env(monkeypatch):
    """Online mode, no proxy in the way of 127.0.0.1 (an ambient HF_HUB_OFFLINE=1 would change the path)."""
    import huggingface_hub.constants

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def closed_endpoint(monkeypatch) -> str:
    """HF_ENDPOINT at a 127.0.0.1 port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    return endpoint


def _run(capsys, *argv: str) -> tuple[int, str]:
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as info:
            main(list(argv))
    finally:
        signal.signal(signal.SIGTERM, previous)
    return int(info.value.code or 0), capsys.readouterr().err


def test_unreachable_hub_is_a_fast_one_line_error(capsys, closed_endpoint):
    started = time.monotonic()
    code, err = _run(capsys, "plan", UNKNOWN, "--chip", "v5e-1")
    elapsed_s = time.monotonic() - started
    assert code == ConfigError.exit_code == 2
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (
        f"model {UNKNOWN!r} is not a local directory or a catalog model with its tensors bundled, and the Hub could "
        "not provide it" in err
    )
    assert f": {closed_endpoint} cannot be reached (ConnectError" in err
    assert "Retry" not in err  # huggingface_hub's back-off never started
    # a refused connection is immediate; huggingface_hub alone backed off 1+2+4+8+8 = 23 s: 15 s lies far from both
    assert elapsed_s < 15


@pytest.mark.parametrize("name", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_offline_mode_never_asks_the_hub(capsys, closed_endpoint, monkeypatch, name):
    monkeypatch.setenv(name, "1")
    code, err = _run(capsys, "plan", UNKNOWN, "--chip", "v5e-1")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert (
        f"model {UNKNOWN!r} is not a local directory or a catalog model with its tensors bundled, and the Hub could "
        "not provide it" in err
    )
    assert f": {name} is set, so the Hub was not asked" in err


class _NoRepos(BaseHTTPRequestHandler):
    """A Hub stand-in that answers every path with 404 and remembers what was asked."""

    seen: list[str] = []

    def _not_found(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET = _not_found

    def log_message(self, *args: object) -> None:
        pass


def test_reachable_hub_is_still_asked_for_the_repo(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoRepos)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _NoRepos.seen = []
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint + "/")
    try:
        assert source.hub_endpoint() == endpoint  # trailing slash dropped, as huggingface_hub does
        with pytest.raises(ConfigError) as info:
            source.resolve(UNKNOWN)
    finally:
        server.shutdown()
        server.server_close()
    assert "the Hub could not provide it" in str(info.value) and len(str(info.value).splitlines()) == 1
    # the probe, then huggingface_hub's own request for config.json on the same endpoint
    assert _NoRepos.seen[0] == "HEAD /"
    assert any(f"/{UNKNOWN}/resolve/main/config.json" in line for line in _NoRepos.seen[1:])


def test_a_hub_id_the_catalog_bundles_no_weights_for_is_read_from_the_hub(monkeypatch):
    # was "catalog model 'Qwen3-0.6B' has no bundled tensor inventory; pass a local checkpoint directory or a Hub
    # id": the Hub id given was matched in catalog/models.json (no inventory) and never asked for (found by break7)
    entry = source.catalog_entry("Qwen/Qwen3-0.6B")
    assert entry is not None and not entry[1].inventory and entry[1].hub_id == "Qwen/Qwen3-0.6B"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoRepos)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _NoRepos.seen = []
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        with pytest.raises(ConfigError) as info:
            source.resolve("Qwen/Qwen3-0.6B")
    finally:
        server.shutdown()
        server.server_close()
    assert str(info.value).startswith(
        "model 'Qwen/Qwen3-0.6B' is not a local directory or a catalog model with its tensors bundled, and the Hub"
    )
    assert any("/Qwen/Qwen3-0.6B/resolve/main/config.json" in line for line in _NoRepos.seen[1:])
    # its catalog name alone still names the Hub id to pass
    with pytest.raises(ConfigError, match=r"or its Hub id \(Qwen/Qwen3-0\.6B\) to count weights"):
        source.resolve("qwen3-0.6b")


def test_a_model_with_whitespace_around_it_is_planned_as_the_name_inside(capsys, monkeypatch, tmp_path):
    # a copy-paste's space or newline: ' owner/name ' was refused by the Hub's repo-id rule ("Repo id must use
    # alphanumeric chars"); neither a Hub id nor a catalog name holds whitespace, so it is read without it
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)  # no path named like the padded id here
    for padded in (f" {UNKNOWN} ", f"{UNKNOWN}\n"):
        code, err = _run(capsys, "plan", padded, "--chip", "v5e-1")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"model {UNKNOWN!r} is not a local directory" in err and "HF_HUB_OFFLINE is set" in err
    code, err = _run(capsys, "plan", " SmolLM2-135M-Instruct ", "--chip", "l4")  # a catalog name, bundled weights
    assert code == 0, err
    # whitespace inside stays the Hub's one-line refusal
    code, err = _run(capsys, "plan", "nosuch-owner/nosuch model", "--chip", "v5e-1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "'nosuch-owner/nosuch model': not a local directory and not a Hub id: Repo id must use" in err


def test_an_existing_path_with_whitespace_around_it_is_kept_as_given(tmp_path, monkeypatch):
    from onechip.schemas.common import model_name

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ckpt ").mkdir()
    assert model_name("ckpt ") == "ckpt "  # a directory whose name ends in a space is that directory
    assert model_name(" ckpt ") == "ckpt"
    assert model_name("   ") == "   "  # all blank: the resolver's 'MODEL is empty'
