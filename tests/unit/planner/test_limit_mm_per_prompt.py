"""--limit-mm-per-prompt on `plan` and `up` (issue 27): the counts read as vLLM reads them, the towers each release
leaves out, the serve command carrying them through, and one-line refusals for what vLLM would not act on.

Sources: vllm/model_executor/models/interfaces.py _mark_tower_model (0.16.0, 0.19.0, 0.34.0 sdists; not in 0.14.0),
vllm/engine/arg_utils.py (0.6.6 / 0.7.3: key=value only; 0.8.5 on: JSON), and the MI300X boot log
tests/fixtures/bootlogs/mi300x-gemma4-e2b-len32768-v0311.log (limit_mm_per_prompt {'image': 0, 'audio': 0})."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from factories import corpus_entry, one_error_line
from onechip.errors import ConfigError
from onechip.mcp.server import build_server
from onechip.planner import plan_model
from onechip.planner.modalities import model_modalities, served_limits
from onechip.planner.rules import engine_rules
from onechip.schemas import ServeTarget
from onechip.schemas.common import GIB
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import PlanRequest, UpRequest
from onechip.vllm import flags
from onechip.vllm.flag_table import spec

pytestmark = pytest.mark.usefixtures("offline_home")

E2B_LOG = "mi300x-gemma4-e2b-len32768-v0311"


def _e2b(**kw: object) -> object:
    entry = corpus_entry(E2B_LOG)
    args = entry["engine_args"]
    return plan_model(
        "google/gemma-4-E2B-it", "mi300x-vf", "vllm-gpu", max_model_len=args["max_model_len"],
        utilization=args["gpu_memory_utilization"], engine_version="0.31.1", max_num_batched_tokens=16384, **kw,
    )  # fmt: skip


def test_the_mi300x_gemma4_log_loads_no_audio_tower_and_the_plan_matches_its_weights() -> None:
    # the log ran with {'image': 0, 'audio': 0}: gemma4_mm.py (0.31.0 sdist) wraps its audio tower in
    # _mark_tower_model('audio'), so it is not built; video is left at 999 ('profiled with 6 video items'), so the
    # vision tower ({'image', 'video'}) is. 'Model loading took 9.42 GiB' counts the towers built, the RoPE caches
    # and the per-layer-embedding buffer, which memory_budget.weights_bytes holds too.
    entry = corpus_entry(E2B_LOG)
    limited = _e2b(limit_mm_per_prompt=entry["engine_args"]["limit_mm_per_prompt"])
    every = _e2b()
    assert "audio_tower" not in limited.weights_by_component and "vision_tower" in limited.weights_by_component
    assert "audio_tower" in every.weights_by_component
    assert limited.memory_budget is not None and every.memory_budget is not None
    logged = entry["logged"]["model_weights_gib"] * GIB
    assert abs(limited.memory_budget.weights_bytes - logged) < 0.05 * GIB  # 9.40 GiB planned
    assert every.memory_budget.weights_bytes - logged > 0.5 * GIB  # the 0.57 GiB audio tower it did not load


def test_gemma4_text_only_turns_the_video_off_too() -> None:
    # Gemma 4 takes video (gemma4_mm.py get_supported_mm_limits, 0.19.0 - 0.34.0): '{"image":0,"audio":0}' alone
    # leaves video at 999 and the vision tower built, so text-only writes video 0 as well
    plan = _e2b(multimodal=False)
    command = flags.serve_command(plan, ServeTarget(kind="vllm"))
    by_name = {flag.flag: flag.value for flag in command.flags}
    assert by_name["--limit-mm-per-prompt"] == '{"image":0,"audio":0,"video":0}'
    assert "vision_tower" not in plan.weights_by_component


@pytest.mark.parametrize(
    ("version", "towers"),
    [("0.14.0", ("vision_tower", "audio_tower")), ("0.16.0", ("vision_tower",)), ("0.34.0", ("vision_tower",))],
)
def test_one_tower_is_left_out_from_the_release_that_marks_towers_by_modality(version: str, towers: tuple) -> None:
    # 0.14.0: no _mark_tower_model; gemma3n_mm.py builds every tower whatever the limits. 0.16.0 on: a tower whose
    # modalities are all 0 is skipped
    counts = {"image": 2, "video": 999, "audio": 0}
    assert engine_rules("vllm-gpu").served_towers(True, version, counts) == towers
    # text-only before 0.16.0: only the classes whose own __init__ tests the limits skip (qwen2_vl.py does, 0.14.0;
    # gemma3n_mm.py does not); vllm-tpu's fitted tower rule is not changed by the counts
    zeros = dict.fromkeys(counts, 0)
    gpu = engine_rules("vllm-gpu")
    assert gpu.served_towers(False, "0.14.0", zeros, ["Qwen2VLForConditionalGeneration"]) == ()
    assert gpu.served_towers(False, "0.14.0", zeros, ["Gemma3nForConditionalGeneration"]) == gpu.served_towers(
        True, "0.14.0"
    )
    assert gpu.served_towers(False, "0.16.0", zeros, ["Gemma3nForConditionalGeneration"]) == ()
    assert engine_rules("vllm-tpu").served_towers(True, version, counts) == ("vision_tower",)


def test_the_command_carries_the_counts_in_the_form_each_release_reads() -> None:
    row = spec("--limit-mm-per-prompt")
    assert row is not None
    assert row.spell({"image": 2, "audio": 0}, "0.31.1") == (True, '{"image":2,"audio":0}')
    assert row.spell({"image": 2, "audio": 0}, "0.7.3") == (True, "image=2,audio=0")  # nullable_kvs only
    plan = _e2b(limit_mm_per_prompt={"image": 2, "audio": 0})
    command = flags.serve_command(plan, ServeTarget(kind="vllm"))
    by_name = {flag.flag: flag for flag in command.flags}
    assert by_name["--limit-mm-per-prompt"].value == '{"image":2,"audio":0}'
    assert by_name["--limit-mm-per-prompt"].origin == "plan"  # the family's image:4,audio:1 contract gives way


def test_up_dry_run_runs_the_command_plan_prints() -> None:
    up = UpRequest(model="google/gemma-4-E2B-it", chip="h100", engine="vllm", limit_mm_per_prompt="image=1,audio=0")
    request = up.plan_request()
    assert request is not None and request.limit_mm_per_prompt == {"image": 1, "audio": 0}
    assert '--limit-mm-per-prompt {"image":1,"audio":0}' in up.sizing_given()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("image=-1", "image: a count is a whole number >= 0, got -1"),
        ('{"image": 2', 'must be {"image":2,"audio":0} or image=2,audio=0'),
        ("image=two", 'must be {"image":2,"audio":0} or image=2,audio=0'),
        ("image=1,image=2", "gives image twice"),
        ("smell=0", "smell: not a modality of this model (it takes image, video, audio)"),
    ],
)
def test_bad_counts_are_one_line_refusals(run, value: str, said: str) -> None:
    line = one_error_line(run, "plan", "google/gemma-4-E2B-it", "--chip", "h100", "--limit-mm-per-prompt", value)
    assert said in line, line


def test_a_positive_count_of_a_modality_the_model_lacks_is_refused() -> None:
    # vLLM warns and ignores it (0.6.6 registry.py 'Detected extra keys ... They will be ignored'): planned as if it
    # did something, the plan would be wrong about what the engine serves; 0 of it asks for nothing and is taken
    qwen_vl = {"vision_config": {}, "video_token_id": 1}
    assert model_modalities(qwen_vl) == ("image", "video")
    with pytest.raises(ConfigError, match="audio: not a modality of this model"):
        served_limits(True, {"audio": 1}, qwen_vl, v0=False)
    assert served_limits(True, {"audio": 0, "image": 3}, qwen_vl, v0=False).counts == {"image": 3, "video": 999}
    with pytest.raises(ConfigError, match="it is a text-only model"):
        plan_model("SmolLM2-135M-Instruct", "h100", limit_mm_per_prompt={"image": 1})
    with pytest.raises(ConfigError, match="--text-only and --limit-mm-per-prompt image=1 disagree"):
        build_request(
            PlanRequest, {"model": "m", "chip": "h100", "multimodal": False, "limit_mm_per_prompt": "image=1"}
        )


def test_mcp_takes_the_counts_as_an_object() -> None:
    async def go(args: dict) -> object:
        async with Client(build_server()) as client:
            return await client.call_tool("plan", args)

    base = {"model": "google/gemma-4-E2B-it", "chip": "h100", "max_model_len": 8192}
    planned = anyio.run(go, {**base, "limit_mm_per_prompt": {"image": 1, "audio": 0}})
    assert not planned.is_error, planned.content[0].text
    assert "--limit-mm-per-prompt" in planned.structured_content["serve_command"]["shell"]
    refused = anyio.run(go, {**base, "limit_mm_per_prompt": "image=1"})
    assert refused.is_error and "limit_mm_per_prompt must be a JSON object" in refused.content[0].text


def test_language_model_only_is_the_text_only_plan_under_vllm_s_own_flag() -> None:
    # vllm/config/multimodal.py (0.17.0): 'Equivalent to setting --limit-mm-per-prompt to 0 for every modality'
    lmo = plan_model("google/gemma-4-E2B-it", "h100", engine_version="0.31.1", language_model_only=True)
    text = plan_model("google/gemma-4-E2B-it", "h100", engine_version="0.31.1", multimodal=False)
    assert lmo.kv_tokens == text.kv_tokens and "vision_tower" not in lmo.weights_by_component
    names = {f.flag: f.value for f in flags.serve_command(lmo, ServeTarget(kind="vllm")).flags}
    assert "--language-model-only" in names and "--limit-mm-per-prompt" not in names
    with pytest.raises(ConfigError, match="--language-model-only is first in vLLM 0.17.0"):
        plan_model("SmolLM2-135M-Instruct", "h100", engine_version="0.16.0", language_model_only=True)


def test_a_release_whose_text_only_classes_were_not_read_says_so(tmp_path) -> None:
    # 0.15.x sources not read: the 0.12.0 - 0.15.x range (read in 0.12.0 and 0.14.0) is taken, and the plan says so
    gpu = engine_rules("vllm-gpu")
    rule = gpu.text_only_classes("0.15.1")
    assert rule is not None and rule.min_version == "0.12.0" and "0.15" in rule.not_read
    assert gpu.text_only_classes("0.16.0") is None and gpu.text_only_classes(None) is None
