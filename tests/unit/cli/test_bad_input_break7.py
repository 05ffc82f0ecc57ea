"""Bad input found by helper break7's pass over plan, advise, simulate, cost, report, cloud and MCP as a new user
types it: each was a refusal of a workload that fits, a line naming the wrong flag, or a question asked before the
answer was known to be refused, and is now planned or refused in one line."""

from __future__ import annotations

import json

import pytest
from tests.factories import SMOLLM2_CONFIG, one_error_line, smollm2_full_checkpoint

from onechip.api._predict import advice_max_model_len


@pytest.fixture
def short_positions(tmp_path, offline_home):
    """SmolLM2-135M at its real shapes with max_position_embeddings 1,024 (GPT-2's): shorter than advise's
    2,048-token floor. The config is SmolLM2's published one but for that field."""
    checkpoint = smollm2_full_checkpoint(tmp_path / "smollm2-1024")
    config = checkpoint / "config.json"
    config.write_text(config.read_text().replace('"max_position_embeddings": 8192', '"max_position_embeddings": 1024'))
    assert SMOLLM2_CONFIG["max_position_embeddings"] == 8192 and '"max_position_embeddings": 1024' in config.read_text()
    return checkpoint


def test_advise_plans_a_workload_that_fits_a_model_of_fewer_positions_than_its_rounding(run, short_positions):
    # was exit 2, every row 'max_model_len 2048 exceeds the model's max_position_embeddings 1024': advise planned
    # each deployment at the power of two above ctx + output_tokens (128 + 32), at least 2,048, past the model's
    # 1,024 positions; a Qwen3 (40,960 positions) at ctx=32768 was refused at 65,536 alike
    code, out, err = run("advise", str(short_positions), "--chips", "l4", "--workload", "ctx=128,clients=1", "--json")
    assert code == 0, err
    assert "exceeds the model's max_position_embeddings" not in out


def test_advise_of_a_request_longer_than_the_model_names_its_length_not_a_rounded_one(run, short_positions):
    # was 'max_model_len 2048 exceeds ...' for a 1,000 + 32-token request: a figure nobody typed
    code, out, err = run("advise", str(short_positions), "--chips", "l4", "--workload", "ctx=1000,clients=1", "--json")
    assert code == 2, err
    rows = json.loads(out)["rows"]
    assert [r["verdict"] for r in rows] == [
        "max_model_len 1032 exceeds the model's max_position_embeddings 1024; vLLM refuses it unless its environment "
        "has VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (right only where the model's RoPE reaches that far)"
    ]


@pytest.mark.parametrize(
    ("longest", "positions", "planned"),
    [(160, None, 2048), (160, 1024, 1024), (33_024, 40_960, 40_960), (5_000, 131_072, 8192), (8193, 8192, 8193)],
)
def test_advice_max_model_len_stays_within_the_models_positions(longest, positions, planned):
    assert advice_max_model_len(longest, positions) == planned


def test_advise_names_the_chips_option_for_an_unknown_tpu_slice(run):
    # was '(--chip)', a flag advise does not take (the GPU branch of planner.chips.find already named --chips)
    line = one_error_line(run, "advise", "SmolLM2-135M-Instruct", "--chips", "v6e-256")
    assert line.startswith("unknown chip 'v6e-256' (--chips): no TPU of that name or slice in accelerators.json")


def test_cloud_probe_refuses_an_unknown_chip_before_asking_to_go_ahead(run, monkeypatch, tmp_path):
    # was 'create and at once delete weird (flex-start) in each zone: billed seconds: add --yes to go ahead ...':
    # the chip was checked only after the user said yes
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")  # any call would fail loudly
    line = one_error_line(run, "cloud", "probe", "--chip", "weird")
    assert line.startswith("--chip weird: not a Cloud TPU chip onechip knows (")


@pytest.mark.parametrize(
    "name", ["GITHUB_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "HF_HUB_TOKEN"]
)
def test_set_refuses_an_environment_variable_whose_name_says_it_is_a_secret(run, name):
    # was exit 0, the value printed in the plan ('env GITHUB_TOKEN=...', 'docker: -e GITHUB_TOKEN=...') and put on the
    # docker command line: only HF_TOKEN, HUGGING_FACE_HUB_TOKEN and VLLM_API_KEY were refused by name
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--set", f"{name}=n0t-a-real-value")
    assert code == 2 and "n0t-a-real-value" not in out + err
    assert err.strip() == (
        f"error: --set {name}: a secret never goes on the command line (the plan, the dry run and ps would show it); "
        "export it where the engine runs instead"
    )


@pytest.mark.parametrize(
    "item",
    [
        "TOKENIZERS_PARALLELISM=false",
        "VLLM_MAX_TOKENS_PER_BATCH=8",
        "VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD=256",  # vllm/envs.py (0.34.0): an integer, no secret
        "VLLM_MULTI_STREAM_GEMM_TOKEN_THRESHOLD=1024",
    ],
)
def test_set_takes_an_environment_variable_that_only_contains_a_secret_word(run, item):
    # the name is read word by word: TOKENIZERS is not TOKEN (Hugging Face tokenizers' own switch)
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--set", item)
    assert code == 0, err
    assert f"-e {item}" in out


def test_set_takes_a_variable_that_holds_the_path_of_a_secret_file(run):
    # GOOGLE_APPLICATION_CREDENTIALS holds the path of the key file, not the key: printing the path shows no secret
    item = "GOOGLE_APPLICATION_CREDENTIALS=/var/secrets/google/adc.json"
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--set", item)
    assert code == 0, err
    assert f"-e {item}" in out
    # the key file's text in it is still a secret (errors.names_a_path)
    blob = '{"type":"service_account","private_key_id":"n0t-a-real-value"}'
    code, out, err = run(
        "plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--set", f"GOOGLE_APPLICATION_CREDENTIALS={blob}"
    )
    assert code == 2 and "n0t-a-real-value" not in out + err and "a secret never goes on the command line" in err


def test_a_plan_on_part_of_a_tpu_slice_says_the_other_chips_are_unused(run):
    # was 'verdict: does not fit: weights 14.96 GiB exceed the cap 14.49 GiB' for Llama 3.1 8B on 'v5e-8' with no
    # word that TP 1 planned one of its 8 chips (a v7x chip's two devices were said: devices-per-chip)
    def warnings(*argv: str) -> dict[str, str]:
        code, out, err = run("plan", "Llama-3.1-8B-Instruct", "--chip", "v5e-8", "--max-model-len", "8192", *argv)
        assert code == (0 if json.loads(out)["fits"] else 10), err  # 10: the verdict is does not fit (plan --help)
        return {w["code"]: w["message"] for w in json.loads(out)["warnings"]}

    assert warnings("--json")["slice-chips"] == (
        "v5e-8 is a slice of 8 chips: TP=1 plans and runs on 1 of them; --tensor-parallel-size 8 uses them all"
    )
    assert "slice-chips" not in warnings("--json", "--tensor-parallel-size", "8")
    assert "slice-chips" not in warnings("--json", "--replicas", "4")  # each replica's share is 2 chips at TP 2


@pytest.mark.parametrize("chip", ["gpu:0GiB", "gpu:-5GiB", "gpu:0.0GB"])
def test_a_card_of_no_memory_is_refused_for_its_size_not_its_spelling(run, chip):
    # was "write the card's memory as gpu:<size>GiB or gpu:<size>GB": what 'gpu:0GiB' already is
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", chip)
    assert line == f"chip {chip!r}: a card's memory is more than 0 GiB; give the size it has, e.g. gpu:24GiB"
