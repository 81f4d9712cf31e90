#!/usr/bin/env bash
# The main job: set-up (dependencies, configure, build), then a real parameter-server run on
# the shipped Chengdu sample: mpirun with 1 scheduler, 2 servers and 2 workers in sync mode,
# 20 epochs with a cosine learning rate of 5e-4 after 20 warm-up steps (chosen by
# bench/day_holdout.sh, see docs/data.md), evaluated on the sample's last day (--split day:
# dateID 29, a day the model never saw, as a user's trips are). Each run writes its own
# directory, out/runs/main-<time>/{metrics.jsonl,summary.json,config.json,model.pt,
# model_last.pt,logs/}, and out/main links to the latest one (earlier runs are kept), and prints
# the final evaluation. Extra arguments are training flags; --verbose also shows every process's
# log on the console, --out_dir DIR writes there instead (out/main is then left alone).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
launcher=() flags=() out_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --verbose) launcher+=(--verbose); shift ;;
    --out_dir) [ $# -ge 2 ] || { echo "main-job: --out_dir needs a value" >&2; exit 2; }
               out_dir=$2; shift 2 ;;
    --out_dir=*) out_dir=${1#*=}; shift ;;
    *) flags+=("$1"); shift ;;
  esac
done
# With TTEPS_BIN set (a container image sets it) the programs there are run, and nothing is
# built.
[ -n "${TTEPS_BIN:-}" ] ||
  "$root/launch/build.sh" --target tteps-scheduler tteps-server tteps-worker tteps-eval
if [ -z "$out_dir" ]; then
  run=main-$(date +%Y%m%d-%H%M%S)
  out_dir=$root/out/runs/$run
  mkdir -p "$root/out/runs"
  # out/main was the run's directory itself before runs were kept apart: keep it as a run.
  if [ -d "$root/out/main" ] && [ ! -L "$root/out/main" ]; then
    mv "$root/out/main" "$root/out/runs/main-before-$run"
  fi
  ln -sfn "runs/$run" "$root/out/main"
fi
exec "$root/launch/tteps" --mode sync --workers 2 --servers 2 --out_dir "$out_dir" \
  ${launcher[@]+"${launcher[@]}"} -- --split day --epochs 20 --lr 5e-4 --lr_schedule cosine \
  --warmup_steps 20 ${flags[@]+"${flags[@]}"}
