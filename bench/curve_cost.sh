#!/usr/bin/env bash
# What CURVE costs (not a test): the same sync job (2 workers, 2 servers) plain and with
# --curve_dir, alternating, REPEATS times each. Prints a markdown table, one row per run, and the
# ratio of the median throughputs (CURVE / plain); both kinds must end with the same MAPE.
#
#   bench/curve_cost.sh [--repeats N] [--steps S] [--out DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
repeats=3 steps=300 out=/tmp/tteps-curve-cost
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--repeats N] [--steps S] [--out DIR]" >&2; exit 2 ;;
  esac
done
rm -rf "$out" && mkdir -p "$out"
"$root/build/bin/tteps-keygen" "$out/keys" >/dev/null
printf '| run | n | trips/s | compute ms | push ms | pull ms | MAPE |\n'
printf '|---|---|---|---|---|---|---|\n'
for i in $(seq 1 "$repeats"); do
  for kind in plain curve; do
    keys=()
    [ "$kind" = curve ] && keys=(--curve_dir "$out/keys")
    "$root/launch/tteps" --mode sync --workers 2 --servers 2 "${keys[@]}" \
      --out_dir "$out/$kind-$i" -- --max_steps "$steps" --batch_size 64 >"$out/$kind-$i.log" 2>&1 ||
      { echo "$kind-$i failed: see $out/$kind-$i.log" >&2; exit 1; }
    python3 - "$out/$kind-$i/summary.json" "$kind" "$i" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); t = s["step_time_s"]
print("| %s | %s | %.0f | %.1f | %.1f | %.1f | %.4f |" % (sys.argv[2], sys.argv[3],
      s["trips_per_s"], 1e3 * t["compute"], 1e3 * t["push"], 1e3 * t["pull"],
      s["final_eval"]["mape"]))
PY
  done
done
python3 - "$out" "$repeats" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
med = {k: statistics.median(json.load(open(f"{out}/{k}-{i}/summary.json"))["trips_per_s"]
                            for i in range(1, n + 1)) for k in ("plain", "curve")}
print("\nMedian trips/s: plain %.0f, curve %.0f; curve / plain = %.3f." %
      (med["plain"], med["curve"], med["curve"] / med["plain"]))
PY
