#!/usr/bin/env bash
# A user's mistakes and accidents, tried as a new user would (not a test: the tests are in
# tests/integration/mistakes_test.cc): one row per case with the exit code, the seconds to the
# last console line and that line. Root runs the full-disk case on a 4 MB tmpfs.
#
#   bench/mistakes.sh [--work DIR]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
work=/tmp/tteps-mistakes
[ "${1:-}" = --work ] && work=$2
rm -rf "$work" && mkdir -p "$work"
sample=$root/data/chengdu/trajectories.jsonl
tteps=$root/launch/tteps
printf '| %-44s | %4s | %6s | %s |\n' case exit "s" "last line"
printf '| --- | --- | --- | --- |\n'
# last_line FILE: the file's last line as the table shows it: a glog line's message, a job's
# result as its MAPE, the work folder as WORK (so the table reads the same wherever it ran).
# A message the launcher wrapped (its lines after the first start with spaces) is joined whole.
last_line() {
  local l; l=$(grep -v '^\s*$' "$1" | awk '/^ / {m = m " " $0; next} {m = $0} END {print m}')
  case "$l" in
    '{"final_eval":'*) l="the result, MAPE $(grep -o '"mape":[0-9.]*' <<<"$l" | cut -c8-13)" ;;
  esac
  l=$(sed -E 's/^[IWEF][0-9]{8} [0-9:.]+ +[0-9]+ [^]]+\] //; s/  +/ /g' <<<"$l")
  l=${l//"$work"/WORK}
  if [ "${#l}" -gt 160 ]; then l="${l:0:160}..."; fi
  echo "$l"
}
# print_row NAME EXIT T0 T1 FILE: a row, the seconds from T0 to T1, FILE's last line.
print_row() {
  printf '| %-44s | %4s | %6.1f | %s |\n' "$1" "$2" "$(echo "$4 - $3" | bc)" "$(last_line "$5")"
}
# row NAME COMMAND...: runs the command, prints its row.
row() {
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@" >"$work/out.txt" 2>&1
  local rc=$?
  print_row "$name" "$rc" "$t0" "$(date +%s.%N)" "$work/out.txt"
}
quick=(-- --max_steps 3)

# 1. A second job on a running job's out_dir.
"$tteps" --mode sync --out_dir "$work/busy" -- --max_steps 400 >"$work/busy.log" 2>&1 &
first=$!
for _ in $(seq 100); do grep -q '"type":"train"' "$work/busy/metrics.jsonl" 2>/dev/null && break; sleep 0.2; done
row "second job on a running job's out_dir" "$tteps" --mode sync --out_dir "$work/busy" "${quick[@]}"
wait "$first"
# 2. Again on the finished one.
row "re-run into a finished job's out_dir" "$tteps" --mode sync --out_dir "$work/busy" "${quick[@]}"
# 3. SIGTERM to the launcher.
"$tteps" --mode sync --out_dir "$work/term" -- --epochs 100 --checkpoint_every 5 >"$work/term.log" 2>&1 &
job=$!
for _ in $(seq 100); do grep -q '"type":"train"' "$work/term/metrics.jsonl" 2>/dev/null && break; sleep 0.2; done
sleep 1
t0=$(date +%s.%N); kill -TERM "$job"; wait "$job"; rc=$?; t1=$(date +%s.%N)
left=$(pgrep -f "out_dir $work/term" | wc -l)
print_row "SIGTERM to the launcher ($left processes left)" "$rc" "$t0" "$t1" "$work/term.log"
# 4. A full disk while the model is saved.
if [ "$(id -u)" -eq 0 ] && mkdir -p "$work/full" && mount -t tmpfs -o size=4m tmpfs "$work/full"; then
  row "full disk while saving the model" "$bin/tteps-worker" --mode=local --max_steps 2 \
    --out_dir "$work/full/run"
  umount "$work/full"
fi
# 5. tteps-eval on an empty file.
: >"$work/empty.jsonl"
row "tteps-eval on an empty file" "$bin/tteps-eval" --model "$work/busy/model.pt" --data "$work/empty.jsonl"
# 6. --out_dir after --.
row "--out_dir after --" "$tteps" --mode sync -- --max_steps 3 --out_dir "$work/after"
# 7. An out_dir that cannot be created.
row "out_dir that cannot be created" "$tteps" --mode sync --out_dir /proc/tteps "${quick[@]}"
# 8. --curve_dir after -- (no keys there).
row "--curve_dir after -- (no keys)" "$tteps" --mode sync --out_dir "$work/curve" -- --max_steps 3 \
  --curve_dir "$work/nokeys"
