#!/usr/bin/env bash
# tteps-predict: a model trained by a short local job estimates the sample's trips as routes not
# yet driven (no `time`, no `time_gap`, an "id" on each): one JSON line per route, in order, each
# estimate what tteps-eval predicts for the labelled trip; the same from a store; a bad record
# fails naming file, line and field, or is skipped and counted. tteps-eval on routes says that
# tteps-predict is the tool for them.
#   predict_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
d=$(mktemp -d /tmp/tteps-predict-cpp.XXXXXX)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
data=$src/data/chengdu/trajectories.jsonl
"$bin/tteps-worker" --mode=local --max_steps 10 --out_dir "$d/run" --train_data "$data" \
  >"$d/train.log" 2>&1 || fail "the local job failed: $(tail -3 "$d/train.log")"
"$bin/tteps-eval" --model "$d/run/model.pt" --data "$data" --predictions "$d/eval.txt" \
  >"$d/eval.json" 2>"$d/eval.log" || fail "tteps-eval failed: $(tail -3 "$d/eval.log")"
# routes.jsonl: the sample without labels, ids alternately strings and numbers; bad.jsonl: two
# routes, then one with a weekID out of range.
awk '{ sub(/"time": *[0-9.eE+-]+, */, ""); sub(/"time_gap": *\[[^]]*\], */, "");
       id = NR % 2 ? "\"r" NR "\"" : NR; sub(/^\{/, "{\"id\": " id ", "); print }' "$data" \
  >"$d/routes.jsonl"
grep -q '"time"\|time_gap' "$d/routes.jsonl" && fail "routes.jsonl still holds time or time_gap"
{ head -2 "$d/routes.jsonl"; sed -n 3p "$d/routes.jsonl" | sed 's/"weekID": *[0-9]*/"weekID": 9/'; } \
  >"$d/bad.jsonl"

"$bin/tteps-predict" --model "$d/run/model.pt" --data "$d/routes.jsonl" --out "$d/est.jsonl" \
  2>"$d/predict.log" || fail "tteps-predict failed: $(tail -3 "$d/predict.log")"
grep -q "1200 routes in .* s (.* routes/s, 1 thread)" "$d/predict.log" ||
  fail "no count and speed on stderr: $(cat "$d/predict.log")"
awk -v want="$(wc -l <"$data")" 'END { exit NR != want }' "$d/est.jsonl" || fail "not one line a route"
head -2 "$d/est.jsonl" | tr '\n' ' ' | grep -q '^{"line":1,"id":"r1","estimate_s":[0-9.]*} {"line":2,"id":2,"estimate_s"' ||
  fail "not {line, id, estimate_s}: $(head -2 "$d/est.jsonl")"
# Each estimate is tteps-eval's prediction (printed with 6 significant digits).
paste -d' ' <(sed 's/.*"estimate_s":\([^}]*\)}/\1/' "$d/est.jsonl") "$d/eval.txt" |
  awk '{ r = ($1 - $2) / $2; if (r < 0) r = -r; if (r > m) m = r }
       END { printf "max relative difference to tteps-eval %.2e\n", m; exit !(NR == 1200 && m < 1e-5) }' ||
  fail "estimates differ from tteps-eval's predictions"

"$bin/tteps-pack" --out "$d/store" "$data" >"$d/pack.log" 2>&1 || fail "tteps-pack: $(tail -3 "$d/pack.log")"
"$bin/tteps-predict" --model "$d/run/model.pt" --data "$d/store" >"$d/store.jsonl" 2>/dev/null ||
  fail "tteps-predict on a store failed"
cmp -s <(sed 's/.*"estimate_s"/x/' "$d/store.jsonl") <(sed 's/.*"estimate_s"/x/' "$d/est.jsonl") ||
  fail "a store's estimates differ from its JSON lines'"
head -1 "$d/store.jsonl" | grep -q '^{"trip":0,"estimate_s":' || fail "store lines: $(head -1 "$d/store.jsonl")"

"$bin/tteps-predict" --model "$d/run/model.pt" --data "$d/bad.jsonl" >/dev/null 2>"$d/bad.log"
[ $? -eq 1 ] && grep -q "bad.jsonl:3: field 'weekID': " "$d/bad.log" ||
  fail "a bad record: not exit 1 naming file, line and field: $(cat "$d/bad.log")"
"$bin/tteps-predict" --model "$d/run/model.pt" --data "$d/bad.jsonl" --bad_records skip \
  >"$d/skip.jsonl" 2>"$d/skip.log" || fail "--bad_records skip failed: $(cat "$d/skip.log")"
[ "$(wc -l <"$d/skip.jsonl")" -eq 2 ] && grep -q "1 bad record skipped" "$d/skip.log" ||
  fail "skip: $(cat "$d/skip.log")"

"$bin/tteps-predict" --model "$d/run/model.pt" --data "$d/store" --batch_size 0 >/dev/null 2>&1
[ $? -eq 1 ] || fail "--batch_size 0 not refused"

"$bin/tteps-eval" --model "$d/run/model.pt" --data "$d/routes.jsonl" >/dev/null 2>"$d/eval_routes.log" &&
  fail "tteps-eval evaluated routes without labels"
grep -q "field 'time': missing.*tteps-predict estimates routes" "$d/eval_routes.log" ||
  fail "tteps-eval on routes: $(tail -2 "$d/eval_routes.log")"
echo "PASS: tteps-predict estimates routes without time or time_gap as tteps-eval predicts trips"
