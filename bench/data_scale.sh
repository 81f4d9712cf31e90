#!/usr/bin/env bash
# How the cost of a job grows with the data (not a test): for each size, synthetic trips
# (tteps-gen) are packed into a store (tteps-pack) and a sync job (2 workers, 2 servers) trains
# on it; where the JSON-lines file is small enough, the same job on the file runs beside it, and
# both run on the shipped 1,200-trip sample as the baseline. Every job evaluates on the shipped
# sample (--eval_data), so evaluation costs the same at every size. On the largest store it
# also times a resume from a checkpoint and a worker joining a running job.
# One row per job: pack seconds and MB/s, startup_s (scheduler start to training, summary.json),
# trips/s, and the largest private (RssAnon) and shared (mapped files) memory of any process.
#
#   bench/data_scale.sh [--sizes "10000 100000 1000000 10000000"] [--json_max N] [--steps S]
#                       [--repeats R] [--repeat_steps S] [--work DIR] [--out FILE]
# Throughput is compared apart: the smallest and the largest store alternately, R times
# (default 3) for S steps (default 300), the median trips/s of each and their ratio.
# DIR keeps the generated files (gen-N.jsonl) between runs; delete it after (10 M trips are
# 15 GB of JSON and 7.4 GB packed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
sizes="10000 100000 1000000 10000000" json_max=1000000 steps=60 work=/tmp/tteps-data-scale
repeats=3 repeat_steps=300
report=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --json_max) json_max=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --repeat_steps) repeat_steps=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) report=$2; shift 2 ;;
    *) echo "usage: $0 [--sizes \"N ...\"] [--json_max N] [--steps S] [--repeats R]" \
            "[--repeat_steps S] [--work DIR] [--out FILE]" >&2
       exit 2 ;;
  esac
done
mkdir -p "$work"
report=${report:-$work/report.jsonl}
: >"$report"
sample=$root/data/chengdu/trajectories.jsonl
job_flags=(--eval_data "$sample" --max_steps "$steps" --log_every 10 --batch_size 64)

# job NAME DATA [extra flags...]: a sync job; appends its row to the report.
job() {
  local name=$1 data=$2; shift 2
  local out=$work/jobs/$name
  rm -rf "$out"
  local t0; t0=$(date +%s.%N)
  "$root/launch/tteps" --mode sync --workers 2 --servers 2 --out_dir "$out" -- \
    --train_data "$data" "${job_flags[@]}" "$@" >"$work/jobs/$name.log" 2>&1 ||
    { echo "$name failed: see $work/jobs/$name.log" >&2; exit 1; }
  local t1; t1=$(date +%s.%N)
  python3 - "$out/summary.json" "$name" "$t0" "$t1" >>"$report" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
mem = lambda key: max([s[key]["scheduler"]] + s[key]["workers"] + s[key]["servers"])
print(json.dumps({"job": sys.argv[2], "startup_s": s["startup_s"],
                  "launch_wall_s": float(sys.argv[4]) - float(sys.argv[3]),
                  "trips_per_s": s["trips_per_s"], "private_mb": mem("peak_private_mb"),
                  "shared_mb": mem("peak_shared_mb"), "rss_mb": mem("peak_rss_mb"),
                  "private_by_role": s["peak_private_mb"], "mape": s["final_eval"]["mape"]}))
PY
  tail -1 "$report"
}

mkdir -p "$work/jobs"
rm -rf "$work/sample-store"
"$bin/tteps-pack" --out "$work/sample-store" "$sample" >/dev/null 2>&1
job sample-json "$sample"
job sample-store "$work/sample-store"
largest=""
for n in $sizes; do
  gen=$work/gen-$n.jsonl store=$work/store-$n
  [ -f "$gen" ] || "$bin/tteps-gen" --trips "$n" --seed 7 --out "$gen" >/dev/null
  rm -rf "$store"
  t0=$(date +%s.%N)
  pack=$(/usr/bin/time -f '{"cpu_s":%U,"sys_s":%S}' -o "$work/pack-$n.time" \
         "$bin/tteps-pack" --out "$store" "$gen" 2>/dev/null)
  python3 - "$pack" "$work/pack-$n.time" "$n" >>"$report" <<'PY'
import json, sys
p = json.loads(sys.argv[1]); t = json.load(open(sys.argv[2]))
cpu = t["cpu_s"] + t["sys_s"]
print(json.dumps({"pack": int(sys.argv[3]), "seconds": p["seconds"], "mb_per_s": p["mb_per_s"],
                  "mb_per_cpu_s": p["json_mb"] / cpu, "json_mb": p["json_mb"],
                  "store_mb": p["store_mb"], "threads": p["threads"]}))
PY
  tail -1 "$report"
  job "store-$n" "$store"
  if [ "$n" -le "$json_max" ]; then job "json-$n" "$gen"; fi
  largest=$n
done

# Throughput side by side: the smallest and the largest store, alternating, REPEATS times. Both
# hold trips of the same generator (the sample's real trips are of other lengths, so their
# trips/s is not the same work).
smallest=${sizes%% *}
for i in $(seq 1 "$repeats"); do
  job "repeat$i-sample" "$work/store-$smallest" --max_steps "$repeat_steps" >/dev/null
  job "repeat$i-$largest" "$work/store-$largest" --max_steps "$repeat_steps" >/dev/null
