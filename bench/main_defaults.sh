#!/usr/bin/env bash
# How the main job's training defaults were chosen (not a test): the main job's cluster (sync,
# 2 workers, 2 servers, 10 epochs of the shipped sample) under several candidate settings,
# each over several seeds (weights and data order), on a tuning split of the sample and on a
# second split that the choice never looked at. Prints one row per run and, per setting and
# split, the median (min-max) held-out MAPE of model.pt (the best evaluation, --keep_best) and
# of the last weights.
#
#   bench/main_defaults.sh [--seeds "1 2 3"] [--tune_split 1] [--check_split 2] [--out DIR]
#                          [--settings NAME=FLAGS ...]
#
# Each setting is NAME=FLAGS with the flags comma-separated, e.g.
# "cosine2=--lr,0.002,--lr_schedule,cosine,--warmup_steps,20".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seeds="1 2 3" tune=1 check=2 out=/tmp/tteps-main-defaults settings=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --tune_split) tune=$2; shift 2 ;;
    --check_split) check=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --settings) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do settings+=("$1"); shift; done ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "main_defaults: unknown option $1" >&2; exit 2 ;;
  esac
done
[ ${#settings[@]} -gt 0 ] || settings=(
  "default="
  "cosine=--lr_schedule,cosine,--warmup_steps,20"
  "cosine2e-3=--lr,0.002,--lr_schedule,cosine,--warmup_steps,20"
  "batch32cosine=--batch_size,32,--lr_schedule,cosine,--warmup_steps,20"
)
mkdir -p "$out"
printf "%-16s %5s %4s %8s %8s %8s\n" setting split seed best last best_step
for split in $tune $check; do
  for seed in $seeds; do
    for s in "${settings[@]}"; do
      name=${s%%=*} extra=${s#*=}
      IFS=, read -r -a flags <<<"$extra"
      dir="$out/$name/split$split/seed$seed"
      rm -rf "$dir" && mkdir -p "$dir"
      "$root/launch/tteps" --mode sync --workers 2 --servers 2 --out_dir "$dir" -- --epochs 10 \
        --seed "$seed" --split_seed "$split" --progress_s 1000 "${flags[@]}" >"$dir.log" 2>&1 ||
        { echo "$name split $split seed $seed failed: see $dir.log" >&2; exit 1; }
      python3 - "$dir/summary.json" "$name" "$split" "$seed" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("%-16s %5s %4s %8.4f %8.4f %8d" % (sys.argv[2], sys.argv[3], sys.argv[4],
      s["best_eval"]["mape"], s["final_eval"]["mape"], s["best_eval"]["step"]))
PY
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
rows = {}
for f in glob.glob(f"{out}/*/split*/seed*/summary.json"):
    name, split = f.split("/")[-4], f.split("/")[-3]
    s = json.load(open(f))
    rows.setdefault((name, split), []).append((s["best_eval"]["mape"], s["final_eval"]["mape"]))
def fmt(v):
    return f"{statistics.median(v):.4f} ({min(v):.4f}-{max(v):.4f})"
print(f"\n{'setting':16} {'split':8} {'runs':>4}  model.pt MAPE            last weights MAPE")
for (name, split), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{name:16} {split:8} {len(v):4}  {fmt([b for b, _ in v]):24}  {fmt([l for _, l in v])}")
PY
