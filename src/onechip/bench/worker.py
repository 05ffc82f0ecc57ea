"""Client workers: one repetition's share of a cell's streams, one `RequestSample` per request as it ends.

`run_job` runs a `RepJob` in the calling process (the default, `workers=1`). `WorkerPool` runs jobs in
worker processes (`WORKER_ARGV`): each reads RepJob JSON lines on stdin and writes one sample
JSON line per finished request on stdout, then `DONE` (and ends a job's streams on a `STOP` line: the pool counts the
rep's failures in a row over every worker, FailsInRow). A cell's streams are split round-robin across
workers so that no client process is the bottleneck (one process costs ~10-12 us of CPU per streamed token,
80-130k tok/s, `python benchmarks/client_ceiling.py`); the stdin/stdout protocol lets a worker run elsewhere.

Times are `time.perf_counter` seconds, i.e. CLOCK_MONOTONIC, one clock for every process of a Linux host, so
samples from local workers line up. A worker on another host would need its clock offset measured first.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import IO, Any

import aiohttp

from onechip.bench import agent
from onechip.bench.client import Count, data_session, stream_chat_timed
from onechip.bench.prompts import build_content
from onechip.errors import OnechipError, redact
from onechip.procs import die_with_parent
from onechip.schemas.bench import RepJob, RequestSample, StreamOutcome
from onechip.vllm.wire import bench_chat_body, user_message

Emit = Callable[[RequestSample], None]
Gate = Callable[[], Awaitable[float]]
_DONE, _WARM, _GO, _STOP = b"DONE", b"WARM", b"GO", b"STOP"
# not `-m onechip.bench.worker`: the package imports this module first and runpy warns on every start
WORKER_ARGV = [sys.executable, "-c", "from onechip.bench.worker import main; main()"]
_GO_LEAD_S = 0.01  # the shared start of the measured requests is this far ahead, so every worker hears of it in time
_MAX_LINE_BYTES = 1 << 28  # a sample holds one float per chunk: 8k tokens is ~200 KB
# a job's closed-loop streams stop once this many of its requests failed in a row, none ok between: GuideLLM judges a
# run's errors over windows of 30 requests (settings.constraint_error_window_size and constraint_error_min_processed,
# scheduler/constraints/error.py); a server failing requests at random at the half that fails a cell (runner) fails
# 30 in a row with a chance of 2**-30 (~1e-9) at each request, so only one that fails them all (down, a 404 model,
# a 500 at once) stops a cell, which otherwise resent at once from every stream for all of --duration-s
FAILS_TO_STOP = 30


def first_line(tag: str | None, stream: int, seq: int) -> str:
    """The unique first line of request `seq` of `stream` ("" without a tag): what differs comes first (the
    fixed-width numbers, then the rep's tag), so two requests share no more than the chat template's own
    prefix; fixed width, so its token count is the same for every request of a rep."""
    return "" if tag is None else f"{stream:05d}-{seq:06d}:{tag}."


def prompt_for(job: RepJob, stream: int, seq: int) -> str:
    """The user message of request `seq` of `stream`: its first line, then the job's filler words."""
    return build_content(first_line(job.prompt_tag, stream, seq), job.filler_words)


async def _now() -> float:
    return time.perf_counter()


class FailsInRow:
    """One repetition's requests failed in a row, none ok between, counted as they end over all its streams (in this
    process, or by WorkerPool over every worker's): the stop rule (FAILS_TO_STOP)."""

    def __init__(self) -> None:
        self.count = 0
        self.stopped = False

    def add(self, sample: RequestSample) -> bool:
        """Count `sample` (an ok one ends the run); True from the FAILS_TO_STOP-th on. The sample that reached the
        count says so (`stopped_streams`: its repetition was cut short, runner fails the cell)."""
        self.count = 0 if sample.status == "ok" else self.count + 1
        if self.count >= FAILS_TO_STOP and not self.stopped:
            self.stopped = sample.stopped_streams = True
        return self.stopped


class _Streams:
    """One job's streams on one aiohttp session: numbered requests, warm-up, closed and open loop."""

    def __init__(
        self, job: RepJob, http: aiohttp.ClientSession, emit: Emit, t0: float, stop: asyncio.Event | None = None
    ):
        self.job, self.http, self.emit, self.t0 = job, http, emit, t0
        self.seqs = dict.fromkeys(job.streams, 0)
        self.counting: set[asyncio.Task[None]] = set()  # answers without usage being counted (see finish)
        self.emitting: dict[int, asyncio.Task[None]] = {}  # by stream: the task emitting its latest sample
        self.fails = FailsInRow()  # the job's own count (see failing), unless `stop` says the rep's
        self.stop = stop

    @property
    def stopped(self) -> bool:
        return self.fails.stopped if self.stop is None else self.stop.is_set()

    async def request(
        self,
        stream: int,
        warmup: bool,
        intended: float | None = None,
        messages: list[Any] | None = None,
        shape: tuple[int, int, int] | None = None,
        **at: int,
    ) -> tuple[RequestSample, Count | None]:
        """One request of `stream` (its next seq): the grid's prompt, or `messages` (agent; `at`: session,
        turn), or a trace entry's `shape` (filler words, output tokens, counted prompt tokens). Returns when the
        answer ended, with the Count of an answer without usage (client.stream_chat_timed), for `finish`."""
        job, seq = self.job, self.seqs[stream]
        self.seqs[stream] += 1
        output_tokens = job.output_tokens if shape is None else shape[1]
        if shape is not None:
            messages = user_message(build_content(first_line(job.prompt_tag, stream, seq), shape[0]))
            at = {**at, "prompt_tokens_target": shape[2], "output_tokens_target": shape[1]}
        body = bench_chat_body(
            job.model,
            prompt_for(job, stream, seq) if messages is None else messages,
            output_tokens,
            extras=job.extras,
            continuous_usage=job.continuous_usage,
            include_usage=job.include_usage,
        )
        o, count = await stream_chat_timed(self.http, job.base_url, body)
        return RequestSample.of(job, o, stream=stream, seq=seq, warmup=warmup, t_intended=intended, **at), count

    def finish(self, sample: RequestSample, count: Count | None) -> None:
        """Emit `sample`; one whose output must be counted (`count`) once counted, in a task, while its stream goes
        on (`counted` waits for the last of them). A stream's samples are emitted in the order its answers ended, so
        its `last_in_stream` sample is never stored before an earlier one (a resume trusts it to end the stream)."""
        before = self.emitting.get(sample.stream)
        if count is None and (before is None or before.done()):
            self.emit(sample)
            return

        async def emit_in_order() -> None:
            out = None if count is None else await count()
            if before is not None:
                await before
            if out is not None:
                sample.completion_tokens = out.completion_tokens
                sample.completion_tokens_from = out.completion_tokens_from
            self.emit(sample)

        task = self.emitting[sample.stream] = asyncio.create_task(emit_in_order())
        self.counting.add(task)
        task.add_done_callback(self.counting.discard)

    def failing(self, sample: RequestSample) -> bool:
        """Count `sample` in the job's requests failed in a row (FailsInRow); True from the FAILS_TO_STOP-th on: each
        closed-loop stream of the job ends after the request it has in flight. A job of a worker process counts
        nothing itself: WorkerPool counts the rep's samples over all its workers and sets `stop`."""
        return self.fails.add(sample) if self.stop is None else self.stop.is_set()

    async def counted(self) -> None:
        """Wait until every answer being counted is counted and emitted."""
        await asyncio.gather(*self.counting)

    def warming(self, n: int) -> bool:
        if self.job.warmup_s is not None:
            return time.perf_counter() < self.t0 + self.job.warmup_s
        return n < self.job.warmup_requests

    async def warm_up(self, stream: int) -> None:
        """Warm-up requests of `stream`, each sent when the last ends, after the wait a refusal asked (asked_wait_s);
        none after the job's requests failed FAILS_TO_STOP in a row (its measured requests then are one per stream)."""
        n = 0
        while self.warming(n) and not self.stopped:
            sample, count = await self.request(stream, warmup=True)
            n += 1
            self.failing(sample)
            sample.waited_s = asked_wait_s(sample, self.job.request_timeout_s)
            self.finish(sample, count)
            await asyncio.sleep(sample.waited_s)

    async def closed_loop(self, stream: int) -> None:
        """Measured requests of `stream`, each sent when the last ends (after the warm-up and the gate) and after the
        wait a refusal asked (asked_wait_s, `waited_s`): a wait reaching past --duration-s ends the stream there, as
        FAILS_TO_STOP requests of the job failed in a row do."""
        job = self.job
        start, n = time.perf_counter(), 0
        while True:
            sample, count = await self.request(stream, warmup=False)
            n += 1
            wait_s = asked_wait_s(sample, job.request_timeout_s)
            if job.duration_s is not None:  # after a wait past the end it would send nothing: it ends now
                more = time.perf_counter() + wait_s < start + job.duration_s
            else:
                more = n < job.requests_per_client
            more = not self.failing(sample) and more
            sample.last_in_stream, sample.waited_s = not more, wait_s if more else 0.0
            self.finish(sample, count)
            if not more:
                return
            await asyncio.sleep(sample.waited_s)

    async def sessions(self, stream: int) -> None:
        """Agent workload, after the warm-up (single-turn grid prompts: they warm the engine, not the shared
        prefix): `sessions_per_client` sessions of `turns` turns, each turn's prompt the whole history so far."""
        job = self.job
        assert job.prompt_tag is not None
        for session in range(job.sessions_per_client):
            history = [agent.system_prompt(job.prompt_tag, job.system_words)]
            for turn in range(job.turns):
                history.append(user_message(agent.user_text(stream, session, turn, job.user_tokens))[0])
                sample, count = await self.request(stream, False, None, list(history), session=session, turn=turn)
                last = session == job.sessions_per_client - 1 and turn == job.turns - 1
                sample.last_in_stream = self.failing(sample) or last
                sample.waited_s = 0.0 if sample.last_in_stream else asked_wait_s(sample, job.request_timeout_s)
                # a failed turn does not end the session: the history is replayed, not answered
                self.finish(sample, count)
                if sample.last_in_stream:
                    return
                history += agent.turn_history(stream, session, turn, job.call_tokens, job.result_tokens)
                await asyncio.sleep(sample.waited_s)  # the server's, apart from the user's think time
                if job.think_time_s and turn < job.turns - 1:
                    await asyncio.sleep(job.think_time_s)

    async def open_loop(self, arrivals_s: list[tuple[float, int]], gate: Gate) -> None:
        """Measured requests sent at their offsets from the gate's start (after the warm-up). The arrivals are a
        schedule of independent users: a refusal's Retry-After (kept in its sample) delays no later arrival, as a
        server's answer to one user does not make the next one arrive later, and a schedule held back by the server
        would hide its refusals as a slower rate (coordinated omission, DESIGN.md "Measuring right"). Nor does the
        schedule stop at FAILS_TO_STOP failures: it sends at most the rate asked, never at once after each failure."""
        await asyncio.gather(*(self.warm_up(i) for i in self.job.streams))
        left = dict.fromkeys(self.job.streams, 0)
        for _, stream in arrivals_s:
            left[stream] += 1
        cap = in_flight_cap(self.job)
        slots = asyncio.Semaphore(cap) if cap else contextlib.nullcontext()

        shapes = self.job.request_shapes

        async def gated(k: int, stream: int, intended: float) -> None:
            async with slots:  # a send waiting here for a free slot (a cap) is late: its slip is recorded
                shape = shapes[k] if shapes is not None else None
                sample, count = await self.request(stream, warmup=False, intended=intended, shape=shape)
            left[stream] -= 1
            sample.last_in_stream = left[stream] == 0
            self.finish(sample, count)

        start = await gate()
        tasks: list[asyncio.Task[None]] = []
        for k, (at, stream) in enumerate(arrivals_s):
            delay = start + at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(gated(k, stream, start + at)))
        await asyncio.gather(*tasks)


