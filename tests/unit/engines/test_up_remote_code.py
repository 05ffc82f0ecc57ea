"""`onechip up` of a model whose config.json only its repository's code loads (the plan's 'remote-code' warning):
refused before anything starts unless the user adds --trust-remote-code, which onechip never adds itself; an MCP
call, which may not set that flag, is refused with a line that says so."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from onechip import api
from onechip.errors import ConfigError, RemoteCodeRefused
from onechip.mcp import tools
from onechip.progress import no_progress
from onechip.schemas.requests import UpRequest

# OpenGVLab/InternVL3-8B's config.json, abridged (tests/unit/planner/test_planner_models_users_bring.py has it whole):
# model_type 'internvl_chat', which neither transformers nor vLLM defines, loaded through its auto_map
CONFIG = {
    "architectures": ["InternVLChatModel"], "model_type": "internvl_chat", "torch_dtype": "bfloat16",
    "auto_map": {"AutoConfig": "configuration_internvl_chat.InternVLChatConfig"},
    "llm_config": {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
                   "num_key_value_heads": 4, "num_hidden_layers": 28, "max_position_embeddings": 32768,
                   "vocab_size": 151674},
}  # fmt: skip


@pytest.fixture
def checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    directory = tmp_path / "InternVL3-8B"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    header = json.dumps({"language_model.model.embed_tokens.weight": {"dtype": "BF16", "shape": [1],
                                                                      "data_offsets": [0, 2]}}).encode()  # fmt: skip
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0\0")
    return directory


def test_up_refuses_it_without_trust_remote_code(checkpoint: Path, tmp_path: Path) -> None:
    # the command `up` ran had no --trust-remote-code, so vLLM stopped at 'Failed to load the model config' after the
    # start; now it is refused first, in one line that says how to opt in
    with pytest.raises(RemoteCodeRefused) as info:
        api.up(UpRequest(engine="vllm", model=str(checkpoint), chip="h100"))
    message = str(info.value)
    assert "\n" not in message and message.endswith("add --set trust-remote-code")
    assert not (tmp_path / "home" / "engine" / "engine.json").exists()  # nothing started
    # a dry run shows the command, and the flag is on it only when the user sets it
    dry = api.up(UpRequest(engine="vllm", model=str(checkpoint), chip="h100", dry_run=True))
    assert dry.launch is not None and "--trust-remote-code" not in dry.launch.command.argv
    opted = api.up(UpRequest(engine="vllm", model=str(checkpoint), chip="h100", dry_run=True,
                             sets=["trust-remote-code"]))  # fmt: skip
    assert opted.launch is not None and "--trust-remote-code" in opted.launch.command.argv
    assert opted.plan is not None
    api._engines._refuse_remote_code(opted.plan, opted.launch.command.argv)  # opted in: not refused


def test_an_mcp_up_says_it_may_not_set_the_flag(checkpoint: Path) -> None:
    # the MCP tool's line named --set trust-remote-code, which refuse_programs refuses on an MCP call
    job = next(spec.job for spec in tools.TOOLS if spec.name == "up")
    request = tools.UpToolRequest(engine="vllm", model=str(checkpoint), chip="h100")
    with pytest.raises(ConfigError) as info:
        job(request, no_progress)
    message = str(info.value)
    assert not isinstance(info.value, RemoteCodeRefused) and "\n" not in message
    assert "an MCP call may not set --trust-remote-code" in message and "Failed to load the model config" in message
