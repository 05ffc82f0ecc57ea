"""Loopback endpoints that are there but never give a whole answer, for bounding a client's total wait:

    silent()    accepts every connection and never sends a byte (a hung proxy, a half-dead server)
    trickle()   answers HTTP 200 headers, then one byte of a JSON body every `every_s`, never ending
    refused()   a URL on 127.0.0.1 where nothing listens (the port was bound, then closed): connection refused
    hangup(n)   reads each request, then closes the connection without a byte of answer; n[0] counts them

Each yields its base URL (http://127.0.0.1:PORT); only 127.0.0.1 is ever used.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def _serving(handle: Callable[[socket.socket], None]) -> Iterator[str]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()
        for conn in held:
            conn.close()


def silent() -> contextlib.AbstractContextManager[str]:
    """Accept, read nothing, answer nothing."""
    return _serving(lambda conn: None)


def trickle(every_s: float = 0.1) -> contextlib.AbstractContextManager[str]:
    """HTTP 200 headers, then '{' followed by one space every `every_s`, until the client goes."""

    def handle(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{")
            while True:
                time.sleep(every_s)
                conn.sendall(b" ")

    return _serving(handle)


def hangup(served: list[int]) -> contextlib.AbstractContextManager[str]:
    """Read the request, close the connection unanswered (a server that crashes on it); `served[0]` counts them."""

    def handle(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.recv(65536)
            served[0] += 1
            conn.close()

    return _serving(handle)


def refused() -> str:
    """A 127.0.0.1 URL whose port nothing listens on (bound by this process, then closed)."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