async def run_job(job: RepJob, emit: Emit, gate: Gate = _now, stop: asyncio.Event | None = None) -> None:
    """Run `job`'s streams against its server; call `emit` with each request's sample as it ends.

    Closed loop: each stream sends its next request when the last one ends, warm-up first (a count, or
    until `warmup_s` after the job starts); when every stream is warm, `gate()` gives the start time (now, or
    one shared by all workers, so that worker processes which started apart measure together), then measured
    requests (a count, or until `duration_s` after the start). Open loop (`arrivals_s`): after the warm-up,
    `gate()` gives the start time the same way and measured requests are sent at their offsets from it, at
    most in_flight_cap(job) in flight (none: no cap). The last request of each stream to end carries `last_in_stream`.
    Request failures become failed samples; nothing here raises for them. The closed-loop streams stop after
    FAILS_TO_STOP of the job's requests failed in a row, or, given `stop` (a worker process's job: the rep's count is
    WorkerPool's), once it is set.
    """
    t0 = time.perf_counter()
    connections = len(job.streams) if job.arrivals_s is None else in_flight_cap(job)
    async with data_session(job.base_url, connections, job.request_timeout_s) as http:
        streams = _Streams(job, http, emit, t0, stop)
        if job.arrivals_s is None:
            await asyncio.gather(*(streams.warm_up(i) for i in job.streams))
            await asyncio.sleep(max(0.0, await gate() - time.perf_counter()))
            loop = streams.sessions if job.workload == "agent" else streams.closed_loop
            await asyncio.gather(*(loop(i) for i in job.streams))
        else:
            await streams.open_loop(job.arrivals_s, gate)
        await streams.counted()


