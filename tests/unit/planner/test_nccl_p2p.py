"""NCCL's P2P ring/tree buffers and vLLM's custom all-reduce buffers on peer-access hosts, engines.json `nccl_p2p`,
for the memory rules whose TP >= 2 figure was measured without peer access (GpuMemoryRule.tp_extra_peer_access).

Expected values come from the sources that rule cites: NVIDIA/nccl v2.21.5-1 src/transport/p2p.cc (p2pRecvSetup,
p2pSendSetup), src/include/comm.h (CUDA_IPC_MIN, ncclSendMem / ncclRecvMem padded to MEM_ALIGN), src/init.cc
(DEFAULT_LL_BUFFSIZE, DEFAULT_LL128_BUFFSIZE, DEFAULT_BUFFSIZE), src/include/device.h (the LL / LL128 constants);
the channel counts of vllm-project/vllm#9699 (8x H200) and NVIDIA/nccl#1781 (8x H20, 2 ranks); the vllm 0.7.3
wheel's vllm/distributed/device_communicators/custom_all_reduce.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from onechip.planner.gpu_memory import p2p_buffer_bytes, select_rule, tp_extra_bytes, tp_rule_for_chips
from onechip.planner.rules import accelerator, engine_rules
from onechip.schemas.common import GIB

ROOT = Path(__file__).resolve().parents[3]
BOOTLOGS = ROOT / "tests" / "fixtures" / "bootlogs"
RULES = engine_rules("vllm-gpu")
R1 = "h200x8-deepseek-r1-tp8-len128000-v073"

MIB = 1 << 20
NCCL_STEPS = 8  # src/include/device.h
LL = 8 * 512 * NCCL_STEPS * 16  # NCCL_LL_LINES_PER_THREAD x NCCL_LL_MAX_NTHREADS x steps x sizeof(ncclLLFifoLine)
LL128 = 120 * 640 * NCCL_STEPS * 8  # NCCL_LL128_ELEMS_PER_THREAD x NCCL_LL128_MAX_NTHREADS x steps x sizeof(uint64_t)
SIMPLE = 1 << 22  # init.cc '#define DEFAULT_BUFFSIZE (1 << 22) /* 4MiB */'
MEM_ALIGN = 4096  # comm.h: ncclSendMem / ncclRecvMem are unions with 'char pad[MEM_ALIGN]'
CUDA_IPC_MIN = 2_097_152  # comm.h '#define CUDA_IPC_MIN 2097152UL'
CUSTOM_AR = 2 * 8192 * 1024  # custom_all_reduce.py (0.7.3): two create_shared_buffer(max_size ...), meta_size apart


def _rule() -> Any:
    rule = next(r for r in RULES.nccl_p2p if not r.pcie)
    return rule


def _align(size: int) -> int:
    return -(-size // CUDA_IPC_MIN) * CUDA_IPC_MIN


def test_the_per_connection_bytes_are_nccl_2_21_5s() -> None:
    rule = _rule()
    assert rule.nccl_version == "2.21.5"
    assert tuple(rule.protocol_bytes) == (LL, LL128, SIMPLE) == (524_288, 4_915_200, 4_194_304)
    assert rule.connection_mem_bytes == MEM_ALIGN and rule.ipc_align_bytes == CUDA_IPC_MIN
    # p2pRecvSetup: 'recvSize = sizeof(struct ncclRecvMem)' + every protocol (no P2P read on Hopper), ALIGN_SIZE;
    # p2pSendSetup: 'sendSize = sizeof(struct ncclSendMem)', ALIGN_SIZE
    assert _align(MEM_ALIGN + LL + LL128 + SIMPLE) == 10 * MIB
    assert _align(MEM_ALIGN) == 2 * MIB
    # NCCL's user guide, P2P logging example (NVIDIA/nccl docs/userguide/source/troubleshooting/logging.rst at
    # 5067397c): 'Allocated shareable buffer 0x... size 10485760' and '... size 2097152', 'via P2P/CUMEM'
    assert (_align(MEM_ALIGN + LL + LL128 + SIMPLE), _align(MEM_ALIGN)) == (10_485_760, 2_097_152)


def test_the_channels_and_communicators_are_the_nvls_rules() -> None:
    # 24 channels: vllm#9699's 'nvlsPerRankSize 301989888' = 24 x 2 x 6 MiB (8x H200); NVIDIA/nccl#1781 logs
    # '24 coll channels' for 2 ranks of an 8x H20 (Hopper NVSwitch) host; the TP group's pynccl and torch communicators
    (nvls,) = RULES.nccl_nvls
    rule = _rule()
    assert rule.channels == nvls.channels == 24
    assert rule.communicators == nvls.communicators == 2
    assert rule.custom_allreduce_bytes == CUSTOM_AR
    assert rule.custom_allreduce_world_sizes == [2, 4, 6, 8]  # CustomAllreduce._SUPPORTED_WORLD_SIZES


@pytest.mark.parametrize(
    ("version", "chip", "tp", "expected"),
    [
        ("0.7.3", "h200", 8, 2 * 24 * 2 * (10 + 2) * MIB + CUSTOM_AR),  # 1.14 GiB: the R1 row's deployment
        ("0.7.3", "h100", 2, 2 * 24 * 1 * (10 + 2) * MIB + CUSTOM_AR),  # TP 2: ring and tree share the one peer
        ("0.7.3", "h100", 3, 2 * 24 * 2 * (10 + 2) * MIB),  # the custom all-reduce is off at world size 3
        ("0.6.4", "h200", 8, 2 * 24 * 2 * (10 + 2) * MIB + CUSTOM_AR),  # first release on torch 2.5.1
        ("0.8.5", "h200", 8, 2 * 24 * 2 * (10 + 2) * MIB + CUSTOM_AR),  # torch 2.6.0, still NCCL 2.21.5
        ("0.7.3", "h200", 1, 0),  # no communicator
        ("0.7.3", "rtx4090", 2, 0),  # no peer access there; channels of other boards not ruled
        ("0.7.3", "a100-80gb", 2, 0),  # not listed (no A100 figure at TP 8 read)
        ("0.6.3", "h200", 8, 0),  # NCCL 2.20.5: not ruled
        ("0.9.0", "h200", 8, 0),  # NCCL 2.26.2 connects at a collective's first use
        (None, "h200", 8, 0),  # the newest release
    ],
)
def test_which_deployments_hold_p2p_buffers(version: str | None, chip: str, tp: int, expected: int) -> None:
    size, rule = p2p_buffer_bytes(RULES.nccl_p2p, version, (chip, None), tp)
    assert size == expected
    assert (rule is not None) is bool(expected)


def test_only_the_rule_measured_without_peer_access_takes_them() -> None:
    # the V0 0.7.x figure is the 2x RTX 4090 log of vllm#13061 (no peer access); every other TP >= 2 figure came
    # from NVLink hosts (the 0.19.0 H100 sweep, PR #10511's H100, the llm-d H100 runs) and already holds them
    without = [r.versions.split(" (")[0] for r in RULES.memory_rules if not r.tp_extra_peer_access]
    assert without == ["V0 engine 0.7.x, and V0 runs of 0.8.0 - 0.10.x"]
    assert not select_rule(RULES.memory_rules, "0.7.3").tp_extra_peer_access
    assert select_rule(RULES.memory_rules, "0.19.0").tp_extra_peer_access


def _accuracy() -> tuple[Any, list[dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    return planner_accuracy, json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))


def test_the_r1_row_plans_the_p2p_buffers_and_says_so(tmp_path: Path) -> None:
    planner_accuracy, corpus = _accuracy()
    entry = next(e for e in corpus if e["name"] == R1)
    plan = planner_accuracy.predict(entry, tmp_path, out_of_sample=False)["plan"]
    (line,) = [w for w in plan.warnings if w.code == "nccl-p2p"]
    assert "NCCL 2.21.5" in line.message and "+3.33 GiB per GPU" in line.message
    assert "V0's logits gather (7 peers x 32 channels" in line.message
    (transport,) = [w for w in plan.warnings if w.code == "nccl-transport"]
    assert "+0.09 GiB per GPU" in transport.message  # the rule's own figure, the P2P and NVLS buffers apart
    # without peer access (--nccl-transport shm) neither the P2P buffers nor the NVLS buffers are planned
    shm = {**entry, "engine_args": {**entry["engine_args"], "nccl_transport": "shm"}}
    shm_plan = planner_accuracy.predict(shm, tmp_path, out_of_sample=False)["plan"]
    assert not [w for w in shm_plan.warnings if w.code in ("nccl-p2p", "nccl-nvls")]
    p2p = 2 * 24 * 2 * 12 * MIB + CUSTOM_AR + 7 * 32 * 10 * MIB  # rings and trees, custom all-reduce, the gather
    nvls = 2 * 24 * 6 * MIB * 8
    assert plan.memory_budget.non_torch_bytes - shm_plan.memory_budget.non_torch_bytes == p2p + nvls
    assert plan.memory_budget.non_torch_bytes / GIB == pytest.approx(5.83, abs=0.005)


def test_v0s_logits_gather_connects_p2p_channels_per_peer_at_its_destination() -> None:
    # NVIDIA/nccl v2.21.5-1 src/graph/paths.cc ncclTopoComputeP2pChannels: p2pnChannelsPerPeer =
    # nextPow2(min(min(nChannels, MAXCHANNELS 32), ncclTopoGetNchannels)); between NVLink peers ncclTopoGetNchannels
    # is 2 x (path bw / ncclTopoNVLinkBw(sm90) 20.6), 18 NVLinks through the NVSwitch: 36; over PCIe 2
    def next_pow2(n: int) -> int:
        return 1 << (n - 1).bit_length()

    nvswitch, pcie = _rule(), next(r for r in RULES.nccl_p2p if r.pcie)
    assert nvswitch.gather_channels_per_peer == next_pow2(min(min(nvswitch.channels, 32), 2 * 18)) == 32
    assert pcie.gather_channels_per_peer == next_pow2(min(min(pcie.channels, 32), 2)) == 2
    # the p5.48xlarge log (8x H100 SXM): '24 coll channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per
    # peer'; the 8x H800 log of engines.json (8 NVLinks, 16 channels) fits the same rule: 16 per peer
    assert next_pow2(min(16, 2 * 8)) == 16
    recv = _align(MEM_ALIGN + LL + LL128 + SIMPLE)
    for tp in (2, 4, 8):
        v1, _ = p2p_buffer_bytes(RULES.nccl_p2p, "0.7.3", ("h200", None), tp)
        v0, _ = p2p_buffer_bytes(RULES.nccl_p2p, "0.7.3", ("h200", None), tp, v0_gather=True)
        assert v0 - v1 == (tp - 1) * 32 * recv  # one receive buffer per channel and peer on the gathering rank
        v1, _ = p2p_buffer_bytes(RULES.nccl_p2p, "0.7.3", ("NVIDIA A10", None), tp, pcie=True)
        v0, _ = p2p_buffer_bytes(RULES.nccl_p2p, "0.7.3", ("NVIDIA A10", None), tp, pcie=True, v0_gather=True)
        assert v0 - v1 == (tp - 1) * 2 * recv
    assert p2p_buffer_bytes(RULES.nccl_p2p, "0.7.3", ("h200", None), 1, v0_gather=True) == (0, None)


def test_the_v1_row_on_pcie_takes_no_gather_term(tmp_path: Path) -> None:
    # the 4x A10 0.8.5 row runs the V1 engine, which all_gathers the logits (a collective on connected rings)
    planner_accuracy, corpus = _accuracy()
    entry = next(e for e in corpus if e["name"] == "a10x4-qwen3-30b-a3b-tp4-len8192-v085")
    plan = planner_accuracy.predict(entry, tmp_path, out_of_sample=False)["plan"]
    (line,) = [w for w in plan.warnings if w.code == "nccl-p2p"]
    assert "gather" not in line.message and "+0.19 GiB per GPU" in line.message


def test_no_other_tp2_plus_corpus_row_changes(tmp_path: Path) -> None:
    # every TP >= 2 GPU row: only R1 (vLLM 0.7.3, 8x H200) runs a release whose figure was measured without peer
    # access on a listed board, and the 4x A10 0.8.5 row a release whose NVLink figure is not taken off the H100 /
    # H200 boards; the H100 0.19.0 sweep's TP >= 2 figure was fitted on NVLink and keeps it
    planner_accuracy, corpus = _accuracy()
    held, seen = [], 0
    for entry in corpus:
        tp = entry["engine_args"].get("tensor_parallel_size") or 1
        chip = planner_accuracy.chip_of(entry)
        if tp < 2 or chip is None or accelerator(chip).kind != "gpu":
            continue
        seen += 1
        row = planner_accuracy.predict(entry, tmp_path, out_of_sample=False)
        plan = row.get("plan")
        if plan is not None and [w for w in plan.warnings if w.code == "nccl-p2p"]:
            held.append(entry["name"])
    assert seen >= 20 and sorted(held) == sorted([R1, "a10x4-qwen3-30b-a3b-tp4-len8192-v085"])


def test_off_the_measured_boards_the_0_8_figure_is_rebuilt_from_nccl_2_21_5(tmp_path: Path) -> None:
    # engines.json: the 0.8.x V1 TP >= 2 figure (2.82 GiB) was measured on H100 NVLink boards; on a PCIe card it
    # is the no-peer-access footprint (0.09 GiB) plus the PCIe nccl_p2p buffers: at TP 4, 2 communicators x
    # 4 channels x 2 peers x (10 + 2) MiB and no custom all-reduce (disabled above two PCIe-only GPUs)
    rule = select_rule(RULES.memory_rules, "0.8.5")
    transports = RULES.nccl_transports
    assert tp_rule_for_chips(rule, transports, ("h100", None)) == (rule, False)
    pcie_rule, pcie = tp_rule_for_chips(rule, transports, ("NVIDIA A10", "A10 PCIe"))
    assert pcie and not pcie_rule.tp_extra_peer_access
    assert pcie_rule.non_torch_tp_extra_bytes == next(t for t in transports if t.transport == "shm").fixed_bytes
    size, found = p2p_buffer_bytes(RULES.nccl_p2p, "0.8.5", ("NVIDIA A10", "A10 PCIe"), 4, pcie=True)
    assert found is not None and found.pcie
    assert size == 2 * 4 * 2 * 12 * 2**20
    assert p2p_buffer_bytes(RULES.nccl_p2p, "0.8.5", ("NVIDIA A10", None), 2, pcie=True)[0] == (96 + 16) * 2**20
    assert p2p_buffer_bytes(RULES.nccl_p2p, "0.9.0", ("NVIDIA A10", None), 4, pcie=True) == (0, None)


def test_off_the_measured_boards_the_0_11_term_is_the_tp4_log_total() -> None:
    # engines.json: the 0.11.0 - 0.15.x TP >= 2 figure (0.42 GiB) is the llm-d H100 80GB TP 2 run's, and those releases
    # take their snapshot after the pynccl communicators' init and warm-up (vllm/v1/worker/gpu_worker.py init_device,
    # 0.11.0 - 0.14.0 sdists), so it is what NCCL adds in profile_run over NVLink. Off those boards neither it nor the
    # no-peer-access footprint (0.09 GiB, measured under V0 0.7.x, whose snapshot came before NCCL's init: 0.7.3
    # vllm/worker/worker.py) is taken: the whole term is the one TP >= 2 reading of these releases off the H100,
    # vllm-project/vllm#29070 (4x A30, 0.11.1.dev12, TP 4: 'non-torch forward increase memory: 0.09GiB'), so the extra
    # is 0.09 - 0.13 GiB. No PCIe nccl_p2p rule covers NCCL 2.27.3 (torch 2.8.0's), which connects at first use
    rule = select_rule(RULES.memory_rules, "0.11.0")
    transports = RULES.nccl_transports
    assert rule.non_torch_tp_extra_bytes == pytest.approx(0.42 * GIB, rel=0.001)
    assert rule.tp_non_torch_off_boards_bytes == pytest.approx(0.09 * GIB, rel=0.001)
    assert tp_rule_for_chips(rule, transports, ("h100", None)) == (rule, False)
    assert tp_rule_for_chips(rule, transports, ("h200", None)) == (rule, False)
    off, pcie = tp_rule_for_chips(rule, transports, ("rtx3090", None))
    assert pcie and not off.tp_extra_peer_access
    assert off.non_torch_bytes + off.non_torch_tp_extra_bytes == rule.tp_non_torch_off_boards_bytes
    assert off.non_torch_tp_extra_bytes == pytest.approx(-0.04 * GIB, abs=0.001 * GIB)
    # every transport takes the measured total (the 'shm' cap and the 'net' range down to 0 never raise it)
    for transport in ("p2p", "shm", "net", "net-nogdr"):
        assert tp_extra_bytes(off, transports, transport, 4) == (off.non_torch_tp_extra_bytes,) * 2
    assert tp_extra_bytes(off, transports, "shm", 1) == (0, 0)
    # a rule without the total keeps the no-peer-access footprint off the boards (0.8.0 - 0.8.x)
    old = select_rule(RULES.memory_rules, "0.8.5")
    assert old.tp_non_torch_off_boards_bytes is None
    shm = next(t for t in transports if t.transport == "shm").fixed_bytes
    assert tp_rule_for_chips(old, transports, ("rtx3090", None))[0].non_torch_tp_extra_bytes == shm
    assert p2p_buffer_bytes(RULES.nccl_p2p, "0.11.0", ("rtx3090", None), 4, pcie=True) == (0, None)
