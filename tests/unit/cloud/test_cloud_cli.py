"""`onechip cloud ...` end to end in-process against the loopback fake TPU API: the option names the issue
fixes, one-line errors with exit codes, confirmation, JSON output."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from factories import one_error_line

P = "proj-1"


def test_up_status_down_round_trip(fake_api, run):
    fake_api.wait_s = 1.0  # long enough that a loaded machine still polls while it is WAITING_FOR_RESOURCES
    rc, out, err = run("cloud", "up", "--chip", "v5e-1", "--project", P, "--zone", "europe-west4-a,us-west4-a",
                       "--provisioning", "flex-start", "--max-run-duration", "4h", "--valid-until", "1h",
                       "--name", "demo-qr", "--yes", "--json")  # fmt: skip
    assert rc == 0, err
    result = json.loads(out)
    assert [a["outcome"] for a in result["attempts"]] == ["unsupported", "available"]
    assert result["resource"]["external_ip"] == "127.0.0.1"
    assert "WAITING_FOR_RESOURCES" in err and "ACTIVE" in err  # progress through the states, on stderr

    rc, out, err = run("cloud", "status")
    assert rc == 0, err
    assert "demo-qr (queued-resource) in us-west4-a: ACTIVE, flex-start, IP 127.0.0.1" in " ".join(out.split())

    rc, out, err = run("cloud", "down", "--name", "demo-qr", "--yes")
    assert rc == 0, err
    assert "deleted queued-resource demo-qr (us-west4-a)" in out
    assert not fake_api.queued and not fake_api.nodes


def test_spot_without_a_limit_is_refused_before_any_call(fake_api, run):
    rc, out, err = run("cloud", "up", "--project", P, "--zone", "us-west4-a", "--provisioning", "spot", "--yes")
    assert rc == 2
    assert err.count("\n") == 1 and "--max-hours H" in err and "--no-limit" in err
    assert fake_api.requests == []


def test_burn_is_printed_before_anything_is_created(fake_api, run):
    rc, out, err = run("cloud", "up", "--project", P, "--zone", "us-west4-a", "--provisioning", "spot",
                       "--max-hours", "2", "--yes")  # fmt: skip
    assert rc == 0, err
    first = out.index("will create")
    assert "$0.5779/h" in out[first:] and "bills until deleted" in out
    assert "--max-hours ends at (status warns after) 20" in out  # the deadline, printed
    assert "delete it: onechip cloud down --name onechip-v5e-1 --zone us-west4-a --project proj-1 --yes" in out


def test_no_terminal_needs_yes(fake_api, run, monkeypatch):
    with open("/dev/null") as devnull:
        monkeypatch.setattr(sys, "stdin", devnull)
        rc, out, err = run("cloud", "up", "--project", P, "--zone", "us-west4-a")
    assert rc == 2 and "add --yes" in err
    # reads only (api.cloud_up_quote looks for a live TPU of ours to reuse, as `cloud down` lists before it asks)
    assert fake_api.requests and all(method == "GET" for method, _, _ in fake_api.requests)


def test_every_zone_refusing_exits_with_one_line(fake_api, run):
    rc, out, err = run("cloud", "up", "--project", P, "--zone", "europe-west4-a", "--provisioning", "on-demand",
                       "--no-limit", "--yes")  # fmt: skip
    assert rc == 7
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "europe-west4-a: stockout" in lines[0]
    assert "Traceback" not in err


def test_probe_and_zones_json(fake_api, run):
    rc, out, err = run("cloud", "probe", "--project", P, "--zone", "us-west4-a,europe-west4-a",
                       "--provisioning", "spot", "--yes", "--json")  # fmt: skip
    assert rc == 0, err
    assert [a["outcome"] for a in json.loads(out)] == ["available", "stockout"]
    rc, out, err = run("cloud", "zones", "--chip", "v5e-1", "--provisioning", "spot", "--json")
    assert rc == 0
    assert {(z["zone"], z["outcome"]) for z in json.loads(out) if z["source"] == "onechip cloud probe"} == {
        ("us-west4-a", "available"),
        ("europe-west4-a", "stockout"),
    }


def test_no_credentials_is_one_line(monkeypatch, tmp_path, run):
    monkeypatch.delenv("ONECHIP_TPU_API_ENDPOINT", raising=False)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    rc, out, err = run("cloud", "up", "--project", P, "--zone", "us-west4-a", "--yes")
    assert rc in (3, 7) and err.startswith("error:") and "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "was not found"),
        ("not json", "is not a valid json file"),
        (
            '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nKEYSECRET\\n-----END PRIVATE '
            'KEY-----\\n", "client_email": "a@b.c", "token_uri": "http://127.0.0.1:9/token"}',
            "Failed to load service account credentials",
        ),
    ],
)
def test_unusable_credentials_file_is_named_not_called_missing(monkeypatch, tmp_path, run, content, said):
    # was 'no Google credentials: ... (or set GOOGLE_APPLICATION_CREDENTIALS)' while it was set: the user was
    # told to set what they had set, not that its file was missing or broken
    monkeypatch.delenv("ONECHIP_TPU_API_ENDPOINT", raising=False)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    creds = tmp_path / "adc.json"
    if content is not None:
        creds.write_text(content)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(creds))
    line = one_error_line(run, "cloud", "down", "--name", "x", "--zone", "us-west4-a", "--project", P, "--yes", code=7)
    assert line.startswith("GOOGLE_APPLICATION_CREDENTIALS names credentials google-auth cannot use") and said in line
    assert "KEYSECRET" not in line
    # the path is what to fix (it was '***', redacted as the value of a secret-named variable); the file's text never
    assert str(creds) in line and "***" not in line


def test_cli_start_does_not_load_google():
    code = "import sys, onechip.cli.main; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "google" not in proc.stdout.split()


def test_missing_google_auth_is_one_line(monkeypatch, tmp_path, run):
    monkeypatch.delenv("ONECHIP_TPU_API_ENDPOINT", raising=False)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "google.auth", None)  # `import google.auth` now raises ImportError
    rc, out, err = run("cloud", "up", "--project", P, "--zone", "us-west4-a", "--yes")
    assert rc == 3
    assert err.strip() == "error: onechip cloud needs google-auth: pip install 'onechip[cloud]'"


def test_ctrl_c_during_up_says_what_exists_and_how_to_delete_it(fake_api, tmp_path):
    """A real SIGINT to `onechip cloud up` while its flex-start request waits in the queue."""
    import os
    import signal
    import time

    env = {**os.environ, "ONECHIP_TPU_API_ENDPOINT": fake_api.url, "ONECHIP_CLOUD_POLL_S": "0.1",
           "ONECHIP_HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join(sys.path)}  # fmt: skip
    argv = [sys.executable, "-m", "onechip", "cloud", "up", "--project", P, "--zone", "us-central1-b", "--yes"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not fake_api.queued and time.monotonic() < deadline:  # wait until the request exists
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "queued-resource onechip-v5e-1 exists in us-central1-b" in err
    assert "onechip cloud down --name onechip-v5e-1 --zone us-central1-b --project proj-1 --yes" in err
    assert "Traceback" not in err
    assert len(fake_api.queued) == 1  # still there: said, not silently left


def test_a_cloud_demo_asks_before_it_creates_a_tpu_as_cloud_up_does(fake_api, run, tmp_path):
    # Before: `demo --cloud gcp` created a billed TPU with no question, where `cloud up` asks (or needs --yes)
    rc, out, err = run("demo", "--cloud", "gcp", "--model", "google/gemma-4-E2B-it", "--chip", "v5e-1", "--project",
                       P, "--zone", "us-west4-a", "--provisioning", "spot", "--max-hours", "1",
                       "--out", str(tmp_path / "run"))  # fmt: skip
    assert rc == 2 and "will create v5e-1 spot:" in err
    assert "error: create v5e-1 (spot) for the demo: add --yes to go ahead without a terminal" in err
    assert not any(method == "POST" for method, *_ in fake_api.requests) and not (tmp_path / "run").exists()


def test_a_probe_whose_token_never_came_says_nothing_was_made(monkeypatch, tmp_path):
    # was: "Google's token endpoint could not be reached; node onechip-probe-... may exist in us-west4-a: onechip
    # cloud down ...", and that node stayed recorded, so every later `cloud status` asked the API about it; the
    # create never left (no token), so nothing can exist
    import httpx
    from google.auth.exceptions import TransportError

    from onechip.cloud import auth, provision, records
    from onechip.cloud.tpu_api import TpuApi
    from onechip.errors import CloudError
    from onechip.schemas.cloud import CloudProbeRequest

    class NoToken:
        def before_request(self, *args):
            raise TransportError("connection refused")

    monkeypatch.delenv("ONECHIP_TPU_API_ENDPOINT", raising=False)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.001")
    monkeypatch.setattr(auth, "_adc", lambda: (NoToken(), P))
    sent: list[httpx.Request] = []
    api = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(500))))
    request = CloudProbeRequest(chip="v5e-1", project=P, zones=["us-west4-a"], provisioning="spot")
    with pytest.raises(CloudError) as caught:
        provision.probe(api, request, lambda event: None)
    assert caught.value.reason == "unsent" and "may exist" not in str(caught.value), caught.value
    assert "not sent: Google's token endpoint could not be reached; tried 7 times over " in str(caught.value)
    assert not sent and records.load_all() == []


@pytest.mark.parametrize("value", ["http://127.0.0.1:abc", "notaurl"])
@pytest.mark.parametrize(
    ("env", "argv"),
    [
        ("ONECHIP_TPU_API_ENDPOINT", ["cloud", "down", "--name", "x", "--zone", "us-west4-a", "--project", P, "--yes"]),
        ("ONECHIP_BILLING_API_ENDPOINT", ["prices", "refresh", "--chip", "v5e-1"]),
    ],
)
def test_an_endpoint_override_that_names_no_server_is_one_line(monkeypatch, tmp_path, run, env, argv, value):
    # was 'internal error (InvalidURL: Invalid port: 'abc')', and 'notaurl' was tried 7 times as if it had not
    # answered ('no answer (UnsupportedProtocol)')
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.001")
    monkeypatch.setenv(env, value)
    line = one_error_line(run, *argv)
    assert (
        line
        == f"{env}={value!r}: not a server URL: give http://HOST:PORT or https://HOST:PORT, e.g. http://127.0.0.1:8000"
    )


@pytest.mark.parametrize(("env", "value"), [("ONECHIP_CLOUD_POLL_S", "-1"), ("ONECHIP_CLOUD_POLL_S", "abc"),
                                            ("ONECHIP_CLOUD_TIMEOUT_S", "abc")])  # fmt: skip
def test_a_cloud_timing_variable_that_is_no_duration_is_one_line(fake_api, monkeypatch, run, env, value):
    # were internal errors: 'ValueError: sleep length must be non-negative', 'could not convert string to float'
    monkeypatch.setenv(env, value)
    line = one_error_line(run, "cloud", "down", "--name", "x", "--zone", "us-west4-a", "--project", P, "--yes")
    assert line == f"${env} must be a positive number of seconds, got {value!r}"


def test_cloud_help_documents_the_exit_codes(run):
    """Before: no help or README said what `onechip cloud ...` exits with, so a script could not tell a stockout in
    every zone (7) from a bad flag (2) or a declined prompt (1). Each code the cloud commands exit with is listed."""
    code, out, _ = run("cloud", "--help")
    text = " ".join(out.split())
    assert code == 0 and "Exit codes:" in text, out
    for said in ("0 done", "1 the prompt was declined", "2 bad input", "3 google-auth", "5 an engine",
                 "7 the cloud API", "130 interrupted", "143 stopped by SIGTERM"):  # fmt: skip
        assert said in text, (said, text)


@pytest.mark.parametrize(
    ("argv", "zone", "near"),
    [
        (
            ("up", "--zone", "us-central1-z", "--provisioning", "spot", "--max-hours", "1", "--yes"),
            "us-central1-z",
            " (did you mean us-central1-b?)",
        ),
        (
            ("up", "--zone", "uswest4-a", "--provisioning", "flex-start", "--yes"),
            "uswest4-a",
            " (did you mean us-west4-a?)",
        ),
        (("status", "--zone", "us-central1-z"), "us-central1-z", " (did you mean us-central1-b?)"),
        (("down", "--zone", "uswest4-a", "--name", "x", "--yes"), "uswest4-a", " (did you mean us-west4-a?)"),
    ],
)
def test_a_zone_the_api_has_not_is_one_line_naming_it_and_how_to_list_zones(fake_api, run, argv, zone, near):
    # Before: "error: POST proj-1/locations/us-central1-z/nodes: Resource 'projects/proj-1/locations/us-central1-z'
    # was not found": the API's bare 404, saying neither that the zone was the fault nor where the zones are listed
    fake_api.only_zones = True
    line = one_error_line(run, "cloud", *argv, "--project", P, code=7)
    assert line.startswith(f"zone {zone!r} is not a Cloud TPU zone of project {P}{near}: "), line
    assert line.endswith(f"list the zones with `gcloud compute tpus locations list --project {P}` (`onechip cloud "
                         "zones` names those seen to offer a chip)")  # fmt: skip
    assert not fake_api.nodes and not fake_api.queued


@pytest.mark.parametrize(
    ("provisioning", "limit", "ended"),
    [("spot", ("--max-hours", "1"), "PREEMPTED"), ("flex-start", ("--max-run-duration", "1h"), "SUSPENDED")],
)
def test_status_of_a_tpu_that_ended_says_so_and_no_billing_end_still_to_come(fake_api, run, provisioning, limit, ended):
    # Before: a preempted spot TPU's status line said '--max-hours ends <an hour on>', a flex-start run that ended
    # early 'billing ends <an hour on>' and 'no IP yet', as if each billed on until then and might still get an IP
    fake_api.create_s = fake_api.wait_s = fake_api.provisioning_s = 0.02
    rc, _, err = run("cloud", "up", "--project", P, "--zone", "us-west4-a", "--provisioning", provisioning, *limit,
                     "--yes")  # fmt: skip
    assert rc == 0, err
    rc, out, _ = run("cloud", "status")
    assert rc == 0 and "ends 20" in out  # running: its billing end is said
    if ended == "PREEMPTED":
        for node in fake_api.nodes.values():
            node["state"] = ended
    else:
        for qr in fake_api.queued.values():  # the end of a flex-start run: its node deleted (the fake's run_s)
            qr["state"] = {"state": ended}
        fake_api.nodes.clear()
    rc, out, _ = run("cloud", "status")
    text = " ".join(out.split())
    assert (
        rc == 0
        and f"onechip-v5e-1 ({'node' if ended == 'PREEMPTED' else 'queued-resource'}) in us-west4-a: {ended}, " in text
    )
    assert "ends 20" not in text and "no IP yet" not in text, text
    assert f"warning {ended}: " in text and "onechip cloud down --name onechip-v5e-1" in text
    if ended == "SUSPENDED":  # was 'SUSPENDED: it will not run again': not that nothing bills, nor why it ended
        assert re.search(r"warning SUSPENDED: its run ended and its TPU was deleted \(before its max run duration, "
                         r"due 20[-\d]+T[\d:]+\+00:00\); it does not run and will not run again, and nothing of it "
                         "bills; delete it: ", text), text  # fmt: skip
    rc, out, _ = run("cloud", "status", "--json")
    (st,) = json.loads(out)["resources"]
    assert rc == 0 and st["deadline"] is None and st["resource"]["ended_at"] and st["resource"]["state"] == ended