def asked_wait_s(outcome: StreamOutcome, timeout_s: float) -> float:
    """The wait, s, before the next request of the stream that sent `outcome` (or the probe's next try): what its
    refusal's Retry-After asked (RFC 9110 section 10.2.3: the client ought to wait that long before a follow-up
    request), at most `timeout_s`, the request timeout: a server asking longer than the user gives any one request is
    down more than busy, and a Retry-After of a day would hold a counted run that long; 0 without one."""
    return 0.0 if outcome.retry_after_s is None else min(outcome.retry_after_s, timeout_s)


def in_flight_cap(job: RepJob) -> int:
    """Open loop: the requests `job` has in flight at most: its max_in_flight, else one per stream; 0 = no cap."""
    return len(job.streams) if job.max_in_flight is None else job.max_in_flight


def split_streams(clients: int, workers: int) -> list[list[int]]:
    """Stream indices per worker, round-robin; never an empty share (fewer workers when clients < workers)."""
    n = min(clients, workers)
    return [list(range(w, clients, n)) for w in range(n)]


class WorkerPool:
    """Up to `size` worker processes, started as jobs first need them (a cell of 2 streams starts 2 of 8), each in
    its own session (Ctrl-C reaches only the parent, which kills them) and killed by the kernel if the parent dies
    (Linux PR_SET_PDEATHSIG)."""

    def __init__(self, size: int):
        self.size = size
        self._procs: list[asyncio.subprocess.Process] = []
        self._stderr: dict[int, IO[bytes]] = {}  # by pid: a file, so a chatty worker never blocks on a full pipe

    async def _start(self, needed: int) -> None:
        while len(self._procs) < min(needed, self.size):
            stderr = tempfile.TemporaryFile()
            proc = await asyncio.create_subprocess_exec(
                *WORKER_ARGV,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=functools.partial(die_with_parent, signal.SIGKILL),
                limit=_MAX_LINE_BYTES,
            )
            self._procs.append(proc)
            self._stderr[proc.pid] = stderr

    async def run(self, jobs: list[RepJob], emit: Emit) -> None:
        """Run job k on worker k (len(jobs) <= size), calling `emit` as samples arrive, until all are done.

        Raises OnechipError when a worker exits before finishing its job (with the end of its stderr).
        """
        await self._start(len(jobs))
        procs = self._procs[: len(jobs)]
        warm = 0
        fails = FailsInRow()  # the rep's, over every worker: each counting its own stopped at 30 x --workers

        def counted(sample: RequestSample) -> None:
            # an open-loop measured request (its intended send time) stops no schedule (_Streams.open_loop)
            if sample.t_intended is None and not fails.stopped and fails.add(sample):
                for p in procs:  # each worker's streams end after the request they have in flight
                    assert p.stdin is not None
                    p.stdin.write(_STOP + b"\n")
            emit(sample)

        async def one(proc: asyncio.subprocess.Process, job: RepJob) -> None:
            nonlocal warm
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(job.model_dump_json().encode() + b"\n")
            await proc.stdin.drain()
            while (line := await proc.stdout.readline()).strip() != _DONE:
                if not line:
                    await self._fail(proc)
                if line.strip() != _WARM:
                    counted(RequestSample.model_validate_json(line))
                    continue
                warm += 1
                if warm == len(procs):  # every worker is warm: one start for all streams and schedules
                    go = b"%b %r\n" % (_GO, time.perf_counter() + _GO_LEAD_S)
                    for p in procs:
                        assert p.stdin is not None
                        p.stdin.write(go)

        await asyncio.gather(*(one(p, j) for p, j in zip(procs, jobs, strict=True)))

    async def _fail(self, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        stderr = self._stderr[proc.pid]
        stderr.seek(0)
        tail = stderr.read().decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise OnechipError(f"bench worker pid {proc.pid} exited with {code} mid-job: {redact(tail[0])}")

    async def close(self) -> None:
        """Kill every worker and reap it (safe to call twice, and from a `finally` during cancellation)."""
        procs, self._procs = self._procs, []
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
        for proc in procs:
            await proc.wait()
            self._stderr.pop(proc.pid).close()


def main() -> None:
    """Worker process entry: RepJob JSON lines on stdin -> sample JSON lines, then DONE, on stdout.
    Every job writes WARM after its warm-up and waits for `GO <perf_counter start>` on stdin; a STOP line ends its
    closed-loop streams after their requests in flight (the rep's FAILS_TO_STOP, counted by WorkerPool)."""
    out = sys.stdout.buffer

    def emit(sample: RequestSample) -> None:
        out.write(sample.model_dump_json().encode() + b"\n")
        out.flush()

    lines: asyncio.Queue[bytes] = asyncio.Queue()
    stop = asyncio.Event()

    async def read() -> None:  # STOP at any time (the rep's failures: WorkerPool.run); jobs and GO in turn
        while line := await asyncio.to_thread(sys.stdin.buffer.readline):
            if line.strip() == _STOP:
                stop.set()
            else:
                await lines.put(line)
        await lines.put(b"")

    async def gate() -> float:  # say warm, wait for the shared start time
        out.write(_WARM + b"\n")
        out.flush()
        line = await lines.get()
        return float(line.split()[1])

    async def serve() -> None:
        reader = asyncio.create_task(read())
        while line := await lines.get():
            stop.clear()  # a STOP of the last rep sent as its job ended here comes before this job's line
            await run_job(RepJob.model_validate_json(line), emit, gate, stop)
            out.write(_DONE + b"\n")
            out.flush()
        await reader

    asyncio.run(serve())
