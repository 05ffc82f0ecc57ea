"""`onechip check` against a server whose /v1/models answers garbage: one EndpointError naming the URL (the CLI
prints it on one line), never a traceback. Before vllm.wire: HTML, invalid JSON and a JSON list all crashed
with AttributeError or JSONDecodeError."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from onechip.checks import run_checks
from onechip.errors import EndpointError

HTML = b"<!DOCTYPE html><html><body>Welcome to nginx!</body></html>"


@contextmanager
def answering(body: bytes, ctype: str) -> Iterator[str]:
    """A server on 127.0.0.1 that answers every GET with 200, `body` and `ctype`; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize(
    ("body", "ctype", "what"),
    [
        (HTML, "text/html", "answered text/html, not JSON"),
        (b"{'data': [", "application/json", "answer is not valid JSON"),
        (b'[{"id": "m"}]', "application/json", "answer is a JSON list, not an object"),
        (b'{"data": {"id": "m"}}', "application/json", "answer has no `data` list of models"),
    ],
)
def test_garbage_from_v1_models_is_one_endpoint_error(body: bytes, ctype: str, what: str) -> None:
    with answering(body, ctype) as url, pytest.raises(EndpointError) as info:
        run_checks(url, only=["smoke"])
    msg = str(info.value)
    assert msg.startswith(f"{url}/v1/models: ") and what in msg and "\n" not in msg
