#!/usr/bin/env bash
# Runs the real programs: tteps-worker --mode=local writes the output contract (config.json
# included), tteps-eval reproduces the run's final evaluation from model.pt alone, and bad input
# fails clearly.
set -euo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ms() { echo $(($(date +%s%N) / 1000000)); }
field() { grep -o "\"$2\":[^,}]*" "$1" | head -1 | cut -d: -f2; }

data=$src/data/chengdu/trajectories.jsonl
head -n 300 "$data" >"$tmp/train.jsonl"
tail -n 100 "$data" >"$tmp/eval.jsonl"

# 1. A short local run writes metrics.jsonl, summary.json and model.pt.
"$bin/tteps-worker" --mode=local --train_data "$tmp/train.jsonl" --eval_data "$tmp/eval.jsonl" \
  --max_steps 8 --log_every 2 --out_dir "$tmp/run" >"$tmp/stdout" 2>"$tmp/stderr" ||
  { cat "$tmp/stderr"; fail "tteps-worker exited non-zero"; }
for f in metrics.jsonl summary.json model.pt model_last.pt config.json; do [ -s "$tmp/run/$f" ] || fail "missing $f"; done
grep -q '"mode":"local"' "$tmp/run/summary.json" || fail "summary has no mode"
[ "$(grep -c '"type":"train"' "$tmp/run/metrics.jsonl")" -eq 4 ] || fail "expected 4 train lines"
grep -q '"type":"eval"' "$tmp/run/metrics.jsonl" || fail "no eval line"
grep -q '"max_steps": 8,' "$tmp/run/config.json" || fail "config.json lacks the effective configuration"

# 2. tteps-eval on model_last.pt alone gives the run's final evaluation, on model.pt its best
#    (--keep_best: evaluations every 2 steps, the lowest MAPE).
"$bin/tteps-eval" --model "$tmp/run/model_last.pt" --data "$tmp/eval.jsonl" \
  --predictions "$tmp/pred.txt" >"$tmp/eval.json" 2>"$tmp/eval.err" ||
  { cat "$tmp/eval.err"; fail "tteps-eval exited non-zero"; }
want=$(grep -o '"final_eval":{[^}]*}' "$tmp/run/summary.json" | sed 's/"final_eval"://')
got=$(cat "$tmp/eval.json")
[ "$want" = "$got" ] || fail "tteps-eval gave $got, the run's summary says $want"
[ "$(wc -l <"$tmp/pred.txt")" -eq 100 ] || fail "expected 100 predictions"
"$bin/tteps-eval" --model "$tmp/run/model.pt" --data "$tmp/eval.jsonl" >"$tmp/best.json" \
  2>"$tmp/eval.err" || { cat "$tmp/eval.err"; fail "tteps-eval on model.pt exited non-zero"; }
best=$(grep -o '"best_eval":{[^}]*}' "$tmp/run/summary.json" | sed 's/"best_eval":{"step":[0-9]*,/{/')
[ "$best" = "$(cat "$tmp/best.json")" ] || fail "model.pt evaluates to $(cat "$tmp/best.json"), best_eval says $best"
lowest=$(grep -o '"eval":{"mape":[0-9.e-]*' "$tmp/run/metrics.jsonl" | sed 's/.*"mape"://' | sort -g | head -1)
case "$best" in *"\"mape\":$lowest,"*) ;; *) fail "best_eval $best is not the lowest MAPE $lowest" ;; esac
# Without an evaluation set: no evaluation reported, no best model; model.pt is the last.
"$bin/tteps-worker" --mode=local --train_data "$tmp/train.jsonl" --eval_fraction 0 \
  --max_steps 2 --out_dir "$tmp/noeval" >"$tmp/noeval.out" 2>"$tmp/noeval.err" ||
  { cat "$tmp/noeval.err"; fail "a run without an evaluation set failed"; }