# 9. A resume with another model.
"$tteps" --mode sync --out_dir "$work/ckpt" -- --max_steps 10 --checkpoint_every 5 >/dev/null 2>&1
row "resume with another --final_fc_size" "$tteps" --mode sync --out_dir "$work/resumed" -- \
  --max_steps 20 --final_fc_size 64 --resume "$work/ckpt/checkpoints"
row "resume with another server count" "$tteps" --mode sync --servers 2 --out_dir "$work/resumed2" -- \
  --max_steps 20 --resume "$work/ckpt/checkpoints"
# 10. One trip of 20,000 points.
python3 - "$sample" "$work/long.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()[:300]
t = json.loads(lines[0]); n = 20000
t.update(lngs=[104.0 + i * 1e-6 for i in range(n)], lats=[30.6 + i * 1e-6 for i in range(n)],
         states=[1] * n, time_gap=[i * 0.1 for i in range(n)], dist_gap=[i * 1e-3 for i in range(n)])
lines[5] = json.dumps(t)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
row "one trip of 20,000 points" "$tteps" --mode sync --out_dir "$work/long" -- --train_data \
  "$work/long.jsonl" --max_steps 3
# 11. A time of 1e30 s.
sed '7s/"time":[0-9.]*/"time":1e30/' <(head -n 300 "$sample") >"$work/huge.jsonl"
row "a trip time of 1e30 s" "$tteps" --mode local --out_dir "$work/huge" -- --train_data \
  "$work/huge.jsonl" --max_steps 3
# 12. Ctrl-C: SIGINT to the job's process group, as a terminal sends it (job control gives the
# job its own group; a script's background jobs would otherwise ignore SIGINT).
# A shell started in the background (cmd &) ignores SIGINT, and so would the job: not tried then.
ignored=$(awk '/^SigIgn/ {print $2}' /proc/$$/status)
afters="1 8"
if (((0x$ignored & 2) != 0)); then
  afters=""
  printf '| %-44s | %4s | %6s | %s |\n' "Ctrl-C" - - \
    "not tried: this shell ignores SIGINT (it was started in the background)"
fi
for after in $afters; do
  set -m
  "$tteps" --mode sync --out_dir "$work/int$after" -- --epochs 100 >"$work/int.log" 2>&1 &
  job=$!
  set +m
  sleep "$after"
  t0=$(date +%s.%N); kill -INT -- "-$job"; wait "$job"; rc=$?; t1=$(date +%s.%N)
  left=$(pgrep -f "out_dir $work/int$after" | wc -l)
  print_row "Ctrl-C $after s after the start ($left left)" "$rc" "$t0" "$t1" "$work/int.log"
done
# 13. Formats and flags.
printf '\xef\xbb\xbf' | cat - <(head -n 300 "$sample") >"$work/bom.jsonl"
row "a byte-order mark" "$tteps" --mode local --out_dir "$work/bom" -- --train_data "$work/bom.jsonl" \
  --max_steps 3
head -n 300 "$sample" | gzip >"$work/trips.jsonl.gz"
row "gzip input" "$tteps" --mode local --out_dir "$work/gz" -- --train_data "$work/trips.jsonl.gz" \
  --max_steps 3
row "a flag without its value" "$tteps" --mode sync --workers
row "a training flag before --" "$tteps" --mode sync --epochs 3
row "-- --mode async after --mode sync" "$tteps" --mode sync -- --mode async --max_steps 3
row "--batch_size 100000 on 1,000 trips" "$tteps" --mode sync --out_dir "$work/batch" -- \
  --batch_size 100000
head -n 300 "$sample" | sed '7s/"weekID":[0-9]*/"weekID":9/' >"$work/skip.jsonl"
row "--bad_records skip: the count" "$tteps" --mode local --out_dir "$work/skip" -- \
  --train_data "$work/skip.jsonl" --bad_records skip --max_steps 3
# 10 (compute): one worker's step longer than --timeout_s (slowed 150 times, a step of 2 to 4 s):
# its heartbeats say it computes, so the job waits for it (a warning, not a failure).
row "a step longer than --timeout_s (waited for)" "$tteps" --mode sync --out_dir "$work/slow" -- \
  --max_steps 2 --timeout_s 2 --heartbeat_s 0.5 --slowdown 15000 --slowdown_worker 1
# 13 (hosts): a hostfile naming a host that does not exist.
echo "no-such-host.invalid slots=4" >"$work/hostfile"
row "a hostfile with an unknown host" "$tteps" --mode sync --hostfile "$work/hostfile" \
  --out_dir "$work/hosts" "${quick[@]}"
