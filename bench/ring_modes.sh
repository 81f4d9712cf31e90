#!/usr/bin/env bash
# Ring-mode benchmark (not a test): trains the same configuration in ring mode (our ring over
# ZeroMQ links and over MPI links, and MPI_Allreduce; one bucket and small buckets), parameter
# averaging (--average_every k) and, for reference, sync through one server, one after another.
# Prints a markdown table, one row per run: throughput, step-time split, the share of the
# allreduce hidden behind backward, and the eval MAPE on the last 200 sample trips.
#
#   bench/ring_modes.sh [--workers W] [--epochs E] [--out DIR] [-- extra training flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
workers=2 epochs=10 out=/tmp/tteps-ring-modes
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) workers=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--workers W] [--epochs E] [--out DIR] [-- flags]" >&2; exit 2 ;;
  esac
done
common=(--train_data "$root/data/chengdu/trajectories.jsonl" --eval_fraction 0.1667 --split tail
        --epochs "$epochs" --batch_size 64 "$@")
runs=(
  "ring-ours-1bucket|--mode ring|--allreduce ring --bucket_mb 25"
  "ring-ours-0.25MB|--mode ring|--allreduce ring --bucket_mb 0.25"
  "ring-ours-mpi-links|--mode ring|--allreduce ring --ring_transport mpi --bucket_mb 25"
  "ring-mpi-1bucket|--mode ring|--allreduce mpi --bucket_mb 25"
  "ring-mpi-0.25MB|--mode ring|--allreduce mpi --bucket_mb 0.25"
  "average-k1|--mode average|--average_every 1"
  "average-k5|--mode average|--average_every 5"
  "average-k20|--mode average|--average_every 20"
  "sync-S1|--mode sync --servers 1|"
)
printf '| run | trips/s | compute ms | comm ms | wait ms | hidden | MAPE |\n'
printf '|---|---|---|---|---|---|---|\n'
for r in "${runs[@]}"; do
  IFS='|' read -r name launch flags <<<"$r"
  rm -rf "${out:?}/$name"  # this bench's own earlier run (a finished out_dir is not reused)
  # shellcheck disable=SC2086
  "$root/launch/tteps" $launch --workers "$workers" --out_dir "$out/$name" -- "${common[@]}" \
    $flags >"$out-$name.log" 2>&1 || { echo "$name failed: see $out-$name.log" >&2; continue; }
  python3 - "$out/$name/summary.json" "$name" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["step_time_s"]
comm = t.get("allreduce", t.get("push", 0) + t.get("pull", 0))
# Only ring mode overlaps its allreduce with backward; average mode's comes after the step.
ring = sys.argv[2].startswith("ring") and comm > 0
hidden = "%.2f" % (1 - t["wait"] / comm) if ring else "-"
print("| %s | %.0f | %.1f | %.1f | %.1f | %s | %.4f |" % (sys.argv[2], s["trips_per_s"],
      1e3 * t["compute"], 1e3 * comm, 1e3 * t["wait"], hidden, s["final_eval"]["mape"]))
PY
done
