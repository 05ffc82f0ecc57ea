#!/usr/bin/env bash
# Issue 23's closing numbers: two embedded engines (one CPU core each) behind vllm-router, agent sessions
# through the router under round_robin and cache_aware, then a run with replica 1 killed mid-bench.
# Not a test. Run it under the machine's engine lock, with a private ONECHIP_HOME:
#   flock /tmp/onechip-engine.lock bash benchmarks/replicas_embedded.sh /tmp/replicas-run
# Kept small for a shared 2-core machine: 4 clients x 1 session x 4 turns, 16 output tokens, 1 rep.
set -euo pipefail
ROOT=${1:?usage: replicas_embedded.sh OUT_DIR}
PY=${PY:-python}
export ONECHIP_HOME=${ONECHIP_HOME:-/tmp/replicas-home}
WORK=(--workload agent --contexts 256 --clients 4 --turns 4 --reps 1 --output-tokens 16 --warmup-requests 1)
oc() { "$PY" -m onechip "$@"; }
field() { { oc status --json || true; } | "$PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
mkdir -p "$ROOT"
trap 'oc down >/dev/null 2>&1 || true' EXIT
date -u +"start %FT%TZ"
oc up --replicas 2 --port 18300 --router-port 18400 --timeout-s 900
oc status || true
URL=$(field 'd["router"]["url"]')
date -u +"policies %FT%TZ"
oc bench "$URL" "${WORK[@]}" --router-policies round_robin,cache_aware --out "$ROOT/policies"
date -u +"kill %FT%TZ"
PID=$(field 'd["replicas"][1]["pid"]')
(sleep "${KILL_AFTER_S:-25}"; kill -9 -- "-$PID") &
oc bench "$URL" "${WORK[@]}" --out "$ROOT/killed" || true
oc status || true
date -u +"end %FT%TZ"
