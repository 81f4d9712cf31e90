#!/usr/bin/env bash
# bench/gpu_check.sh OUT [SECONDS]: the GPU checks in one go, on a machine with CUDA and tteps
# built against a CUDA LibTorch (README, "GPUs"). Within SECONDS (default 480) in all, in order
# of value: the `gpu` tests, training throughput against PyTorch eager on the same GPU (the
# shipped sample, then generated trips for batches larger than the sample), the unit tests,
# bench/compare on the GPU (sync and ring, W = 1, 2, 4, beside DDP over NCCL), then the
# integration tests until the time is up. Every step's log goes to OUT (at most 8 files);
# OUT/steps.txt lists each step's exit status and seconds. GPU_CHECK_SKIP="compare ..." skips
# the steps it names (gpu_tests, bench, unit_tests, compare, integration).
set -uo pipefail
out=${1:?usage: bench/gpu_check.sh OUT [SECONDS]}
budget=${2:-480}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
mkdir -p "$out"
export TTEPS_PYTHON=${TTEPS_PYTHON:-$(command -v python3)}
deadline=$(($(date +%s) + budget))

# step NAME LIMIT CMD...: runs CMD for at most LIMIT seconds (less if the budget ends sooner).
step() {
  local name=$1 limit=$2 start rc left
  shift 2
  if [[ " ${GPU_CHECK_SKIP:-} " == *" $name "* ]]; then
    echo "$name: skipped (GPU_CHECK_SKIP)" | tee -a "$out/steps.txt"
    return
  fi
  left=$((deadline - $(date +%s)))
  ((left < limit)) && limit=$left
  if ((limit < 10)); then
    echo "$name: skipped, the time is up" | tee -a "$out/steps.txt"
    return
  fi
  start=$(date +%s)
  timeout -k 5 "$limit" bash -c '"$@"' _ "$@" >>"$out/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc in $(($(date +%s) - start)) s (limit $limit s)" | tee -a "$out/steps.txt"
}

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$TTEPS_PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"cudnn", torch.backends.cudnn.version())'
  nproc
} >"$out/steps.txt" 2>&1

cd "$root/build" || exit 1
step gpu_tests 200 ctest -L gpu --output-on-failure --timeout 180
gen=/tmp/tteps-gpu-gen.jsonl
"$bin/tteps-gen" --trips 40000 --out "$gen" >/dev/null 2>&1 &&
  "$bin/tteps-stats" --data "$gen" --out "$gen.stats.json" >/dev/null 2>&1
# The PyTorch baseline in its own process (bench_train_throughput --pytorch crashed there with
# SIGSEGV in its second std::system after CUDA had started): trips/s over steps 4 to 23.
pytorch() {  # BATCH DATA STATS
  local d=/tmp/tteps-pytorch-$1
  rm -rf "$d"
  "$TTEPS_PYTHON" "$root/bench/baselines/deeptte_ddp.py" --workers 1 --train_data "$2" \
    --stats "$3" --eval_fraction 0 --batch_size "$1" --max_steps 23 --log_every 1 --threads 1 \
    --optimizer adam --device cuda --out_dir "$d" >"$d.log" 2>&1 || { tail -5 "$d.log"; return 1; }
  "$TTEPS_PYTHON" -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "\"train\"" in l][3:]
print(json.dumps({"bench": "pytorch_eager", "batch_size": int(sys.argv[2]), "trips_per_s":
      sum(r["trips"] for r in rows) / sum(r["trips"] / r["trips_per_s"] for r in rows)}))' \
    "$d/metrics.jsonl" "$1"
}
sample=$root/data/chengdu/trajectories.jsonl
throughput() {  # DATA STATS BATCHES...
  local data=$1 stats=$2
  shift 2
  for b in "$@"; do
    "$bin/bench_train_throughput" --device cuda --batch_sizes "$b" --data "$data" --stats "$stats"
    pytorch "$b" "$data" "$stats"
  done
}
echo "# the shipped sample (1,200 trips: a batch of 4,096 takes all 1,200)" >>"$out/bench.log"
export -f pytorch throughput
export root bin
step bench 150 throughput "$sample" "$root/data/chengdu/stats.json" 64 256 1024 4096
echo "# 40,000 generated trips" >>"$out/bench.log"
step bench 100 throughput "$gen" "$gen.stats.json" 1024 4096
step unit_tests 120 ctest -L unit -j 16 --output-on-failure --timeout 100
step compare 200 "$TTEPS_PYTHON" "$root/bench/compare" --device cuda --modes sync,ring \
  --workers 1,2,4 --servers 1 --steps 40 --trips 20000 --no_accuracy --out /tmp/tteps-compare
cp /tmp/tteps-compare/report.md "$out/compare_report.md" 2>/dev/null
step integration 600 ctest -LE 'unit|gpu' -j 8 --output-on-failure --timeout 300
exit 0
