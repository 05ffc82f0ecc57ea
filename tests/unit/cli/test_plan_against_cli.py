"""`onechip plan --against LOG` tells the user, in one line, when the boot was not stored as the deployment's
measured boot and why (api.remember_boot, CrossCheck.not_stored)."""

from __future__ import annotations


def test_a_log_of_another_card_is_said_not_stored(run, tmp_path) -> None:
    # the H100 startup line of vLLM 0.19.0 (tests/fixtures/bootlogs/h100-llama31-8b-tp1-v0190.log) against an H200 plan
    log = tmp_path / "h100.log"
    log.write_text(
        "(EngineCore pid=241) DEBUG 04-22 00:24:12 [v1/worker/gpu_worker.py:661] Free memory on device "
        "(78.68/79.19 GiB) on startup.\n"
        "(EngineCore pid=241) INFO 04-22 00:24:40 [kv_cache_utils.py:1319] GPU KV cache size: 476,016 tokens\n"
    )
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "h200", "--against", str(log))
    assert code == 0, err
    said = " ".join(out.split())  # rich wraps at the terminal's width
    assert "total memory per GPU 79.19 GiB, planned h200's 139.81 GiB (another card)" in said
    assert said.endswith(
        "not stored as this deployment's measured boot: the log is of another deployment (see the cross-check)"
    )
