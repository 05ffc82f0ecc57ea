"""The writer of a local engine's log: a process of its own between the engine's stdout+stderr and engine.log, which
copies the engine's output to the log with every secret redacted (errors.lines_redactor: a line at a time, in order,
so a private key's PEM body printed a line at a time is hidden too, as serve.sh's filter hides it), so the file on
disk never holds one. `logs` redacted on read, but the engine prints what it is given: vLLM before 0.34.0 logs every
CLI argument ('non-default args: {...}', an `--api-key` whole; vllm/entrypoints/common/startup.py redacts it from
0.34.0), a launcher's `env` or a crash dumps the environment, where the Hugging Face token and VLLM_API_KEY are.

    python -m onechip.logpump SYNC_IN SYNC_OUT   < engine output  >> engine.log

Run by engines.local.LocalVllmEngine; it lives at the package's top so that its start imports onechip.errors alone
(onechip.engines imports pydantic and httpx: a second or more before the first line is written). The secrets it
knows are its environment's (the engine's: HF_TOKEN, VLLM_API_KEY, any named as one), read once at its start.

It copies whole lines (ended by '\\n', '\\r\\n' or '\\r', a progress bar's), redacted whole, and what is left at the end
of its input. The last whole line of a read waits for the next read's first, which may finish a secret a wrap cut
(errors.LinesRedactor.held), at most errors.HOLD_AHEAD_S where none comes, or to a sync or the input's end. Of a line
without an end it writes, once LINE_MAX bytes of it are held or at a sync, all but its last SECRET_SPAN bytes (or the
longest known secret's) or more, held as they came, which may be the start of a secret its rest completes: a piece
redacted alone matched no secret, and a token written in two went to the disk whole; the cut falls where no secret
crosses it (_Copier._cut), else the part written ended with a secret's start and the part held began with its rest.
It runs until its input ends (every process holding the engine's output has exited), ignoring SIGINT, SIGTERM and
SIGHUP, so the engine's last lines as it stops are written; a write that fails (the disk full, the log's folder gone)
drops those lines and goes on: the engine is never stopped by its log. A byte on fd SYNC_IN asks it to write all the
engine has written so far (but the end of a line not ended, as above, while the engine's output is open; ENDED, sent
once the engine has exited, that too: its last line, the reason it died, which a process it left holding its output will
not end); it answers a byte on fd SYNC_OUT once written (sync): a caller that reads the log after the engine did
something (answered /health, exited) reads every line before it, not those the pump had not copied yet."""

from __future__ import annotations

import os
import re
import select
import signal
import sys
from collections import deque
from collections.abc import Iterable

from onechip.errors import HOLD_AHEAD_S, SECRET_SPAN_CHARS, crossing, known_secrets, lines_redactor, run_at_end

LINE_MAX = 1 << 16  # bytes of a line without an end held before it is written (a pipe's capacity on Linux: pipe(7))
# Bytes of a line without an end held back when the rest is written: longer than any secret a shape matches with its
# name (a Google OAuth access token is up to 2048 bytes: developers.google.com/identity/protocols/oauth2, Token size)
SECRET_SPAN = 4096
ENDED = b"!"  # the sync byte of a caller whose engine has exited (LogWriter.sync(ended=True)); any other: a sync
# a line's end, kept by split: a CRLF is one (as log_summary.read_lines reads it), so no empty line stands between a
# wrap's two lines for LinesRedactor to read ahead instead of the second; a '\r' alone is one too (a progress bar's)
_ENDS = re.compile(r"(\r\n|[\r\n])")


