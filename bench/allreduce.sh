#!/usr/bin/env bash
# Runs bench_allreduce for 2, 3 and 4 ranks (ring vs MPI_Allreduce in the same job each time).
# Table on stdout, JSON lines on stderr. Extra arguments go to bench_allreduce.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TTEPS_BIN:-$root/build/bin}
flags=(--oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
for n in 2 3 4; do
  mpirun "${flags[@]}" -np "$n" "$bin/bench_allreduce" "$@"
done