grep -q '"final_eval":null' "$tmp/noeval/summary.json" || fail "no evaluation set, yet: $(cat "$tmp/noeval/summary.json")"
grep -q '"best_eval"' "$tmp/noeval/summary.json" && fail "a best evaluation without an evaluation set"
grep -q '"type":"eval"' "$tmp/noeval/metrics.jsonl" && fail "eval lines without an evaluation set"
for f in model model_last; do
  "$bin/tteps-eval" --model "$tmp/noeval/$f.pt" --data "$tmp/eval.jsonl" >"$tmp/noeval-$f.json" 2>/dev/null ||
    fail "tteps-eval on $f.pt of the run without evaluations"
done
cmp -s "$tmp/noeval-model.json" "$tmp/noeval-model_last.json" || fail "without evaluations model.pt is not the last"

# 3. A malformed record stops the run with file, line and field named; skip mode goes on.
cp "$tmp/train.jsonl" "$tmp/bad.jsonl"
sed -i '7s/"weekID":[0-9]*/"weekID":9/' "$tmp/bad.jsonl"
if "$bin/tteps-worker" --mode=local --train_data "$tmp/bad.jsonl" --max_steps 1 \
  --out_dir "$tmp/bad" 2>"$tmp/bad.err"; then
  fail "a bad record did not stop the run"
fi
grep -q "bad.jsonl:7: field 'weekID'" "$tmp/bad.err" || { cat "$tmp/bad.err"; fail "error does not name file:line field"; }
"$bin/tteps-worker" --mode=local --train_data "$tmp/bad.jsonl" --bad_records=skip --max_steps 1 \
  --out_dir "$tmp/skip" >/dev/null 2>"$tmp/skip.err" || { cat "$tmp/skip.err"; fail "skip mode failed"; }
grep -q "1 bad" "$tmp/skip.err" || { cat "$tmp/skip.err"; fail "skip mode did not report the bad record"; }
[ "$(field "$tmp/skip/summary.json" bad_records_skipped)" = 1 ] ||
  fail "summary.json does not count the skipped record: $(cat "$tmp/skip/summary.json")"

# 4. --help lists the program's own flags, not glog's.
"$bin/tteps-worker" --help >"$tmp/help" 2>&1 || true
grep -q -- "--batch_size" "$tmp/help" || fail "--help lacks --batch_size"
grep -q -- "--logtostderr" "$tmp/help" && fail "--help lists glog flags"
# 5. --device cuda where CUDA is missing fails at once with the reason, before any data loads;
#    so does a job started with it (the launcher's check). Where a GPU exists it just trains.
start=$(ms)
if "$bin/tteps-worker" --mode=local --device cuda --train_data "$tmp/train.jsonl" --max_steps 1 \
  --out_dir "$tmp/cuda" >/dev/null 2>"$tmp/cuda.err"; then
  echo "CUDA is available here: the no-CUDA failure does not apply"
else
  took=$(($(ms) - start))
  grep -q -- "--device cuda: CUDA is not available: " "$tmp/cuda.err" || { cat "$tmp/cuda.err"; fail "no reason given for --device cuda"; }
  grep -q "data: " "$tmp/cuda.err" && fail "--device cuda failed only after loading the data"
  [ "$took" -lt 3000 ] || fail "--device cuda took $took ms to fail"
  grep -q "Exception raised\|terminate called" "$tmp/cuda.err" && fail "--device cuda ended with a stack trace"
  start=$(ms)
  if TTEPS_BIN="$bin" "$src/launch/tteps" --mode sync --workers 2 --servers 1 --out_dir "$tmp/cuda_job" \
    -- --device cuda --train_data "$tmp/train.jsonl" --max_steps 1 >"$tmp/cuda_job.log" 2>&1; then
    fail "a sync job with --device cuda ran without CUDA"
  fi
  took=$(($(ms) - start))
  grep -q "CUDA is not available" "$tmp/cuda_job.log" || { cat "$tmp/cuda_job.log"; fail "the job's error lacks the reason"; }
  [ "$took" -lt 5000 ] || fail "a job with --device cuda took $took ms to fail"
fi

echo "PASS"
