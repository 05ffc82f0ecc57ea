"""The install and the links between the GPUs as plan inputs (issue 27): which top-k/top-p sampler vLLM 0.9.0 -
0.11.0 warms up (FlashInfer when the install can import it) and what the TP >= 2 non-torch term holds for the
NCCL transport between the ranks. Expected values come from the sources engines.json `flashinfer_sampler` and
`nccl_transports` cite (vLLM wheels and sdists, flashinfer/sampling.py, NCCL's shm.cc / net.cc)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from factories import sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import calibration, plan_model
from onechip.planner.gpu_memory import flashinfer_sampler_applies, flashinfer_sampler_bytes, tp_extra_bytes
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB
from onechip.schemas.requests import PlanRequest

ROOT = Path(__file__).resolve().parents[3]
BOOTLOGS = ROOT / "tests" / "fixtures" / "bootlogs"
CONFIGS = BOOTLOGS / "configs"
LLAMA = json.loads((CONFIGS / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
LLAMA_8B_BYTES = 16_060_522_496  # safetensors total of meta-llama/Llama-3.1-8B-Instruct (its model card index)
RULES = engine_rules("vllm-gpu")
SORT_BASED = 37.77  # engines.json '0.9.1 - 0.10.x' sampler_bytes_per_seq_vocab (fitted on vllm#23278)
NCCL_LEFT_ON_DEVICE = 96_636_764  # engines.json nccl_transports shm / net-nogdr: the 2x RTX 4090 V0 measurement


def test_flashinfer_warm_up_bytes_per_element() -> None:
    # _dummy_sampler_run holds the model-dtype logits; Sampler.forward's logits.to(torch.float32) copies them;
    # top_k_top_p_sampling_from_logits ('top_k_first') allocates the masked logits and their softmax in fp32
    rule = RULES.flashinfer_sampler
    assert rule is not None and rule.fp32_copies == 2
    assert flashinfer_sampler_bytes(rule, 2) == 2 + 4 + 4 + 4  # bf16 / fp16 model
    assert flashinfer_sampler_bytes(rule, 4) == 4 + 4 + 4  # fp32: .to(float32) returns the same tensor


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.8.5", False),  # 0.8.x falls back to the sort-based path for any flashinfer >= '0.2.3'
        ("0.9.0", True),  # 'envs.VLLM_USE_FLASHINFER_SAMPLER is not False' (unset is None)
        ("0.10.1.1", True),  # the a100x4 log: 'topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k'
        ("0.11.0", True),
        ("0.11.1", False),  # 'if envs.VLLM_USE_FLASHINFER_SAMPLER:' ('Users must opt in explicitly')
        ("0.19.0", False),
        (None, False),  # the newest rule: past every release in the range
    ],
)
def test_which_releases_pick_flashinfer_when_importable(version: str | None, expected: bool) -> None:
    assert flashinfer_sampler_applies(RULES.flashinfer_sampler, version, installed=True) is expected
    assert flashinfer_sampler_applies(RULES.flashinfer_sampler, version, installed=False) is False


def test_the_default_install_is_the_image_and_the_plan_says_so(tmp_path: Path) -> None:
    # an H100 at 0.10.1 defaults to 1,024 sequences; Llama-3.1-8B's vocabulary is 128,256
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    image = plan_model(str(path), "h100", engine_version="0.10.1", max_model_len=8192)
    wheel = plan_model(str(path), "h100", engine_version="0.10.1", max_model_len=8192, flashinfer=False)
    assert image.memory_budget is not None and wheel.memory_budget is not None
    gained = wheel.memory_budget.activation_peak_bytes - image.memory_budget.activation_peak_bytes
    assert gained == pytest.approx(1024 * 128256 * (SORT_BASED - 14), abs=2)
    (said,) = [w for w in image.warnings if w.code == "sampler-backend"]
    assert "assumed: the vllm/vllm-openai image" in said.message and "--no-flashinfer" in said.message
    (given,) = [w for w in wheel.warnings if w.code == "sampler-backend"]
    assert "sort-based" in given.message and "as given" in given.message
    local = plan_model(str(path), "h100", engine_version="0.10.1", max_model_len=8192, launch="vllm")
    assert local.memory_budget is not None  # a local pip install: the wheel lists flashinfer-python as an extra only
    assert local.memory_budget.activation_peak_bytes == wheel.memory_budget.activation_peak_bytes
    (pip,) = [w for w in local.warnings if w.code == "sampler-backend"]
    assert "assumed: --launch vllm runs a `pip install vllm`" in pip.message
    newest = plan_model(str(path), "h100", max_model_len=8192)  # outside 0.9.0 - 0.11.0: nothing to say
    assert not [w for w in newest.warnings if w.code == "sampler-backend"]


def test_the_v011_image_warm_up_of_mistral_small_out_of_sample(tmp_path: Path) -> None:
    # llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @ 4f4d44943c39: Mistral-Small-3.2-24B on
    # 'vllm/vllm-openai:latest', 'vLLM version: 0.11.0', H100, utilization 0.95, max-model-len 16000, block 128:
    # 'Model loading took 44.76 GiB', peak activation 2.12 GiB, 'Available KV cache memory: 28.20 GiB', 184,832
    # tokens. Its text model has Mistral-Small-3.1's geometry (5,120 hidden, 131,072 vocabulary, 40 layers: the
    # corpus's W8A8 config without its quantization). Nothing was fitted on it: FlashInfer's structural 14 B per
    # element plans 2.01 GiB and the pool within 0.1%; the sort-based figure would plan 4.86 GiB.
    config = json.loads((CONFIGS / "RedHatAI--Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8.json").read_text())
    config.pop("quantization_config", None)
    path = sized_checkpoint(tmp_path / "mistral", config, int(44.76 * GIB))
    kwargs = {"engine_version": "0.11.0", "max_model_len": 16000, "utilization": 0.95, "block_size": 128}
    plan = plan_model(str(path), "h100", **kwargs)
    assert plan.memory_budget is not None
    assert plan.memory_budget.activation_peak_bytes / GIB == pytest.approx(2.12, rel=0.06)
    assert plan.memory_budget.kv_cache_bytes / GIB == pytest.approx(28.20, rel=0.005)
    assert plan.kv_tokens_logged == pytest.approx(184832, rel=0.005)
    sort_based = plan_model(str(path), "h100", flashinfer=False, **kwargs).memory_budget
    assert sort_based is not None and sort_based.activation_peak_bytes / GIB > 2 * 2.12


def test_tp_extra_by_nccl_transport() -> None:
    rule = next(r for r in RULES.memory_rules if r.versions.startswith("0.9.1"))
    figure = rule.non_torch_tp_extra_bytes
    transports = RULES.nccl_transports
    assert tp_extra_bytes(rule, transports, "p2p", 4) == (figure, figure)  # measured on NVLink H100s
    assert tp_extra_bytes(rule, transports, "net", 4) == (figure, 0)  # GPUDirect RDMA not known: range down to 0
    for host_buffers in ("shm", "net-nogdr"):  # NCCL's buffers in host memory (shm.cc, net.cc without useGdr)
        assert tp_extra_bytes(rule, transports, host_buffers, 2) == (NCCL_LEFT_ON_DEVICE, NCCL_LEFT_ON_DEVICE)
    assert tp_extra_bytes(rule, transports, "net", 1) == (0, 0)  # no communicator at TP 1


@pytest.mark.parametrize(("version", "expected"), [("0.20.0", NCCL_LEFT_ON_DEVICE), ("0.25.0", NCCL_LEFT_ON_DEVICE),
                                                    ("0.26.0", 0), ("0.33.0", 0)])  # fmt: skip
def test_host_buffer_transports_from_0_26(version: str, expected: int) -> None:
    # vllm/distributed/device_communicators/cuda_communicator.py: no all_gather of its own in the 0.16.0 - 0.24.0
    # sdists, and 0.25.0's calls the base class off symmetric memory (dist.all_gather_into_tensor opens
    # torch.distributed's communicator lazily inside the profiling window); from 0.26.0 all_gather goes through the
    # PyNcclCommunicator built before the init snapshot (vllm/v1/worker/gpu_worker.py init_device), so the SHM /
    # non-GDR NET transports, whose buffers are in host memory, put nothing of a new communicator on the device there
    rule = next(r for r in RULES.memory_rules if r.covers(version))
    for host_buffers in ("shm", "net-nogdr"):
        assert tp_extra_bytes(rule, RULES.nccl_transports, host_buffers, 2) == (expected, expected)
    figure = rule.non_torch_tp_extra_bytes  # NVLink / P2P hosts keep the rule's figure
    assert tp_extra_bytes(rule, RULES.nccl_transports, "p2p", 2) == (figure, figure)


@pytest.mark.parametrize(("chip", "expected"), [("rtx4090", 0), ("mi300x", NCCL_LEFT_ON_DEVICE)])
def test_rocm_keeps_the_lazy_communicator_at_0_33(tmp_path: Path, chip: str, expected: int) -> None:
    # cuda_communicator.py all_gather (0.26.0 - 0.34.0 sdists): 'On ROCm, the base-class all_gather
    # (all_gather_into_tensor) is faster', so torch.distributed's communicator still opens in the window there
    model = sized_checkpoint(tmp_path / chip, LLAMA, LLAMA_8B_BYTES)

    def non_torch(tp: int) -> int:
        plan = plan_model(str(model), chip, "vllm-gpu", max_model_len=4096, engine_version="0.33.0",
                          tensor_parallel_size=tp, nccl_transport="shm")  # fmt: skip
        return plan.memory_budget.non_torch_bytes

    assert non_torch(2) - non_torch(1) == expected


SIBLING = "a100x2-40gb-qwen2-7b-tp2-ray-2nodes-util050-v01011"
A100X4 = "a100x4-gpt-oss-120b-tp4-ray-v01011"


def _accuracy() -> tuple[Any, list[dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    return planner_accuracy, json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))


def _tokens_error(planner_accuracy: Any, entry: dict[str, Any], tmp_path: Path, transport: str) -> float:
    entry = {**entry, "engine_args": {**entry["engine_args"], "nccl_transport": transport}}
    row = planner_accuracy.predict(entry, tmp_path / transport, out_of_sample=True)
    return float((row["predicted"] - row["logged"]) / row["logged"])


def test_the_cross_node_transport_is_read_on_the_sibling_log(tmp_path: Path) -> None:
    # tests/fixtures/bootlogs a100x2-40gb-qwen2-7b-tp2-ray-2nodes-util050-v01011 (dennislee22/vLLM-benchmarking
    # README Test 1, two CML pods on two nodes): 0.5 x 39.49 GiB - 7.12 GiB of weights - the logged 11.03 GiB pool
    # leaves 1.60 GiB for non-torch memory and the activation peak together; NCCL's buffers stayed in host memory
    planner_accuracy, corpus = _accuracy()
    sibling = next(e for e in corpus if e["name"] == SIBLING)
    assert sibling["engine_args"]["nccl_transport"] == "net-nogdr"
    assert planner_accuracy.FITTED_ON[SIBLING] == "NCCL transport of this cluster read here"  # scored apart
    # under "net" the 1.35 GiB TP >= 2 figure leaves 0.18 GiB for an activation peak whose sort-based sampler warm-up
    # alone (this log: "FlashInfer is not available") is 1.37 GiB
    assert _tokens_error(planner_accuracy, sibling, tmp_path, "net") < -0.1
    assert abs(_tokens_error(planner_accuracy, sibling, tmp_path, "net-nogdr")) < 0.02


def test_the_a100x4_ray_row_takes_the_siblings_transport(tmp_path: Path) -> None:
    # tests/fixtures/bootlogs a100x4-gpt-oss-120b-tp4-ray-v01011 (held out): the README's pip install with
    # flashinfer-python, four pods on different nodes of the same CML platform; its transport is the sibling's
    planner_accuracy, corpus = _accuracy()
    entry = next(e for e in corpus if e["name"] == A100X4)
    assert entry["engine_args"]["flashinfer"] is True and entry["engine_args"]["nccl_transport"] == "net-nogdr"
    assert any(SIBLING in note for note in entry["notes"]) and A100X4 not in planner_accuracy.FITTED_ON
    assert abs(_tokens_error(planner_accuracy, entry, tmp_path, "net-nogdr")) < 0.02  # 2,624,352 against 2,640,144
    # with 'net' (GPUDirect RDMA unknown) 'Available KV cache memory: 45.32 GiB' lies in the plan's KV range, which the
    # kept NVLink figure (1.35 GiB at 0.10.x) widens
    net = {**entry, "engine_args": {**entry["engine_args"], "nccl_transport": "net"}}
    row = planner_accuracy.predict(net, tmp_path / "range", out_of_sample=True)
    budget = row["plan"].memory_budget
    assert budget.kv_cache_low_bytes / GIB < 45.32 < budget.kv_cache_high_bytes / GIB + 0.005
    (line,) = [w for w in row["plan"].warnings if w.code == "nccl-transport"]
    assert "NCCL net (as given)" in line.message and "(0 - 1.35)" in line.message


def test_bad_transport_is_refused_and_defaults_keep_stored_boot_keys() -> None:
    with pytest.raises(ConfigError, match="'--nccl-transport'.*'p2p', 'shm', 'net' or 'net-nogdr'"):
        plan_model("no-such-model", "h100", nccl_transport="nvlink")  # refused before the model is looked up
    request = PlanRequest(model="m", chip="h100", tensor_parallel_size=2)
    plain = calibration.deployment_key(request, "vllm-gpu", 8192)
    assert "flashinfer" not in plain and "nccl" not in plain  # keys of boots stored before these inputs
    other = request.model_copy(update={"flashinfer": False, "nccl_transport": "net"})
    assert calibration.deployment_key(other, "vllm-gpu", 8192) == plain + "|no-flashinfer|nccl-net"


def test_up_plans_for_the_launcher_it_runs_not_the_one_the_plan_file_printed(tmp_path: Path) -> None:
    # engines.json flashinfer_sampler: the vllm/vllm-openai image has FlashInfer (the plan's default launcher,
    # vllm-docker); a `pip install vllm` of 0.9.0 - 0.11.0 (up --engine vllm) does not, and warms up the sort-based
    # sampler. `up --engine vllm --plan P` must size that install, not the image P was printed for, also when a
    # --set re-plans P (Plan.request does not hold the launcher).
    from onechip import api
    from onechip.schemas.requests import UpRequest

    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    inputs: dict[str, Any] = {"model": str(path), "chip": "h100", "max_model_len": 8192, "engine_version": "0.10.2"}
    docker = api.plan(PlanRequest(**inputs))
    pip = api.plan(PlanRequest(**inputs, launch="vllm"))
    assert pip.kv_tokens < docker.kv_tokens  # the sort-based warm-up holds more
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(docker.model_dump_json(), encoding="utf-8")
    up = api.up(UpRequest(engine="vllm", plan=plan_file, port=8000, dry_run=True))
    assert up.plan is not None and up.plan.kv_tokens == pip.kv_tokens
    assert up.replanned_with == ["--engine vllm"]
    same = api.up(UpRequest(engine="vllm-docker", plan=plan_file, port=8000, dry_run=True))
    assert same.plan is not None and same.plan.kv_tokens == docker.kv_tokens and same.replanned_with == []
    sized = api.up(UpRequest(engine="vllm", plan=plan_file, sets=["max-num-seqs=256"], port=8000, dry_run=True))
    pip_256 = api.plan(PlanRequest(**inputs, launch="vllm", max_num_seqs=256))
    assert sized.plan is not None and sized.plan.kv_tokens == pip_256.kv_tokens
    fresh = api.up(UpRequest(engine="vllm", model=str(path), chip="h100", port=8000, dry_run=True))
    assert fresh.plan is not None and fresh.plan.request is not None
    assert [w.code for w in fresh.plan.warnings if w.code == "sampler-backend"] == []  # 0.32.0: not launcher-bound


def test_a_plan_of_a_relative_checkpoint_path_records_it_absolute_so_up_can_re_plan_it_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the serve command takes the absolute path (vllm-docker mounts only absolute ones); the recorded request is
    # what `up --plan P --set ...` re-plans from, in whatever folder `up` runs
    from onechip import api
    from onechip.schemas.requests import UpRequest

    sized_checkpoint(tmp_path / "work" / "llama", LLAMA, LLAMA_8B_BYTES)
    monkeypatch.chdir(tmp_path / "work")
    plan = api.plan(PlanRequest(model="./llama", chip="h100", max_model_len=8192))
    assert plan.request is not None and plan.request["model"] == str(tmp_path / "work" / "llama")
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.model_dump_json(), encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    up = api.up(UpRequest(engine="vllm-docker", plan=plan_file, sets=["max-num-seqs=64"], port=8000, dry_run=True))
    assert up.replanned_with == ["max-num-seqs=64"] and up.launch is not None
    assert up.launch.command.model == str(tmp_path / "work" / "llama")


def test_an_input_that_sizes_nothing_says_so(tmp_path: Path) -> None:
    # new-user test: --nccl-transport at TP 1 and --flashinfer on a release that picks no sampler by install were
    # silently ignored
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    tp1 = plan_model(str(path), "h100", max_model_len=4096, nccl_transport="net")
    assert any(w.code == "input-unused" and "--nccl-transport net" in w.message for w in tp1.warnings)
    new = plan_model(str(path), "h100", max_model_len=4096, flashinfer=False, engine_version="0.19.0")
    assert any(w.code == "input-unused" and "--no-flashinfer" in w.message for w in new.warnings)
    plain = plan_model(str(path), "h100", max_model_len=4096, engine_version="0.19.0")
    assert not any(w.code == "input-unused" for w in plain.warnings)
