#!/usr/bin/env bash
# Leave-one-day-out over the shipped sample (not a test): how well the main job's training
# settings predict a day the model never saw. The sample holds six days (dateID 24 to 29, 200
# trips each); for each setting, seed and day, the main job's cluster (sync, 2 workers, 2
# servers) trains on the other five days (--split day --eval_dates D) and reports the final
# weights' MAPE on the held-out day (what the main job prints). Prints one row per run, then the
# table of docs/benchmarks.md: per setting and day the seeds' mean, the mean over the days and
# their range, beside a constant-speed guess (travel time = distance / the training days' mean
# speed).
#
#   bench/day_holdout.sh [--seeds "1 2"] [--days "24 25 26 27 28 29"] [--out DIR]
#                        [--settings NAME=FLAGS ...]
# Each setting is NAME=FLAGS with the flags comma-separated, e.g.
# "e10=--epochs,10,--lr_schedule,cosine,--warmup_steps,20".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seeds="1 2" days="24 25 26 27 28 29" out=/tmp/tteps-day-holdout settings=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --settings) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do settings+=("$1"); shift; done ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "day_holdout: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#settings[@]} -gt 0 ] || settings=(
  "e20cos=--epochs,20,--lr_schedule,cosine,--warmup_steps,20"
  "e10cos=--epochs,10,--lr_schedule,cosine,--warmup_steps,20"
  "e30cos=--epochs,30,--lr_schedule,cosine,--warmup_steps,20"
  "e20cos_lr5e-4=--epochs,20,--lr,0.0005,--lr_schedule,cosine,--warmup_steps,20"
)
mkdir -p "$out"
: >"$out/rows.jsonl"
printf "%-16s %4s %4s %8s %8s\n" setting day seed final best
for day in $days; do
  for seed in $seeds; do
    for s in "${settings[@]}"; do
      name=${s%%=*} extra=${s#*=}
      IFS=, read -r -a flags <<<"$extra"
      dir="$out/$name/day$day/seed$seed"
      rm -rf "$dir" && mkdir -p "$dir"
      "$root/launch/tteps" --mode sync --workers 2 --servers 2 --out_dir "$dir" -- \
        --split day --eval_dates "$day" --seed "$seed" --progress_s 1000 "${flags[@]}" \
        >"$dir.log" 2>&1 || { echo "$name day $day seed $seed failed: see $dir.log" >&2; exit 1; }
      python3 - "$dir/summary.json" "$name" "$day" "$seed" "$out/rows.jsonl" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
row = {"setting": sys.argv[2], "day": int(sys.argv[3]), "seed": int(sys.argv[4]),
       "final": s["final_eval"]["mape"], "best": s["best_eval"]["mape"]}
open(sys.argv[5], "a").write(json.dumps(row) + "\n")
print("%-16s %4d %4d %8.4f %8.4f" % (row["setting"], row["day"], row["seed"], row["final"],
                                     row["best"]))
PY
    done
  done
done
python3 - "$out/rows.jsonl" "$root/data/chengdu/trajectories.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
trips = [json.loads(l) for l in open(sys.argv[2])]
days = sorted({r["day"] for r in rows})
def speed_guess(day):
    train = [t for t in trips if t["dateID"] != day]
    speed = sum(t["dist"] for t in train) / sum(t["time"] for t in train)
    test = [t for t in trips if t["dateID"] == day]
    return statistics.mean(abs(t["dist"] / speed - t["time"]) / t["time"] for t in test)
guess = {d: speed_guess(d) for d in days}
# The table of docs/benchmarks.md: per setting and day the mean over the seeds of the final
# weights' MAPE, then the mean over the days and their range.
def row(name, per):
    v = [per[d] for d in days]
    return ("| %s | " % name + " | ".join("%.4f" % x for x in v) +
            " | %.4f | %.4f-%.4f |" % (statistics.mean(v), min(v), max(v)))
print("\n| setting | " + " | ".join(str(d) for d in days) + " | mean | min-max |")
print("| --- " * (len(days) + 3) + "|")
for name in dict.fromkeys(r["setting"] for r in rows):
    print(row(name, {d: statistics.mean(r["final"] for r in rows
                                        if r["setting"] == name and r["day"] == d)
                     for d in days}))
print(row("constant speed", guess))
PY
