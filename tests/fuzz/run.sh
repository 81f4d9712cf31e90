#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer + AddressSanitizer + UBSan) and runs each one
# for SECONDS (default 12) from the committed seed corpus. Fails on any crash, leak or sanitizer
# report; the input that caused it is left in BUILD/artifacts/.
#   tests/fuzz/run.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-12}
build=${2:-$here/../../build/fuzz}
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found (launch/install-deps.sh installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi
cmake -S "$here" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  >"$build.configure.log" 2>&1 || { cat "$build.configure.log" >&2; exit 1; }
cmake --build "$build" -j "${TTEPS_FUZZ_JOBS:-2}" >"$build.build.log" 2>&1 ||
  { tail -40 "$build.build.log" >&2; exit 1; }
mkdir -p "$build/artifacts"
# One target per core at a time: each is single-threaded, and the test runs alone (RUN_SERIAL).
jobs=${TTEPS_FUZZ_JOBS:-2}
fuzz_one() {
  local target=$1
  local work="$build/corpus/$target"  # what this run learns; the committed seeds stay as they are
  mkdir -p "$work"
  local log="$build/$target.log"
  # `timeout`: a target that hangs (even at exit) is a failure, not a stuck CI run.
  if timeout -k 5 $((seconds + 60)) "$build/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$build/artifacts/$target-" -print_final_stats=1 \
      "$work" "$here/corpus/$target" >"$log" 2>&1; then
    local execs cov
    execs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
    echo "fuzz: $target ok: $execs inputs in ${seconds} s, coverage $cov edges"
  else
    echo "fuzz: $target FAILED; its report:" >&2
    grep -v '^#' "$log" | tail -40 >&2
    return 1
  fi
}
status=0
pids=()
for target in header_fuzz push_fuzz control_fuzz checkpoint_fuzz trip_fuzz; do
  fuzz_one "$target" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
