"""An agent driving `onechip mcp` as it would, hostile arguments included (mcpqa59)."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading

import anyio
import anyio.to_thread
from mcp import Client

from onechip.mcp import bridge
from onechip.mcp.bridge import run_job
from onechip.mcp.server import build_server


def test_a_cancelled_job_leaves_no_asyncio_traceback_in_the_server_log(caplog):
    """run_job interrupts a cancelled call's job where its thread is (bridge: KeyboardInterrupt, delivered
    asynchronously); a bench's event loop was often running a task nobody awaits there (aiohttp's write_bytes), which
    kept the interrupt as its exception, so each cancelled bench logged asyncio's 'Task exception was never retrieved'
    at ERROR with a 60-line traceback on the server's stderr, though the job stopped and kept its requests as meant.
    Here the job's loop runs such a task (spinning in Python, so the interrupt lands in it) when the call is
    cancelled."""
    build_server()  # what configures the server's loggers
    spinning = threading.Event()

    def job(on_progress):
        async def spin():
            spinning.set()
            while True:
                sum(range(100))

        async def main():
            task = asyncio.ensure_future(spin())  # noqa: RUF006 (unawaited on purpose, as aiohttp's write_bytes)
            await asyncio.sleep(3600)
            await task

        asyncio.run(main())

    async def go():
        with anyio.move_on_after(60):  # cancelled once the task spins
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_job, None, job)
                await anyio.to_thread.run_sync(spinning.wait)
                tg.cancel_scope.cancel()
        with anyio.fail_after(60):  # the job's thread has returned
            while bridge._running[0]:
                await anyio.sleep(0.05)

    with caplog.at_level(logging.ERROR):
        anyio.run(go)
        gc.collect()  # a task's unretrieved exception is logged when the task is collected
    logged = [r for r in caplog.records if r.name == "asyncio"]
    assert spinning.is_set() and not logged, [r.getMessage() for r in logged]


def test_a_client_that_sends_every_published_default_is_answered_as_if_it_sent_none():
    """Some clients fill in every argument the input schema gives a default for. An optional argument's published
    default is null, which is not sent (mcp.bridge.signature_of, server._given), so such a bench call is judged as the
    bare one: past validation, to the unreachable URL (port 9: nothing listens), where judging the defaults as typed
    flags refuses it ('turns shapes agent sessions: give workload agent too', `check allow: []` 'lists nothing'). An
    argument sent at its own default value is given, as a typed flag is (a resume refuses it when it differs)."""

    async def go():
        async with Client(build_server()) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            calls = {}
            for name, sent in (
                ("bench", {"base_url": "http://127.0.0.1:9"}),
                ("check", {"base_url": "http://127.0.0.1:9"}),
            ):
                props = tools[name].input_schema["properties"]
                defaults = {k: p["default"] for k, p in props.items() if "default" in p and k not in sent}
                calls[name] = await client.call_tool(name, {**defaults, **sent})
            return calls

    for name, result in anyio.run(go).items():
        said = result.content[0].text
        assert result.is_error and said.startswith("cannot reach http://127.0.0.1:9/v1/models"), (name, said)


# a name an agent sends by mistake for a tool, prompt or resource: an HF token in full (errors.HF_TOKEN_SHAPE)
TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"


def test_a_tool_prompt_or_resource_name_holding_a_secret_is_never_echoed_nor_logged(caplog):
    """The SDK answered an unknown tool 'Unknown tool: <name>' and logged "Tool '<name>' failed" at INFO, an unknown
    prompt 'Unknown prompt: <name>' with an ERROR traceback, an unknown resource with its URI in the error and the log,
    none redacted, where every refusal of onechip's own redacts what it echoes (a token sent as an argument's name is
    '***'). An unknown tool is now a tool error naming the tools there are; a prompt or resource (the server has none)
    an MCP error saying so; the name redacted and cut in each."""

    async def go():
        async with Client(build_server()) as client:
            tool = await client.call_tool(TOKEN, {})
            said = []
            for ask in (client.get_prompt(TOKEN), client.read_resource(f"file:///{TOKEN}")):
                try:
                    await ask
                except Exception as exc:  # noqa: BLE001 (what the client raises is what the agent is told)
                    said.append(str(exc))
            return tool, said

    with caplog.at_level(logging.INFO):
        tool, said = anyio.run(go)
    text = tool.content[0].text
    assert tool.is_error and text.startswith("no tool '***'; the tools: plan, up, status,"), text
    assert len(said) == 2 and all("***" in s for s in said), said
    logged = "\n".join(r.getMessage() + str(r.exc_info or "") for r in caplog.records)
    assert TOKEN not in text + "".join(said) + logged
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], logged
