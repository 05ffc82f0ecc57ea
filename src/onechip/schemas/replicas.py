"""N one-chip engines behind vllm-router: the router's command, and what `status` says of the router and of
each replica. The launch itself (engines.replicas.ReplicaSetLaunch) carries the engines' LaunchSpecs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from onechip.schemas.common import ResultModel

# vllm-router 0.1.17 `--policy` choices (`vllm-router --help`), less 'kv_aware': it routes on the ZMQ KV events
# of each worker (--kv-event-source), which onechip does not wire.
RouterPolicy = Literal["cache_aware", "round_robin", "power_of_two", "consistent_hash", "sticky_least_loaded", "random"]
# `--replicas` at most: `up`, `plan`, `cloud up`, `deploy k8s` and `simulate` (a bigger number is a typo, and N
# chips bill; a prediction is of a deployment the others can make)
MAX_REPLICAS = 64
# the policies sim.routing predicts (vllm-router 0.1.17's rules; the others are not modelled)
MODELLED_POLICIES: tuple[RouterPolicy, ...] = ("round_robin", "cache_aware", "random")


class RouterFlag(ResultModel):
    """One vllm-router flag with the reason it is there."""

    flag: str = Field(description="Router flag, e.g. '--policy'.")
    values: list[str] = Field(default_factory=list, description="Its values (several for --worker-urls).")
    reason: str = Field(description="Why the flag is there.")


class RouterCommand(ResultModel):
    """Exactly what runs in front of the replicas: the vllm-router argv, flag by flag, as one shell line."""

    policy: RouterPolicy = Field(description="Routing policy (--policy).")
    bind_host: str = Field(description="Address the router listens on (--host).")
    port: int = Field(description="Router port (--port): the URL every other command uses.")
    metrics_port: int = Field(description="Port of the router's Prometheus /metrics (--prometheus-port).")
    worker_urls: list[str] = Field(description="The replicas' URLs as the router reaches them.")
    flags: list[RouterFlag] = Field(default_factory=list, description="Router flags in command order.")
    argv: list[str] = Field(default_factory=list, description="The router command, word by word.")
    shell: str = Field(default="", description="The one shell line that runs it.")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}"


class RouterStatus(ResultModel):
    """The router `up --replicas` started."""

    url: str = Field(description="Router base URL (what bench, check and the clients use).")
    policy: str = Field(description="Routing policy.")
    pid: int | None = Field(
        default=None, description="Router process (and process-group) id; None before `up` started it."
    )
    alive: bool = Field(default=False, description="The router's process group exists.")
    healthy: bool = Field(default=False, description="GET /health on the router answered 200.")
    metrics_url: str | None = Field(default=None, description="The router's Prometheus endpoint.")
    log_path: str | None = Field(default=None, description="Router log on this machine.")


class ReplicaStatus(ResultModel):
    """One replica behind the router: where it is, whether it serves, what it holds and what it served."""

    index: int = Field(description="Replica number K (`logs --replica K`), from 0.")
    url: str = Field(description="Replica base URL as the router reaches it.")
    engine: str = Field(description="Engine kind, e.g. 'embedded-vllm-cpu'.")
    pid: int | None = Field(default=None, description="Local process-group id (the ssh tunnel's for a host).")
    container: str | None = Field(default=None, description="Docker container name (vllm-docker).")
    host: str | None = Field(default=None, description="SSH host; None = this machine.")
    alive: bool = Field(default=False, description="Its process group or container exists.")
    healthy: bool = Field(default=False, description="GET /health answered 200.")
    kv_cache_usage_perc: float | None = Field(
        default=None, description="vllm:kv_cache_usage_perc from its /metrics (0-1: share of KV blocks in use)."
    )
    requests_running: float | None = Field(default=None, description="vllm:num_requests_running.")
    requests_served: float | None = Field(
        default=None, description="vllm:request_success_total from its /metrics (finished requests)."
    )
    routed_requests: float | None = Field(
        default=None, description="vllm_router_processed_requests_total{worker=URL} from the router's /metrics."
    )
    in_rotation: bool | None = Field(
        default=None,
        description="Whether the router counts it healthy and sends it requests (vllm_router_worker_health{worker=URL} "
        "from its /metrics); None when the router's /metrics does not answer.",
    )
    prefix_cache_hit_share: float | None = Field(
        default=None, description="vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total (tokens)."
    )
    log_path: str | None = Field(default=None, description="Replica log on this machine.")
    note: str = Field(default="", description="Why it is not healthy, when it is not.")
