"""QA of round 64's refusals (helper qa64b, 2026-12-07): a log that opens with a JSON dump, a plan behind a byte-order
mark; each test failed before its fix."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("offline_home")

# vLLM's first line of a boot (vllm/entrypoints/openai/api_server.py, 'vLLM API server version %s'), as the other
# cli tests read it: `logs` says the version it names
VERSION_LINE = "INFO 12-06 23:23:49 [api_server.py:1] vLLM API server version 0.32.0"
CONFIG = {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": 1, "max_model_len": 8192}


@pytest.mark.parametrize("dump", [json.dumps(CONFIG), json.dumps(CONFIG, indent=2)], ids=["compact", "indented"])
def test_a_log_whose_first_lines_are_a_json_config_dump_is_read_as_a_log(run, tmp_path, dump):
    # a wrapper (a compose entrypoint, a job script) that prints its config as JSON before `vllm serve` starts: its
    # log opens with a JSON value and goes on with vLLM's text lines; the JSON-document refusal judged by the first
    # line alone and refused it as 'a JSON document, not a log', exit 2
    (tmp_path / "boot.log").write_text(f"{dump}\n{VERSION_LINE}\n")
    code, out, err = run("logs", "boot.log")
    assert code == 0 and "vLLM 0.32.0" in out, (code, out, err)


def test_json_lines_and_a_document_are_still_refused(run, tmp_path):
    # what the refusal is for stays refused: every line a JSON value (requests.jsonl), one indented document, whole
    # or broken
    rows = "".join(json.dumps({"ttft_ms": 1.5 + i}) + "\n" for i in range(3))
    (tmp_path / "requests.jsonl").write_text(rows)
    (tmp_path / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    (tmp_path / "broken.json").write_text(json.dumps(CONFIG, indent=2)[:-2] + ",\n}\n")  # a hand-edit's stray comma
    for name in ("requests.jsonl", "config.json", "broken.json"):
        code, _, err = run("logs", name)
        assert code == 2 and "a JSON document, not a log" in err, (name, err)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32", "utf-16-le", "utf-16-be"])
def test_a_plan_saved_behind_a_byte_order_mark_is_read(run, tmp_path, plan_file, encoding):
    # a plan Windows saved: Notepad's 'UTF-8 with BOM' ('utf-8-sig'), Windows PowerShell 5.1's `onechip plan --json >
    # plan.json` (UTF-16 LE behind its BOM: Microsoft's about_Character_Encoding; Python's 'utf-16' writes the BOM);
    # refused as 'Invalid JSON: expected value at line 1 column 1', where RFC 8259 section 8.1 lets a parser ignore it;
    # and as the log reader reads them (textcodec): UTF-32 behind its mark ('Out-File -Encoding utf32', read as UTF-16
    # before), UTF-16 without one (Python's 'utf-16-le' and '-be' write none: refused as 'not a plan JSON' before)
    bom = tmp_path / "bom.json"
    bom.write_bytes(plan_file.read_text(encoding="utf-8").encode(encoding))
    code, out, err = run("simulate", "--plan", str(bom), "--contexts", "128", "--clients", "1", "--reps", "1",
                         "--out", str(tmp_path / "made"))  # fmt: skip
    assert code == 0, err
