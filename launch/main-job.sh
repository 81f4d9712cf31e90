#!/usr/bin/env bash
# The main job: set-up (dependencies, configure, build), then a real parameter-server run on
# the shipped Chengdu sample: mpirun with 1 scheduler, 2 servers and 2 workers in sync mode,
# 20 epochs with a cosine learning rate of 5e-4 after 20 warm-up steps (chosen by
# bench/day_holdout.sh, see the README), evaluated on the sample's last day (--split day:
# dateID 29, a day the model never saw, as a user's trips are). Writes out/main/{metrics.jsonl,summary.json,config.json,
# model.pt,model_last.pt,logs/} and prints the final evaluation. Extra arguments are training
# flags; --verbose also shows every process's log on the console.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/launch/build.sh" --target tteps-scheduler tteps-server tteps-worker tteps-eval
launcher=() flags=()
for a in "$@"; do
  if [ "$a" = --verbose ]; then launcher+=(--verbose); else flags+=("$a"); fi
done
exec "$root/launch/tteps" --mode sync --workers 2 --servers 2 --out_dir "$root/out/main" \
  "${launcher[@]}" -- --split day --epochs 20 --lr 5e-4 --lr_schedule cosine --warmup_steps 20 \
  "${flags[@]}"
