"""free_port() gives ports outside the kernel's ephemeral range: a port bind(0) gave, the kernel gives again to any
outgoing connection as its local port, and a server that binds it later without SO_REUSEADDR (vllm-router's
Prometheus exporter) failed with 'Address already in use' (test_replicas, about 1 run in 5 under load)."""

from __future__ import annotations

import socket
from pathlib import Path

from onechip.engines import local
from onechip.engines.local import free_port


def _ephemeral() -> range:
    # the source: the kernel's own setting (ip(7) ip_local_port_range: 'low high', the ports connect() and bind(0) draw)
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    return range(low, high + 1)


def test_free_ports_are_outside_the_ephemeral_range_and_distinct():
    ports = [free_port() for _ in range(50)]
    assert not [p for p in ports if p in _ephemeral()], ports
    assert all(1024 <= p <= 65535 for p in ports), ports
    assert len(set(ports)) == len(ports), ports  # one process never hands out a port twice while others remain


def test_a_free_port_binds_without_so_reuseaddr():
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # as vllm-router's exporter binds
        sock.bind(("127.0.0.1", port))


def test_without_the_kernels_range_a_free_port_is_still_given(monkeypatch):
    monkeypatch.setattr(local, "ephemeral_ports", lambda: None)  # not Linux: no /proc/sys
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
