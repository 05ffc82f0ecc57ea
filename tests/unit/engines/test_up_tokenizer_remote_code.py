"""A model whose tokenizer alone is the repository's own code (tokenizer_config.json's auto_map, as THUDM/glm-4-9b-chat
and moonshotai/Kimi-K2-Instruct publish it): `plan` warns ('remote-code') and `up` refuses without
--set trust-remote-code, as for a config.json of the repository's code (test_up_remote_code.py). vLLM 0.34.0 loads the
tokenizer through transformers' AutoTokenizer, which refuses such a tokenizer without trust_remote_code, and stops
at 'Failed to load the tokenizer ... consider ... the `--trust-remote-code` flag' (vllm/tokenizers/hf.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import one_element_checkpoint
from onechip import api
from onechip.errors import RemoteCodeRefused
from onechip.planner import plan_model
from onechip.planner.core import REMOTE_CODE
from onechip.schemas.requests import UpRequest

# THUDM/glm-4-9b-chat's config.json names as vLLM's own ChatGLMConfig reads them (no remote code for the config:
# planner.config.VLLM_CONFIG_MODEL_TYPES has chatglm), two layers
CHATGLM = {"architectures": ["ChatGLMModel"], "model_type": "chatglm", "hidden_size": 4096, "kv_channels": 128,
           "multi_query_attention": True, "multi_query_group_num": 2, "num_attention_heads": 32, "num_layers": 2,
           "padded_vocab_size": 151552, "seq_length": 131072, "torch_dtype": "bfloat16",
           "auto_map": {"AutoConfig": "configuration_chatglm.ChatGLMConfig"}}  # fmt: skip
# its tokenizer_config.json (abridged): ChatGLM4Tokenizer, which transformers does not have
GLM4_TOKENIZER = {"auto_map": {"AutoTokenizer": ["tokenization_chatglm.ChatGLM4Tokenizer", None]},
                  "tokenizer_class": "ChatGLM4Tokenizer", "model_max_length": 128000}  # fmt: skip


def _checkpoint(tmp_path: Path, tokenizer: dict | None) -> Path:
    directory = one_element_checkpoint(
        tmp_path / "glm-4-9b-chat", CHATGLM, ["transformer.embedding.word_embeddings.weight"]
    )
    if tokenizer is not None:
        (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    return directory


def _remote(plan) -> list[str]:
    return [w.message for w in plan.warnings if w.code == REMOTE_CODE]


def test_plan_warns_and_up_refuses_a_tokenizer_of_the_repositorys_code(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    model = _checkpoint(tmp_path, GLM4_TOKENIZER)
    (said,) = _remote(plan_model(str(model), "h100", "vllm-gpu"))
    assert "tokenizer_config.json's auto_map" in said and "tokenization_chatglm.ChatGLM4Tokenizer" in said
    with pytest.raises(RemoteCodeRefused) as info:
        api.up(UpRequest(engine="vllm", model=str(model), chip="h100"))
    message = str(info.value)
    assert "\n" not in message and "its tokenizer_config.json loads only" in message
    assert "'Failed to load the tokenizer'" in message and message.endswith("add --set trust-remote-code")
    assert not (tmp_path / "home" / "engine" / "engine.json").exists()  # nothing started
    opted = api.up(UpRequest(engine="vllm", model=str(model), chip="h100", dry_run=True, sets=["trust-remote-code"]))
    assert opted.launch is not None and "--trust-remote-code" in opted.launch.command.argv


@pytest.mark.parametrize(
    "tokenizer",
    [
        None,  # no tokenizer_config.json
        {"tokenizer_class": "ChatGLM4Tokenizer"},  # no auto_map: transformers' own lookup, no remote code asked
        # an auto_map beside a class transformers has (has_local_code): loaded without the repository's code
        {**GLM4_TOKENIZER, "tokenizer_class": "PreTrainedTokenizerFast"},
        {**GLM4_TOKENIZER, "tokenizer_class": "Qwen2TokenizerFast"},
    ],
    ids=["none", "no-auto-map", "pretrained-fast", "qwen2-fast"],
)
def test_a_tokenizer_transformers_loads_is_not_told(tmp_path, tokenizer) -> None:
    assert _remote(plan_model(str(_checkpoint(tmp_path, tokenizer)), "h100", "vllm-gpu")) == []


def test_a_hub_model_s_tokenizer_config_is_read(tmp_path, monkeypatch) -> None:
    # the Hub source reads tokenizer_config.json beside config.json (its 404: no tokenizer config, nothing told)
    import httpx
    import huggingface_hub
    from huggingface_hub.errors import RemoteEntryNotFoundError

    from onechip.planner import source

    files = {"config.json": CHATGLM, "tokenizer_config.json": GLM4_TOKENIZER}

    def download(repo_id: str, filename: str, **_: object) -> str:
        if filename not in files:
            request = httpx.Request("GET", f"https://huggingface.co/{repo_id}/resolve/main/{filename}")
            raise RemoteEntryNotFoundError("404 Entry Not Found", response=httpx.Response(404, request=request))
        (tmp_path / filename).write_text(json.dumps(files[filename]), encoding="utf-8")
        return str(tmp_path / filename)

    class Api:
        def __init__(self, **_: object) -> None:
            pass

        def get_safetensors_metadata(self, repo_id: str) -> object:
            tensor = type("T", (), {"shape": [1], "dtype": "BF16"})
            return type("M", (), {"files_metadata": {"model.safetensors": type("F", (), {"tensors": {
                "transformer.embedding.word_embeddings.weight": tensor}})}})  # fmt: skip

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(source, "check_hub_reachable", lambda *a, **k: None)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    assert source.from_hub("THUDM/glm-4-9b-chat").tokenizer_remote_code == "tokenization_chatglm.ChatGLM4Tokenizer"
    del files["tokenizer_config.json"]
    assert source.from_hub("THUDM/glm-4-9b-chat").tokenizer_remote_code is None
