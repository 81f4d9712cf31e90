#!/usr/bin/env bash
# What --slices costs: a sync job on W workers with W slices against the same job with 2W (each
# worker then runs two backward passes of half the trips a step), side by side, alternating,
# at several global batches. Prints one row per run and the median trips/s per setting.
#   bench/slices_cost.sh [--workers W] [--batches "64 256"] [--rounds R] [--steps S]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
workers=2 batches="64 256" rounds=3 steps=120
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) workers=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "slices_cost: unknown flag $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { grep -o "\"$2\":[0-9.e+-]*" "$1" | head -1 | cut -d: -f2; }
printf '| batch | slices | round | trips/s |\n| --- | --- | --- | --- |\n'
declare -A all
for batch in $batches; do
  for ((r = 1; r <= rounds; r++)); do
    for slices in "$workers" $((2 * workers)); do
      out="$work/b$batch-s$slices-r$r"
      "$root/launch/tteps" --mode sync --workers "$workers" --servers 1 --out_dir "$out" -- \
        --epochs 1000 --max_steps "$steps" --batch_size "$batch" --slices "$slices" \
        --eval_every 100000 >"$out.log" 2>&1 || { tail -3 "$out.log" >&2; exit 1; }
      tps=$(field "$out/summary.json" trips_per_s)
      printf '| %s | %s | %s | %.0f |\n' "$batch" "$slices" "$r" "$tps"
      all[$batch-$slices]="${all[$batch-$slices]:-} $tps"
    done
  done
done
echo
printf '| batch | trips/s, %s slices (median) | trips/s, %s slices (median) | ratio |\n| --- | --- | --- | --- |\n' \
  "$workers" $((2 * workers))
for batch in $batches; do
  a=$(echo ${all[$batch-$workers]} | tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  b=$(echo ${all[$batch-$((2 * workers))]} | tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  printf '| %s | %.0f | %.0f | %.3f |\n' "$batch" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
