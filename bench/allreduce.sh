#!/usr/bin/env bash
# Runs bench_allreduce for 2, 3 and 4 ranks (ring vs MPI_Allreduce in the same job each time).
# One markdown table on stdout, JSON lines on stderr. Extra arguments go to bench_allreduce
# (--sizes_kb 4,256,4096: the buffer sizes; --seconds: the time per size and algorithm).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TTEPS_BIN:-$root/build/bin}
flags=(--oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
for n in 2 3 4; do
  skip=1  # each run prints the table's 2 header lines; the first run's are kept
  [ "$n" -gt 2 ] && skip=3
  mpirun "${flags[@]}" -np "$n" "$bin/bench_allreduce" "$@" | tail -n +"$skip"
done
