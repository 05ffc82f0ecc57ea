"""`onechip up`, `status`, `down`: the embedded engine as a detached service."""

from __future__ import annotations

import typer

from onechip import api
from onechip.cli.render import console, live_progress
from onechip.schemas import BootRecord


def print_boot(boot: BootRecord) -> None:
    console.print(f"[bold green]ready[/] {boot.model} at {boot.base_url}  (vLLM {boot.engine_version}, "
                  f"healthy after {boot.ready_s} s)")
    if boot.kv_cache_tokens is not None:
        console.print(f"KV cache: {boot.kv_cache_tokens:,} tokens; max concurrency {boot.max_concurrency}x "
                      f"at {boot.max_concurrency_context:,} tokens per request")
    console.print(f"log: {boot.log_path}")


def register(app: typer.Typer) -> None:
    @app.command()
    def up(
        port: int = typer.Option(None, help="Port on 127.0.0.1 (default: a free one)."),
        kv_cache_space_gib: int = typer.Option(2, help="VLLM_CPU_KVCACHE_SPACE, GiB of KV cache."),
        timeout_s: float = typer.Option(600.0, help="Give up if not healthy after this many seconds."),
    ) -> None:
        """Start the embedded engine (vLLM-CPU + SmolLM2-135M-Instruct) in the background."""
        with live_progress(transient=True) as on_progress:
            boot = api.up(port=port, kv_cache_space_gib=kv_cache_space_gib, timeout_s=timeout_s,
                          on_progress=on_progress)
        print_boot(boot)

    @app.command()
    def status(json_out: bool = typer.Option(False, "--json", help="Print the status as JSON.")) -> None:
        """Is the engine from `onechip up` running and healthy? Model, URL, uptime."""
        st = api.status()
        if json_out:
            typer.echo(st.model_dump_json(indent=2))
        elif st.running and st.state:
            health = "[green]healthy[/]" if st.healthy else "[red]not healthy[/]"
            console.print(f"{health} {st.state.model} at {st.state.base_url} (pid {st.state.pid}, "
                          f"up {st.uptime_s:.0f} s)  log: {st.state.log_path}")
        else:
            console.print(f"not running: {st.note}")
        if not st.running or not st.healthy:
            raise typer.Exit(1)

    @app.command()
    def down() -> None:
        """Stop the engine from `onechip up`. Safe to run when nothing is running."""
        console.print(api.down().note)
