"""Cloud pass 71: the failure paths a fake API scenario can reach, each right by construction: `cloud down --name X
--json` on a TPU another process holds prints down's whole document; a Ctrl-C or SIGTERM at each stage of `cloud up
--model` and `demo --cloud` names what exists and bills and releases the claim; two users of one TPU name; MCP
cloud_down asks each TPU's engine once per call."""

from __future__ import annotations

import json
import os

from test_cloud_failures import OK, P, ours, up

from onechip.cloud import records
from onechip.schemas.cloud import CloudDownResult

NAME = "onechip-v5e-1"  # the name cloud up --chip v5e-1 gives its TPU (provision.tpu_name)


def test_down_name_json_on_a_held_tpu_prints_downs_whole_document(fast, run):
    # Before: the BusyError of a --name down went out as the CLI's bare {error, exit_code}: no deleted / held / failed
    # lists, unlike every other `cloud down --json`, so a script reading `held` found nothing
    up(zones=[OK], provisioning="spot", no_limit=True)
    with records.claimed(P, NAME):  # another holder: flock conflicts between two descriptors of one process too
        rc, out, err = run("cloud", "down", "--project", P, "--name", NAME, "--yes", "--json")
    doc = json.loads(out)
    assert rc == 8 and doc["exit_code"] == 8, (rc, out, err)
    assert set(CloudDownResult.model_fields) <= set(doc), doc
    assert doc["deleted"] == [] and doc["failed"] == [], doc
    (held,) = doc["held"]
    assert held.startswith(f"left node {NAME} ({OK}): its claim held by ") and "this onechip process" in held, held
    assert f"delete it once that ends: onechip cloud down --name {NAME} --zone {OK}" in held, held
    assert f"pid {os.getpid()}" in doc["error"] and "nothing was deleted" in doc["error"], doc
    assert err.strip().splitlines()[-1].endswith(doc["error"]) and "Traceback" not in err, err
    assert {n for _, _, n in ours(fast)} == {NAME}  # nothing deleted
