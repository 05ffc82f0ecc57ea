"""schemas/requests.py and BenchConfig: one strict model per job; ranges, comma lists and exclusions are the
model's, and a refused value is one ConfigError line naming the flag the user typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from onechip.bench.client import StreamOutcome
from onechip.errors import ConfigError
from onechip.schemas.bench import BenchConfig, BenchRun, RepJob, RequestSample
from onechip.schemas.cloud import CloudUpRequest
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import (
    CheckRequest,
    CostRequest,
    DemoRequest,
    PlanRequest,
    ReportRequest,
    ServeOptions,
    UpRequest,
)
from onechip.vllm import flag_table

REQUESTS: list[type[BaseModel]] = [
    PlanRequest, UpRequest, CheckRequest, CostRequest, ReportRequest, DemoRequest, BenchConfig,
]  # fmt: skip
URL = {"base_url": "http://127.0.0.1:8000"}


def _refused(model: type[BaseModel], values: dict) -> str:
    with pytest.raises(ConfigError) as info:
        build_request(model, values)
    message = str(info.value)
    assert "\n" not in message and "'type'" not in message  # one line, not pydantic's error list
    return message


@pytest.mark.parametrize("model", REQUESTS, ids=lambda m: m.__name__)
def test_every_request_is_strict_and_every_field_is_described(model: type[BaseModel]) -> None:
    assert model.model_config.get("extra") == "forbid"
    assert [n for n, f in model.model_fields.items() if not (f.description or "").strip()] == []


def test_comma_lists_are_parsed_once_by_the_model() -> None:
    config = build_request(BenchConfig, {**URL, "contexts": "128,1_024", "clients": "1, 4", "slo": "ttft_ms=500"})
    assert (config.contexts, config.clients, config.slo) == ([128, 1024], [1, 4], {"ttft_ms": 500.0})
    check = build_request(CheckRequest, {**URL, "needle_depths": "0.1,0.5", "only": "smoke,tools"})
    assert (check.needle_depths, check.only) == ([0.1, 0.5], ["smoke", "tools"])
    assert build_request(CostRequest, {"pricing": "spot,on-demand"}).pricing == ["spot", "on-demand"]
    assert build_request(ReportRequest, {"run_dir": "r", "formats": "md,html"}).formats == ["md", "html"]
    tokens = "comma-separated token counts (8192, 8k or 8K)"
    assert _refused(BenchConfig, {**URL, "contexts": "a,b"}) == f"--contexts must be {tokens}, got 'a,b'"
    assert "--needle-depths must be comma-separated numbers, got 'nan'" in _refused(
        CheckRequest, {**URL, "needle_depths": "nan"}
    )
    assert "--slo must look like ttft_ms=500,tpot_ms=50" in _refused(BenchConfig, {**URL, "slo": "fast"})


SLO_PAIRS = "key=value pairs such as ttft_ms=500,tpot_ms=50"  # schemas.inputs._KEY_VALUE_EXAMPLES' default


@pytest.mark.parametrize(
    ("values", "line"),
    [({"contexts": ",,"}, "--contexts lists nothing (got ',,'): give comma-separated token counts (8192, 8k or 8K)"),
     ({"contexts": "128,,1024"}, "--contexts has an empty entry (got '128,,1024'): give comma-separated token counts "
      "(8192, 8k or 8K), none empty"),
     ({"slo": " , "}, f"--slo lists nothing (got ' , '): give {SLO_PAIRS}"),
     ({"slo": "ttft_ms=500,"}, f"--slo has an empty entry (got 'ttft_ms=500,'): give {SLO_PAIRS}, none empty")],
)  # fmt: skip
def test_a_comma_list_and_a_key_value_list_refuse_nothing_and_an_empty_entry_in_the_same_words(values, line) -> None:
    # one rule for both kinds of list (schemas.inputs._entries): a value that lists nothing read as the option not
    # given, and an empty entry was dropped; the line names the flag, the value and what that kind of list takes
    assert _refused(BenchConfig, {**URL, **values}) == line


@pytest.mark.parametrize(
    ("model", "values", "expected"),
    [
        (
            BenchConfig,
            {**URL, "reps": 0},
            "Invalid value for '--reps': reps: Input should be greater than or equal to 1",
        ),
        (BenchConfig, {**URL, "clients": "0"}, "Invalid value for '--clients': clients.0:"),
        (BenchConfig, {**URL, "duration_s": float("inf")}, "'--duration-s': duration_s: Input should be a finite"),
        (BenchConfig, {**URL, "request_timeout_s": -1}, "Invalid value for '--timeout-s'"),
        (PlanRequest, {"model": "m", "chip": "cpu", "utilization": 1.5}, "'--gpu-memory-utilization': utilization"),
        (PlanRequest, {"model": "m", "chip": "cpu", "max_model_len": 0}, "Invalid value for '--max-model-len'"),
        (PlanRequest, {"model": "m", "chip": "cpu", "kv_cache_memory_bytes": 0}, "'--kv-cache-memory'"),
        (PlanRequest, {"chip": "cpu"}, "Missing argument 'MODEL'"),  # click's words, as typer's parser says it
        (UpRequest, {"port": 0}, "Invalid value for '--port'"),
        (UpRequest, {"engine": "sglang"}, "Invalid value for '--engine'"),
        (UpRequest, {"kv_cache_space_gib": 0}, "Invalid value for '--kv-cache-space-gib'"),
        (CheckRequest, {**URL, "agent_runs": -1}, "agent_runs: Input should be greater than or equal to 1 (got -1)"),
        (CostRequest, {"output_tok_per_s": 0}, "Invalid value for '--output-tok-per-s'"),
        (DemoRequest, {"port": 70000}, "Invalid value for '--port'"),
    ],
)
def test_a_refused_value_names_its_flag(model: type[BaseModel], values: dict, expected: str) -> None:
    assert expected in _refused(model, values)


def test_plan_utilization_keeps_its_range_in_the_message() -> None:
    # vLLM's bound, gt=0 and le=1 (vllm/config/cache.py, 0.19.0), as Field constraints: the JSON schema carries them
    assert "utilization: Input should be less than or equal to 1 (got 1.5)" in _refused(
        PlanRequest, {"model": "m", "chip": "cpu", "utilization": 1.5}
    )
    assert "utilization: Input should be greater than 0 (got 0)" in _refused(
        PlanRequest, {"model": "m", "chip": "cpu", "utilization": 0}
    )


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ({"requests_per_client": 2, "duration_s": 1}, "give --requests-per-client or --duration-s, not both"),
        ({"warmup_requests": 1, "warmup_s": 1}, "give --warmup-requests or --warmup-s, not both"),
        ({"arrivals": "constant"}, "--arrivals shapes open-loop arrivals: give --rate too"),
    ],
)
def test_bench_exclusions_are_checked_on_what_was_typed(typed: dict, message: str) -> None:
    assert _refused(BenchConfig, {**URL, **typed}) == message
    # a stored config carries every field (defaults included) and still loads
    stored = BenchConfig(**URL, duration_s=1.0, warmup_s=1.0).model_dump()
    assert stored["requests_per_client"] == 2 and stored["warmup_requests"] == 1
    run = BenchRun.model_validate({"tool_version": "x", "created_at": "t", "config": stored})
    assert run.config.duration_s == 1.0


def test_resume_puts_what_was_typed_over_the_saved_config() -> None:
    saved = BenchConfig(**URL, clients=[1, 2], duration_s=0.1)
    assert BenchConfig.resumed(saved, {"json": None, "reps": None}) == saved
    resumed = BenchConfig.resumed(saved, {"clients": "1", "reps": 3})
    assert (resumed.clients, resumed.reps, resumed.duration_s) == ([1], 3, 0.1)  # the runner refuses [1]
    with pytest.raises(ConfigError, match="give --requests-per-client or --duration-s, not both"):
        BenchConfig.resumed(saved, {"requests_per_client": 2, "duration_s": 1})
    with pytest.raises(ConfigError, match="Invalid value for '--reps'"):
        BenchConfig.resumed(saved, {"reps": 0})


def test_planner_inputs_among_sets_are_plan_fields() -> None:
    # onechip.vllm.flag_table reads the memory-sizing flags among --set as the planner inputs they spell
    sets = ["max-model-len=8192", "--gpu-memory-utilization=0.5", "kv-cache-memory=1024", "enforce-eager",
            "VLLM_X=1", "block-size=", "tensor-parallel-size=2", "dtype=float32", "max-num-seqs=64"]  # fmt: skip
    plan = flag_table.with_sets(PlanRequest(model="m", chip="v5e-1", sets=sets))
    assert (plan.max_model_len, plan.utilization, plan.kv_cache_memory_bytes) == (8192, 0.5, 1024)
    assert (plan.tensor_parallel_size, plan.dtype, plan.block_size) == (2, "float32", None)
    assert (plan.enforce_eager, plan.max_num_seqs, plan.sets) == (True, 64, sets)
    same = PlanRequest(model="m", chip="c", max_model_len=8192, sets=["max-model-len=8192"])
    assert flag_table.with_sets(same).max_model_len == 8192
    with pytest.raises(ConfigError, match="--max-model-len 4096 and --set max-model-len=8192 disagree"):
        flag_table.with_sets(PlanRequest(model="m", chip="c", max_model_len=4096, sets=["max-model-len=8192"]))
    # an integer flag's --set text is read as vLLM's argparse reads it (flag_table._engine_int), before the plan
    with pytest.raises(ConfigError, match="--set max-model-len=abc: --max-model-len takes a whole number"):
        flag_table.with_sets(PlanRequest(model="m", chip="c", sets=["max-model-len=abc"]))


def test_up_plans_from_model_chip_and_sets() -> None:
    up = UpRequest(engine="vllm", model="m", chip="v5e-1", sets=["max-model-len=32768", "enforce-eager"])
    plan = up.plan_request()
    assert plan is not None and (plan.model, plan.chip, plan.sets) == ("m", "v5e-1", up.sets)
    assert flag_table.with_sets(plan).max_model_len == 32768
    assert UpRequest(engine="vllm").plan_request() is None


@pytest.mark.parametrize("flag", ["host", "model", "chip", "plan", "image", "hf_token_file", "launcher", "sets"])
def test_the_embedded_engine_takes_no_plan_or_host(flag: str) -> None:
    value = ["max-model-len=1"] if flag == "sets" else "x"
    assert "need --engine vllm or vllm-docker" in _refused(UpRequest, {flag: value})
    build_request(UpRequest, {"engine": "vllm", flag: value})  # fine for a vLLM engine


def test_plan_and_up_take_the_same_serve_options() -> None:
    # both hand these fields to engines.startup.serve_target, the one place a ServeTarget is built for vLLM
    assert set(ServeOptions.model_fields) <= set(PlanRequest.model_fields) & set(UpRequest.model_fields)


def test_cost_write_needs_a_run_directory(tmp_path: Path) -> None:
    assert _refused(CostRequest, {"write": True}) == "writing cost.json needs a run directory (--run DIR)"
    assert build_request(CostRequest, {"write": True, "run_dir": tmp_path}).write


def test_check_request_carries_every_check_option() -> None:
    request = build_request(CheckRequest, {**URL, "needle_lengths": "200", "tool_choice": "required"})
    options = request.options()
    assert options["needle_lengths"] == [200] and options["tool_choice"] == ["required"]
    assert "base_url" not in options and "only" not in options and options["request_timeout_s"] == 180.0


def test_rep_job_and_sample_are_built_from_shared_fields() -> None:
    config = BenchConfig(**URL, output_tokens=7, request_timeout_s=9.0, warmup_s=0.5, duration_s=2.0)
    job = RepJob.of(
        config, model="m", context_tokens=16, clients=2, rep=1, streams=[0], prompt_tag="t", filler_words=3,
        prompt_tokens_target=16, extras=True, continuous_usage=False,
    )  # fmt: skip
    assert (job.base_url, job.output_tokens, job.request_timeout_s) == ("http://127.0.0.1:8000", 7, 9.0)
    assert (job.warmup_s, job.duration_s, job.warmup_requests, job.requests_per_client) == (0.5, 2.0, 1, 2)
    assert (job.model, job.clients) == ("m", 2)  # the cell's, not the config's (None, [1, 4])
    outcome = StreamOutcome(t_send=1.0, t_first=1.5, completion_tokens=7, chunk_times=[1.5], error=None)
    sample = RequestSample.of(job, outcome, stream=0, seq=4, warmup=False)
    assert (sample.context_tokens, sample.clients, sample.rep, sample.prompt_tokens_target) == (16, 2, 1, 16)
    assert (sample.t_first, sample.completion_tokens, sample.chunk_times, sample.status) == (1.5, 7, [1.5], "ok")
    assert set(StreamOutcome.model_fields) <= set(RequestSample.model_fields)  # one record, the wire's fields in it
    failed = RequestSample.of(job, StreamOutcome(t_send=1.0, error="HTTP 400"), stream=0, seq=5, warmup=True)
    assert (failed.status, failed.error, failed.warmup) == ("failed", "HTTP 400", True)
    assert json.loads(failed.model_dump_json())["seq"] == 5


@pytest.mark.parametrize("value", [[1], {"h": 4}, [[1]]])
def test_a_duration_of_another_json_type_is_refused_in_one_line(value) -> None:
    # Duration is float | int behind parse_duration: a list or an object went on to the union, whose branches
    # pydantic names in the error's path ('max_run_duration_s.float', '...int'), two lines naming no argument sent.
    # One line now names the argument and what it takes, parse_duration's own words for a duration
    with pytest.raises(ConfigError) as caught:
        build_request(CloudUpRequest, {"max_run_duration_s": value}, strict=True)
    assert str(caught.value) == (
        "Invalid value for 'max_run_duration_s': a duration is a number of seconds or text like 4h, 30m, 90s or "
        f"1h30m (got {value!r})"
    )
