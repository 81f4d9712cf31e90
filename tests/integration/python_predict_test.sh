#!/usr/bin/env bash
# docs/predict.py, the README's way to use a model.pt from Python: trained by a short local job,
# its predictions' MAPE over the sample must be tteps-eval's (the same model, the same trips).
# Exits 77 (skipped) where python3 cannot import torch (install-deps installs python3-torch).
#   python_predict_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
py=/usr/bin/python3
"$py" -c 'import torch' 2>/dev/null || { echo "SKIPPED: $py cannot import torch (python3-torch)"; exit 77; }
d=$(mktemp -d /tmp/tteps-predict.XXXXXX)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
data=$src/data/chengdu/trajectories.jsonl
"$bin/tteps-worker" --mode=local --max_steps 10 --out_dir "$d/run" --train_data "$data" \
  >"$d/train.log" 2>&1 || fail "the local job failed: $(tail -3 "$d/train.log")"
"$bin/tteps-eval" --model "$d/run/model.pt" --data "$data" >"$d/eval.json" 2>"$d/eval.log" ||
  fail "tteps-eval failed: $(tail -3 "$d/eval.log")"
"$py" "$src/docs/predict.py" "$d/run/model.pt" "$data" >"$d/predictions.jsonl" 2>"$d/predict.log" ||
  fail "docs/predict.py failed: $(tail -5 "$d/predict.log")"
"$py" - "$d/eval.json" "$d/predictions.jsonl" <<'PY' || exit 1
import json, sys
want = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
rows = [json.loads(l) for l in open(sys.argv[2])]
mape = sum(abs(r["predicted_s"] - r["label_s"]) / r["label_s"] for r in rows) / len(rows)
if len(rows) != want["n"] or abs(mape - want["mape"]) > 1e-5 * want["mape"]:
    print(f"FAIL: docs/predict.py: {len(rows)} trips, MAPE {mape}; tteps-eval: {want}")
    sys.exit(1)
print(f"PASS: {len(rows)} trips, MAPE {mape:.6f} (tteps-eval {want['mape']:.6f})")
PY
