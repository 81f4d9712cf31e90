#!/usr/bin/env bash
# Installs the dependencies (if missing), configures and builds tteps into build/ (Release).
# Usage: launch/build.sh [extra cmake --build args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/launch/install-deps.sh"
jobs=${TTEPS_BUILD_JOBS:-$(nproc)}
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$jobs" "$@"
