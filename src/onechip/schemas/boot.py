"""What an engine's boot looked like: timeline and the allocation facts its log reported."""

from __future__ import annotations

from pydantic import Field

from onechip.schemas.common import ResultModel, StoredResult
from onechip.schemas.replicas import ReplicaStatus, RouterStatus


class BootEvent(ResultModel):
    """One stage of an engine's boot timeline: its name, seconds since the process started and the log line."""

    name: str = Field(description="Stage name, e.g. 'process_start', 'weights_loaded', 'kv_cache_init', 'ready'.")
    t_s: float | None = Field(
        default=None, description="Seconds since the engine process started (None: the line had no time stamp)."
    )
    line: str | None = Field(default=None, description="The log line that marked it, if any.")


class BootRecord(StoredResult):
    """What one engine boot recorded (boot.json): how it was launched, when it became ready and what its log said
    it allocated (weights, KV cache, HBM), with the failure's one-line cause when it did not start."""

    engine: str = Field(description="Engine kind, e.g. 'embedded-vllm-cpu'.")
    engine_version: str | None = Field(default=None, description="Version the engine logged or /version reported.")
    model: str = Field(description="Model as served (the served model name).")
    model_path: str | None = Field(default=None, description="Local checkpoint directory the engine loaded.")
    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL, e.g. http://127.0.0.1:PORT.")
    pid: int | None = Field(default=None, description="Engine process id (also its process-group id).")
    command: list[str] = Field(default_factory=list, description="The launch command line (no secrets).")
    env: dict[str, str] = Field(default_factory=dict, description="Engine-specific env vars set (no secrets).")
    started_at: str | None = Field(default=None, description="ISO-8601 UTC wall time the process started.")
    ready_s: float | None = Field(default=None, description="Seconds from process start to a healthy /health.")
    weight_load_s: float | None = Field(default=None, description="Seconds the engine logged for loading weights.")
    weights_gib: float | None = Field(default=None, description="Weight memory the engine logged, GiB.")
    kv_cache_tokens: int | None = Field(default=None, description="KV cache size in tokens the engine logged.")
    max_concurrency: float | None = Field(default=None, description="Engine's 'Maximum concurrency' factor.")
    max_concurrency_context: int | None = Field(
        default=None, description="Tokens per request that max_concurrency was stated for."
    )
    hbm_gib: dict[str, float] = Field(
        default_factory=dict,
        description="TPU 'Memory statistics' line, GiB as printed: limit, limit_cap, used, avail (avail = KV pool).",
    )
    kv_cache_shape: list[int] | None = Field(
        default=None,
        description="TPU 'Init kv-cache' regular_attn_shape per block: (block, KV heads, K/V slots, head dim).",
    )
    kv_cache_gib: float | None = Field(
        default=None,
        description="KV cache memory the engine said it has, GiB: V1 'Available KV cache memory', V0 "
        "'available_kv_cache_memory', 'the rest of the memory reserved for KV Cache is' or 'kv_cache_size=', the CPU "
        "worker's 'Explicitly set (X/total) GiB for KV cache' / 'Auto set (X/total) GiB'.",
    )
    boots_in_log: int = Field(
        default=1,
        description="Boots the log holds (restarts, a crash loop, two logs pasted together); the rest of this record "
        "is read from the last (vllm.bootlog._boot_starts).",
    )
    kv_cache_needed_gib: float | None = Field(
        default=None,
        description="KV memory one max_model_len request needs, GiB, from the engine's refusal ('(X GiB KV cache is "
        "needed, which is larger than the available KV cache memory', vllm/v1/core/kv_cache_utils.py).",
    )
    estimated_max_model_len: int | None = Field(
        default=None,
        description="The max_model_len the engine says its KV pool holds, from the same refusal ('the estimated "
        "maximum model length is N').",
    )
    kv_cache_num_blocks: int | None = Field(
        default=None,
        description="KV cache blocks: TPU 'Init kv-cache' num_blocks (first group), GPU 'num_gpu_blocks is', "
        "V0 '# GPU blocks' / '# CUDA blocks' / '# tpu blocks' (the device each version names; not the CPU swap "
        "blocks after it).",
    )
    kv_cache_dtype: str | None = Field(default=None, description="TPU 'Init kv-cache' regular_attn_dtype.")
    kv_cache_groups: int | None = Field(
        default=None, description="TPU 'Hybrid KV cache layout: num_kv_cache_groups=N' (KV cache groups)."
    )
    fp8_kv_cache_dtype: str | None = Field(
        default=None, description="fp8 KV cache dtype the log says the engine was started with (non-default args)."
    )
    cuda_graph_estimated_gib: float | None = Field(
        default=None,
        description="CUDA-graph memory per GPU the engine estimated while sizing the KV pool, GiB: 'Estimated CUDA "
        "graph memory: X GiB total' (the V1 runner, 0.19+) or the closing 'CUDA graph pool memory: A GiB (actual), E "
        "GiB (estimated)' (the corpus's 0.22.1+ logs); the pool excludes it where "
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is on (the default from 0.20.0).",
    )
    cuda_graph_capture_gib: float | None = Field(
        default=None,
        description="CUDA-graph memory per GPU the capture took, GiB: the last 'Graph capturing finished in N secs, "
        "took X GiB' (the V2 runner's first one is its profiling capture, the second the engine's own).",
    )
    compile_s: float | None = Field(default=None, description="Seconds of compilation the engine logged.")
    failure_cause: str | None = Field(default=None, description="One-line cause of a failed boot, when recognised.")
    events: list[BootEvent] = Field(default_factory=list, description="Boot timeline.")
    logged: dict[str, str] = Field(
        default_factory=dict,
        description="The deployment the log names, as vLLM printed it (its 'non-default args' and 'with config:' "
        "lines, 'Resolved architecture'), the card's total memory per GPU and the card's name it printed: model, "
        "architecture, max_model_len, tensor_parallel_size, gpu_memory_utilization (a fraction, '0.9'), "
        "total_memory_gib (GiB), device_name ('NVIDIA_H200' as vLLM's kernel config file spells it, an nvidia-smi "
        "name, a TPU type 'v6e-1'), max_model_len_auto (the length was left to vLLM's auto-fit: '-1', 'auto' or "
        "'Auto-fit', as the log said so).",
    )
    warnings: list[str] = Field(default_factory=list, description="WARNING lines from the boot log.")
    errors: list[str] = Field(default_factory=list, description="ERROR lines / tracebacks from the boot log.")
    log_path: str | None = Field(default=None, description="Path of the full engine log.")


