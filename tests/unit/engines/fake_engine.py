"""A stand-in for the vLLM server process, for lifecycle tests: answers /health, and forks a grandchild
(as vLLM forks EngineCore) so tests can prove the whole process group goes away.

argv: PORT MODE   MODE = ok | die (exit 3 during boot) | hang (never healthy)
The grandchild's pid is printed to the log as 'grandchild=<pid>'.
"""

import http.server
import os
import sys
import time

port, mode = int(sys.argv[1]), sys.argv[2]
print("INFO 01-01 00:00:00 [fake.py:1] Initializing a V1 LLM engine (v9.9.9) with config", flush=True)
child = os.fork()
if child == 0:  # the grandchild: sleeps until killed
    while True:
        time.sleep(1)
print(f"grandchild={child}", flush=True)
if mode == "die":
    print("ValueError: boom during boot", flush=True)
    sys.exit(3)
if mode == "hang":
    while True:
        time.sleep(1)


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


KV_LINE = "CPU KV cache size: 1,024 tokens, Maximum concurrency for 512 tokens per request: 2.00x"
print(f"INFO 01-01 00:00:01 [fake.py:2] {KV_LINE}", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
