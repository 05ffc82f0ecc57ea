"""`plan --replicas N` and `up --replicas N --dry-run` print the same engine and router lines, byte for byte
(issue 23: a v5e-4 slice with 4 replicas, and two hosts), and `status --json` has the router and replicas."""

from __future__ import annotations

import json

import pytest

from factories import one_error_line
from onechip.engines import replicas

GEMMA = "google/gemma-4-E2B-it"


@pytest.mark.parametrize(
    "where",
    [["--chip", "v5e-4", "--replicas", "4"], ["--chip", "v5e-1", "--replicas", "2", "--host", "u@h1,u@h2"]],
)
def test_plan_and_up_dry_run_print_the_same_commands(run, monkeypatch, where):
    monkeypatch.setattr(replicas, "port_is_free", lambda port, reuse=True: True)
    monkeypatch.setattr(replicas, "port_available", lambda port, reuse=True: True)  # nor claimed
    rc, plan_out, _ = run("plan", GEMMA, "--launch", "vllm-docker", *where)
    assert rc == 0
    rc, up_out, _ = run("up", "--engine", "vllm-docker", "--model", GEMMA, *where, "--dry-run")
    assert rc == 0
    planned = plan_out.split("every command `up` runs:\n", 1)[1].splitlines()
    ran = up_out.split("commands:\n", 1)[1].splitlines()
    assert planned == ran and "vllm-router" in ran[-1]
    assert sum("docker run" in line for line in ran) == int(where[3])  # one engine per chip, or per host
    rc, as_json, _ = run("up", "--engine", "vllm-docker", "--model", GEMMA, *where, "--dry-run", "--json")
    assert json.loads(as_json)["replica_set"]["commands"] == ran


def test_up_with_a_replica_plan_runs_its_replicas_or_says_so(run, tmp_path, monkeypatch):
    """`up --plan P` of `plan --replicas 2 --json` (a v5e-4 split in two shares of 2 chips) ran one engine on one
    share, exit 0, the other half of the slice idle without a word, and `simulate --plan P` predicted one engine;
    now each asks for the plan's --replicas."""
    monkeypatch.setattr(replicas, "port_is_free", lambda port, reuse=True: True)
    monkeypatch.setattr(replicas, "port_available", lambda port, reuse=True: True)  # nor claimed
    rc, plan_json, err = run("plan", GEMMA, "--chip", "v5e-4", "--replicas", "2", "--json")
    assert rc == 0, err
    path = tmp_path / "plan.json"
    path.write_text(plan_json)
    up = ("up", "--engine", "vllm-docker", "--plan", str(path), "--dry-run")
    line = one_error_line(run, *up)
    assert (
        line == f"--plan {path} plans one of 2 replicas (made by `onechip plan --replicas 2`), not 1: give --replicas 2"
    )
    rc, out, err = run(*up, "--replicas", "2")
    assert rc == 0, err
    assert sum("docker run" in line for line in out.split("commands:\n", 1)[1].splitlines()) == 2
    # simulate predicted one engine of it the same way
    simulate = ("simulate", "--plan", str(path), "--contexts", "128", "--clients", "2", "--out", str(tmp_path / "p"))
    assert one_error_line(run, *simulate) == line
    rc, _, err = run(*simulate, "--replicas", "2")
    assert rc == 0, err


def test_status_json_names_the_router_and_each_replica_when_none_runs(run, tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    rc, out, _ = run("status", "--json")
    assert rc == 1 and json.loads(out)["router"] is None and json.loads(out)["replicas"] == []


@pytest.mark.parametrize("engine", ["vllm", "vllm-docker"])
def test_replica_ports_past_65535_are_one_line(run, engine):
    argv = ("up", "--engine", engine, "--model", GEMMA, "--chip", "v5e-4", "--replicas", "2", "--port", "65535")
    line = one_error_line(run, *argv, "--dry-run")
    assert (
        line
        == "--port 65535 with --replicas 2: replica 1 would listen on 65536, past 65535; give --port 65534 or lower"
    )


def test_a_container_on_the_routers_metrics_port_moves_the_metrics_port(run, monkeypatch):
    # replica 1 of --port 28999 is on 29000, vllm-router's default --prometheus-port (engines.router)
    monkeypatch.setattr(replicas, "port_is_free", lambda port, reuse=True: True)
    monkeypatch.setattr(replicas, "port_available", lambda port, reuse=True: True)  # nor claimed
    argv = ("up", "--engine", "vllm-docker", "--model", GEMMA, "--chip", "v5e-4", "--replicas", "2", "--port", "28999")
    rc, out, err = run(*argv, "--dry-run")
    assert rc == 0, err
    router = next(line for line in out.splitlines() if "vllm-router --host" in line)
    assert "--worker-urls http://127.0.0.1:28999 http://127.0.0.1:29000 " in router
    assert "--prometheus-port 29001 " in router


@pytest.mark.parametrize(
    ("command", "tp", "share"),
    [(["up", "--engine", "vllm-docker", "--model", GEMMA, "--dry-run"], 4, 2),
     (["up", "--engine", "vllm-docker", "--model", GEMMA, "--dry-run"], 1, 2), (["plan", GEMMA], 4, 2)],
)  # fmt: skip
def test_a_tensor_parallel_size_other_than_the_replicas_chips_is_refused(run, command, tp, share):
    # was exit 0: `up --chip v5e-4 --replicas 2 --tensor-parallel-size 4` pinned each replica to 2 chips
    # (TPU_VISIBLE_CHIPS=0,1) and ran `vllm serve --tensor-parallel-size 4` there, which cannot start (TP 1 left
    # one of its 2 chips idle); `deploy k8s` refused it, `plan` and `up` did not
    rc, _, err = run(*command, "--chip", "v5e-4", "--replicas", "2", "--tensor-parallel-size", str(tp))
    assert rc == 2 and err.strip().splitlines()[-1] == (
        f"error: tensor-parallel-size x pipeline-parallel-size is {tp}, but each replica gets {share} chip(s) "
        f"(v5e-4 over --replicas 2): leave out --tensor-parallel-size, or make the product {share}"
    )
