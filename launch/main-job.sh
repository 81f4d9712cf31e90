#!/usr/bin/env bash
# The main job: set-up (dependencies, configure, build), then DeepTTE training on the shipped
# Chengdu sample with evaluation on a held-out sixth of it. Writes out/main/{metrics.jsonl,
# summary.json,model.pt} and prints the final evaluation. Extra arguments go to tteps-worker.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/launch/build.sh"
exec "$root/build/bin/tteps-worker" --mode=local --out_dir "$root/out/main" --epochs 10 "$@"