class EngineState(StoredResult):
    """What `onechip up` leaves in `<onechip home>/engine.json` for `status` and `down`."""

    engine: str
    pid: int = Field(description="Process id and process-group id of the engine.")
    pid_started: int | None = Field(
        default=None,
        description="When that process started, clock ticks after the host's boot (procs.start_ticks): a pid the "
        "kernel gave to another process since has another.",
    )
    base_url: str
    model: str
    started_at: str = Field(description="ISO-8601 UTC.")
    log_path: str
    boot_path: str | None = Field(default=None, description="boot.json written when the engine became ready.")
    mode: str = Field(default="process", description="'process' (local group), 'remote-process' or 'docker'.")
    host: str | None = Field(default=None, description="SSH target user@addr; None = this machine.")
    ssh_options: list[str] = Field(default_factory=list, description="ssh -o options used (no secrets).")
    remote_pid: int | None = Field(default=None, description="Process-group id of the engine on the SSH host.")
    remote_pid_started: int | None = Field(
        default=None,
        description="When that process started, clock ticks after the host's boot (field 22 of its /proc/<pid>/stat); "
        "None where the host has no /proc.",
    )
    remote_log: str | None = Field(default=None, description="Engine log path on the host.")
    container: str | None = Field(default=None, description="Docker container name.")
    container_id: str | None = Field(
        default=None,
        description="The container's id, as `docker run -d` printed it: what status, logs and down name (a container "
        "given that name later is another's); None until the run returned.",
    )
    ipc_dir: str | None = Field(
        default=None,
        description="Folder of the local vLLM engine's zmq IPC sockets (its VLLM_RPC_BASE_PATH), removed by `down`.",
    )
    tunnel_pid: int | None = Field(default=None, description="Local ssh -L tunnel process (its own group).")
    mirror_pid: int | None = Field(
        default=None,
        description="Local process (its own group) copying the host's engine log into log_path until `down`.",
    )
    tunnel_started: int | None = Field(
        default=None,
        description="When the tunnel process started, clock ticks after this machine's boot (procs.start_ticks): a "
        "pid the kernel gave to another process since has another, and is never signalled.",
    )
    mirror_started: int | None = Field(default=None, description="When the log mirror started, as tunnel_started.")
    log_writer_pid: int | None = Field(
        default=None,
        description="The local process (its own session) writing the engine's output to log_path, redacted "
        "(onechip.logpump): a local engine's, or the one of a host engine's log mirror; None for a record kept before "
        "it was.",
    )
    log_writer_started: int | None = Field(
        default=None, description="When the log writer started, clock ticks after this machine's boot, as pid_started."
    )
    token_file: str | None = Field(
        default=None, description="The --hf-token-file `up` read (its path, never its value): `logs` redacts its token."
    )
    sudo: bool = Field(default=False, description="docker commands need sudo on the host.")
    booting: bool = Field(
        default=False,
        description="Recorded as soon as the engine's process (container, remote process group) exists, before it "
        "answered: `up` was still waiting for it, or was killed (SIGKILL, OOM, a closed terminal) meanwhile.",
    )


class EngineStatus(ResultModel):
    """What `onechip status` reports: whether the engine `up` started is running and healthy, and for how long."""

    running: bool = Field(description="The engine's process group exists.")
    healthy: bool = Field(default=False, description="GET /health answered 200.")
    state: EngineState | None = None
    uptime_s: float | None = None
    note: str = ""
    router: RouterStatus | None = Field(
        default=None, description="With `up --replicas N`: the vllm-router in front (state then describes it)."
    )
    replicas: list[ReplicaStatus] = Field(default_factory=list, description="With `up --replicas N`: each engine.")