def readable(fds: list[int], timeout_s: float | None) -> list[int]:
    """Those of `fds` a read would not block on (data, or the end of a pipe) within `timeout_s` seconds (None: until
    one is). By poll(2), not select(2), whose fd_set takes no descriptor numbered FD_SETSIZE (1,024) or more: a process
    holding many files (an MCP server that started engines many times) passed the writer such sync descriptors, and
    select.select raised 'filedescriptor out of range in select()' (the writer died at its first wait)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(None if timeout_s is None else timeout_s * 1000)]


class _Copier:
    """The engine's output, from fd `source` to fd `sink`, redacted a whole line at a time."""

    def __init__(self, source: int, sink: int):
        self.source, self.sink = source, sink
        self.held = b""  # the start of a line whose end has not come
        self.after_cr = False  # the last read ended with a '\r': a '\n' the next starts with ends that line with it
        self.lines = lines_redactor()  # whole lines, in order: a PEM body printed a line at a time is hidden too
        self.ends: deque[str] = deque()  # the ends of the lines given to `lines` and not written yet (one held ahead)
        self.scrub = self.lines.scrub  # the start of a line written before its end (release): no line state
        self.span = max([SECRET_SPAN, *(len(value.encode("utf-8", "surrogateescape")) for value in known_secrets())])

    def read(self) -> bool:
        """Copy what one read of `source` gives. Returns False at its end (the rest written)."""
        data = os.read(self.source, LINE_MAX)
        if not data:
            self.flush()
            return False
        if self.after_cr and data.startswith(b"\n"):  # a CRLF the read cut: one line end, not a line of its own
            data = data[1:]
            if self.ends:  # its line is held ahead: written with its whole end
                self.ends[-1] += "\n"
            else:
                self._put(b"\n")
        text = self.held + data
        cut = max(text.rfind(b"\n"), text.rfind(b"\r")) + 1
        self._put(self._redacted_lines(text[:cut], ahead=True))
        self.held = text[cut:]
        self.after_cr = text.endswith(b"\r")
        if len(self.held) >= LINE_MAX:
            self.release()
        return True

    def waiting(self) -> bool:
        """Whether the last whole line read waits for the line after it (a wrap's rest in the next read)."""
        return self.lines.waiting is not None

    def release_ahead(self) -> None:
        """Write the last whole line read, redacted with no line after it: none came in HOLD_AHEAD_S, or a sync asks
        for all that was written."""
        self._put(self._ended(self.lines.release()))

    def drain(self) -> bool:
        """Copy all `source` holds now (never waits). Returns False at its end."""
        while readable([self.source], 0):
            if not self.read():
                return False
        return True

    def release(self) -> None:
        """Write the line held for its end, redacted, but its last `span` bytes or more, held still as they came: the
        start of a secret the rest of the line may complete (redacted with it; redacted now, its start long enough to
        match alone was '***', and the rest, read later, matched nothing: qa70b). The whole line before it first."""
        self.release_ahead()
        text = self.held.decode("utf-8", "surrogateescape")
        cut = self._cut(text)
        self._put(self._scrubbed(text[:cut].encode("utf-8", "surrogateescape")))
        self.held = text[cut:].encode("utf-8", "surrogateescape")

    def _cut(self, text: str) -> int:
        """Where to cut `text`, a line without its end, into the part written and the part held: at least `span`
        characters from its end, before the spaces before the run of characters the cut falls in (a secret of one run,
        a token or 'NAME=value', is held whole; in a run longer than SECRET_SPAN_CHARS, where it falls), and further
        back while a secret crosses it (errors.crossing: a bearer header's value, its words before the cut).
        0: all held."""
        cut = max(len(text) - self.span, 0)
        while cut > 0:
            run = len(run_at_end(text[:cut]))
            if run < SECRET_SPAN_CHARS:  # a run no longer than a secret: held whole, the spaces before it too
                cut = len(text[: cut - run].rstrip())
            if not crossing(text[:cut], text[cut:], self.lines.values, same_line=True)[1]:
                break
            if run == SECRET_SPAN_CHARS:  # inside a longer run (a progress bar's dots), a secret across the cut
                cut -= run
        return cut

    def flush(self) -> None:
        """Write the line held for its end, redacted (the end of the input: nothing more will come)."""
        self._put(self._redacted_lines(self.held))
        self.held = b""

    def _redacted_lines(self, data: bytes, ahead: bool = False) -> bytes:
        """`data`, lines each ended by '\r\n', '\n' or '\r' (a progress bar's, as the host's filter's tr) but the last,
        redacted in order (errors.LinesRedactor), their ends kept; `ahead`: the last line (`data` ends with its end)
        kept back for the line after it (LinesRedactor.held: a wrap's rest in the next read)."""
        parts = _ENDS.split(data.decode("utf-8", "surrogateescape"))
        lines = parts[:-1:2] + ([parts[-1]] if parts[-1] else [])  # after the last end: a line where text is there
        self.ends.extend([*parts[1::2], ""][: len(lines)])
        return self._ended(self.lines.held(lines) if ahead else self.lines.each(lines))

    def _ended(self, lines: Iterable[str]) -> bytes:
        """`lines` redacted, each with its end, as bytes."""
        text = "".join(line + self.ends.popleft() for line in lines)
        return text.encode("utf-8", "surrogateescape")

    def _scrubbed(self, data: bytes) -> bytes:
        return self.scrub(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    def _put(self, text: bytes) -> None:
        try:
            while text:
                text = text[os.write(self.sink, text) :]
        except OSError:  # ENOSPC, EIO: these lines are lost, the engine goes on
            return


def main(argv: list[str] | None = None) -> None:
    """Copy stdin to stdout, redacted, until stdin ends; answer syncs (fd argv[0] in, argv[1] out)."""
    sync_in, sync_out = (int(word) for word in (sys.argv[1:] if argv is None else argv))
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    copier = _Copier(sys.stdin.fileno(), sys.stdout.fileno())
    watched = [copier.source, sync_in]
    while True:
        ready = readable(watched, HOLD_AHEAD_S if copier.waiting() else None)
        if not ready:  # no line came after the last in that time: it is written as it is
            copier.release_ahead()
        elif sync_in in ready:
            asked = os.read(sync_in, 64)
            open_ = copier.drain()  # at the end of the input, the line not ended (its last before it died) too
            if ENDED in asked:
                copier.flush()
            else:
                copier.release()
            if not asked:  # the caller is gone (its `up` returned): no more syncs
                watched.remove(sync_in)
            else:
                try:
                    os.write(sync_out, b"." * len(asked))
                except OSError:
                    pass
            if not open_:
                return
        elif not copier.read():
            return


if __name__ == "__main__":
    main()
