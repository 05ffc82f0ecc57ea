"""A stand-in for `vllm serve` in unit tests: the same flags, /health, /v1/models, chat, /metrics, and a few
vLLM-shaped log lines. It reports whether HF_TOKEN reached its environment, never the value.

    python fake_vllm_server.py [--model M] [MODEL] --served-model-name NAME --host H --port P [other flags]
FAKE_VLLM_FAIL=1 makes it print the seed's v5e program-load failure and exit 1.
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _arg(name: str, default: str | None = None) -> str | None:
    argv = sys.argv[1:]
    return argv[argv.index(name) + 1] if name in argv else default


def _log(msg: str, level: str = "INFO") -> None:
    stamp = time.strftime("%m-%d %H:%M:%S")
    print(f"(APIServer pid={os.getpid()}) {level} {stamp} [fake.py:1] {msg}", flush=True)


def main() -> None:
    served = _arg("--served-model-name") or _arg("--model") or "model"
    port = int(_arg("--port", "8000") or 8000)
    _log("vLLM API server version 0.32.0")
    _log(f"token received: {'yes' if os.environ.get('HF_TOKEN') else 'no'}")
    if os.environ.get("FAKE_VLLM_FAIL"):
        print("RuntimeProgramAllocationFailure: Attempting to reserve 384.11M at the bottom of memory.")
        print(
            "That was not possible. There are 347.33M free, 0B reserved, and 347.33M reservable.", flush=True
        )
        sys.exit(1)
    _log("CPU KV cache size: 46,592 tokens, Maximum concurrency for 8,192 tokens per request: 5.69x")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, body: object, code: int = 200, ctype: str = "application/json") -> None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/health":
                self._send("", ctype="text/plain")
            elif self.path == "/v1/models":
                self._send({"data": [{"id": served}]})
            elif self.path == "/metrics":
                self._send("vllm:num_requests_running 0\n", ctype="text/plain")
            else:
                self._send({"error": "not found"}, 404)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            self.rfile.read(length)
            self._send(
                {
                    "choices": [{"message": {"role": "assistant", "content": "Hi there, how are you?"}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 6},
                }
            )

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    _log("Application startup complete.")
    server.serve_forever()


if __name__ == "__main__":
    main()