done
python3 - "$report" "$largest" <<'PY' >>"$report"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"job": "repeat' in l]
med = lambda suffix: statistics.median(r["trips_per_s"] for r in rows if r["job"].endswith(suffix))
a, b = med("-sample"), med("-" + sys.argv[2])
print(json.dumps({"repeats": len(rows) // 2, "sample_trips_per_s": a, "largest_trips_per_s": b,
                  "ratio": b / a, "startup_s_sample": statistics.median(
                      r["startup_s"] for r in rows if r["job"].endswith("-sample")),
                  "startup_s_largest": statistics.median(
                      r["startup_s"] for r in rows if r["job"].endswith("-" + sys.argv[2]))}))
PY
tail -1 "$report"

# Resume and join on the largest store.
store=$work/store-$largest
job "first-$largest" "$store" --checkpoint_every 20 --max_steps 20
job "resumed-$largest" "$store" --resume "$work/jobs/first-$largest/checkpoints"
out=$work/jobs/join-$largest
rm -rf "$out"
"$root/launch/tteps" --mode sync --workers 2 --servers 2 --out_dir "$out" -- \
  --train_data "$store" "${job_flags[@]}" --max_steps 100000 --max_train_s 20 --heartbeat_s 0.5 \
  --timeout_s 20 --min_workers 2 >"$work/jobs/join.log" 2>&1 &
launcher=$!
# wait_for PATTERN FILE|DIR...: up to 120 s.
wait_for() {
  local pattern=$1; shift
  for _ in $(seq 1 1200); do
    grep -rq -e "$pattern" "$@" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "gave up waiting for '$pattern' in $*" >&2
  exit 1
}
wait_for '"type":"train"' "$out/metrics.jsonl"
pid=$(grep -o 'registered worker 1 (rank [0-9]*, host [^,]*, pid [0-9]*)' "$out/logs/scheduler-0.log" |
      grep -o 'pid [0-9]*' | cut -d' ' -f2)
kill -9 "$pid"
wait_for '"event":"lost"' "$out/metrics.jsonl"
endpoint=$(grep -o 'scheduler at tcp://[^ ]*' "$out/logs/scheduler-0.log" | cut -d' ' -f3)
rm -rf "$work/jobs/joiner-logs"
t0=$(date +%s.%N)
"$bin/tteps-worker" --scheduler="$endpoint" --logs "$work/jobs/joiner-logs" >"$work/jobs/joiner.log" 2>&1 &
joiner=$!
wait_for ' training trips, ' "$work/jobs/joiner-logs"
t1=$(date +%s.%N)
wait "$launcher" || true
wait "$joiner" || true
python3 -c "import json,sys; print(json.dumps({'join': int(sys.argv[1]), \
'joiner_data_ready_s': float(sys.argv[3]) - float(sys.argv[2])}))" "$largest" "$t0" "$t1" \
  >>"$report"
tail -1 "$report"
# The table, as docs/data.md gives it.
python3 - "$report" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
jobs = {r["job"]: r for r in rows if "job" in r}
packs = {r["pack"]: r for r in rows if "pack" in r}
join = next((r for r in rows if "join" in r), None)
print("| data | pack s (MB/s, MB per CPU-s) | startup s | trips/s | private MB | shared MB |")
print("| --- | --- | --- | --- | --- | --- |")
def row(label, job, pack=""):
    j = jobs[job]
    print("| %s | %s | %.2f | %.0f | %.0f | %.0f |" % (label, pack, j["startup_s"],
          j["trips_per_s"], j["private_mb"], j["shared_mb"]))
row("sample, 1,200 trips, JSON-lines", "sample-json")
row("sample, store", "sample-store")
for n in sorted(packs):
    p = packs[n]
    row("%s trips, store" % format(n, ","), "store-%d" % n,
        "%.1f (%.0f, %.0f)" % (p["seconds"], p["mb_per_s"], p["mb_per_cpu_s"]))
    if "json-%d" % n in jobs:
        row("%s trips, JSON-lines (%.0f MB)" % (format(n, ","), p["json_mb"]), "json-%d" % n)
n = max(packs)
for kind in ("first", "resumed"):
    if "%s-%d" % (kind, n) in jobs:
        row("%s trips, store, %s" % (format(n, ","), {"first": "20 steps, checkpointed",
            "resumed": "resumed from step 20"}[kind]), "%s-%d" % (kind, n))
rep = next((r for r in rows if "repeats" in r), None)
if rep:
    print("\nSide by side (%d alternating runs each, medians): the smallest store %.0f trips/s, "
          "the largest %.0f trips/s (ratio %.3f); startup %.2f s and %.2f s." % (
          rep["repeats"], rep["sample_trips_per_s"], rep["largest_trips_per_s"], rep["ratio"],
          rep["startup_s_sample"], rep["startup_s_largest"]))
if join:
    print("\nA worker joining the job on the %s-trip store had its data ready %.2f s after it "
          "started." % (format(join["join"], ","), join["joiner_data_ready_s"]))
PY
echo "report: $report"
