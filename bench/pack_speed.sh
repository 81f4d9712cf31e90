#!/usr/bin/env bash
# How fast tteps-pack converts JSON-lines into a trip store (not a test): packs FILE R times and
# prints one JSON line per run and a median line: wall seconds, MB of JSON per second, and MB of
# JSON per CPU-second (user + system time of the whole process, all threads: what one core
# delivers). --cold drops the page cache before each run (root only), so the input comes from
# disk, as it does for a data set larger than memory.
#
#   bench/pack_speed.sh FILE [--repeats R] [--threads N] [--cold] [--work DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
repeats=3 threads="" cold=0 work=/tmp/tteps-pack-speed file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --cold) cold=1; shift ;;
    --work) work=$2; shift 2 ;;
    -*|"") echo "usage: $0 FILE [--repeats R] [--threads N] [--cold] [--work DIR]" >&2; exit 2 ;;
    *) file=$1; shift ;;
  esac
done
[ -f "$file" ] || { echo "$0: no JSON-lines file given (or '$file' is not a file)" >&2; exit 2; }
if [ "$cold" = 1 ] && [ ! -w /proc/sys/vm/drop_caches ]; then
  echo "$0: --cold drops the page cache and needs root" >&2
  exit 2
fi
mkdir -p "$work"
flags=()
[ -n "$threads" ] && flags+=(--threads "$threads")
runs=$work/runs.jsonl
: >"$runs"
for i in $(seq "$repeats"); do
  rm -rf "$work/store"
  if [ "$cold" = 1 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi
  out=$(/usr/bin/time -f '{"user_s":%U,"sys_s":%S}' -o "$work/time.json" \
        "$bin/tteps-pack" --out "$work/store" "${flags[@]}" "$file" 2>/dev/null)
  python3 - "$out" "$work/time.json" "$i" "$cold" >>"$runs" <<'PY'
import json, sys
p, t = json.loads(sys.argv[1]), json.load(open(sys.argv[2]))
cpu = t["user_s"] + t["sys_s"]
print(json.dumps({"run": int(sys.argv[3]), "cold": sys.argv[4] == "1", "trips": p["trips"],
                  "json_mb": round(p["json_mb"], 1), "threads": p["threads"],
                  "seconds": round(p["seconds"], 2), "mb_per_s": round(p["mb_per_s"], 1),
                  "user_s": t["user_s"], "sys_s": t["sys_s"],
                  "mb_per_cpu_s": round(p["json_mb"] / cpu, 1)}))
PY
  tail -1 "$runs"
done
rm -rf "$work/store"
python3 - "$runs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k: statistics.median(r[k] for r in rows)
print(json.dumps({"median_of": len(rows), "seconds": med("seconds"), "mb_per_s": med("mb_per_s"),
                  "mb_per_cpu_s": med("mb_per_cpu_s"), "sys_s": med("sys_s")}))
PY
