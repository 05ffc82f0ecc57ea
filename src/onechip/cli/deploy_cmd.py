"""`onechip deploy k8s`: write (and with --apply, create) the replica set's Kubernetes manifests."""

from __future__ import annotations

from typing import Any

import typer

from onechip import api
from onechip.cli.options import options_from
from onechip.cli.render import console, print_json, said
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import DeployK8sRequest

deploy_app = typer.Typer(name="deploy", help="The deployment as manifests for a cluster.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(deploy_app, name="deploy")


@deploy_app.command()
@options_from(DeployK8sRequest)
def k8s(as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."), **fields: Any) -> None:
    """vLLM Deployment (the planned flags) + Service + vllm-router (service discovery) or an InferencePool, for GKE."""
    result = api.deploy_k8s(build_request(DeployK8sRequest, fields))
    if as_json:
        print_json(result)
        return
    console.print(f"wrote {result.path}: {', '.join(result.objects)}", highlight=False)
    console.print(f"{result.replicas} vLLM pod(s), {result.chips_per_replica} chip(s) each; applied: {result.applied}")
    for note in result.notes:
        console.print(f"[yellow]note[/] {said(note)}", highlight=False)
