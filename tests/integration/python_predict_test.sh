#!/usr/bin/env bash
# worker/tools/tteps_predict.py, copied alone into an empty directory and run from another one on
# the sample without `time` and `time_gap` (routes not yet driven): trained by a short local
# job, the model's estimates must be tteps-predict's for the same routes (each within 1e-4
# relative: PyTorch's kernels round otherwise) and imply tteps-eval's MAPE on the labelled
# trips. Then ids are echoed, and a bad record fails (naming file, line and field) or is skipped.
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
"$bin/tteps-eval" --model "$d/run/model.pt" --data "$data" --predictions "$d/eval.txt" \
  >"$d/eval.json" 2>"$d/eval.log" || fail "tteps-eval failed: $(tail -3 "$d/eval.log")"

mkdir "$d/alone" "$d/cwd"
cp "$src/worker/tools/tteps_predict.py" "$d/alone/"
# routes.jsonl: the sample without labels; small.jsonl: two trips with ids, then a bad one.
"$py" - "$data" "$d" <<'PY' || fail "could not write the inputs"
import json, sys
trips = [json.loads(line) for line in open(sys.argv[1])]
for trip in trips:
    del trip["time"], trip["time_gap"]
with open(f"{sys.argv[2]}/routes.jsonl", "w") as f:
    f.writelines(json.dumps(trip) + "\n" for trip in trips)
small = [dict(trips[0], id="route-a"), dict(trips[1], id=7), dict(trips[2], weekID=9)]
with open(f"{sys.argv[2]}/small.jsonl", "w") as f:
    f.writelines(json.dumps(trip) + "\n" for trip in small)
PY
"$bin/tteps-predict" --model "$d/run/model.pt" --data "$d/routes.jsonl" --out "$d/cpp.jsonl" \
  2>"$d/cpp.log" || fail "tteps-predict failed: $(tail -3 "$d/cpp.log")"
predict() { (cd "$d/cwd" && "$py" ../alone/tteps_predict.py --model ../run/model.pt "$@"); }
predict --data ../routes.jsonl --out ../estimates.jsonl 2>"$d/predict.log" ||
  fail "tteps_predict.py failed: $(tail -5 "$d/predict.log")"
grep -q "1200 trips in .* s, .* trips/s" "$d/predict.log" ||
  fail "no trips, seconds and trips/s on stderr: $(tail -3 "$d/predict.log")"
"$py" - "$data" "$d/eval.json" "$d/cpp.jsonl" "$d/estimates.jsonl" <<'PY' || exit 1
import json, sys
labels = [json.loads(line)["time"] for line in open(sys.argv[1])]
want = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
cpp = [json.loads(line)["estimate_s"] for line in open(sys.argv[3])]
rows = [json.loads(line) for line in open(sys.argv[4])]
if [list(r) for r in rows] != [["line", "estimate_s"]] * len(rows) or \
        [r["line"] for r in rows] != list(range(1, len(labels) + 1)) or len(cpp) != len(rows):
    print(f"FAIL: {len(rows)} rows, not one {{line, estimate_s}} per trip ({len(cpp)}): {rows[:2]}")
    sys.exit(1)
rel = [abs(r["estimate_s"] - c) / abs(c) for r, c in zip(rows, cpp)]
worst = max(range(len(rel)), key=rel.__getitem__)
mape = sum(abs(r["estimate_s"] - t) / t for r, t in zip(rows, labels)) / len(rows)
if rel[worst] > 1e-4 or len(rows) != want["n"] or abs(mape - want["mape"]) > 1e-5 * want["mape"]:
    print(f"FAIL: line {worst + 1}: {rows[worst]['estimate_s']} s, tteps-predict {cpp[worst]} "
          f"(relative {rel[worst]:.2e}); MAPE {mape} over {len(rows)}; tteps-eval: {want}")
    sys.exit(1)
print(f"PASS: {len(rows)} trips without labels, max relative difference to tteps-predict "
      f"{rel[worst]:.2e}; MAPE {mape:.6f} (tteps-eval {want['mape']:.6f})")
PY

predict --data ../small.jsonl >"$d/small.out" 2>"$d/small.log"
[ $? -eq 1 ] && grep -q "small.jsonl:3: field 'weekID': " "$d/small.log" ||
  fail "a bad record: not exit 1 with FILE:LINE: field: $(tail -3 "$d/small.log")"
predict --data ../small.jsonl --bad_records skip >"$d/small.out" 2>"$d/small.log" ||
  fail "--bad_records skip failed: $(tail -3 "$d/small.log")"
grep -q "1 bad record skipped (line 3; " "$d/small.log" ||
  fail "the skipped record is not counted: $(tail -3 "$d/small.log")"
"$py" - "$d/small.out" <<'PY' || exit 1
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
if [[(k, r[k]) for k in ("line", "id")] for r in rows] != [[("line", 1), ("id", "route-a")],
                                                         [("line", 2), ("id", 7)]] or \
        [list(r) for r in rows] != [["line", "id", "estimate_s"]] * 2:
    print(f"FAIL: ids not echoed between line and estimate_s: {rows}")
    sys.exit(1)
print("PASS: ids echoed; a bad record fails with its file, line and field, or is skipped")
PY
