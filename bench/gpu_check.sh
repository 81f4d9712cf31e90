#!/usr/bin/env bash
# bench/gpu_check.sh OUT [SECONDS]: the GPU checks in one go, on a machine with CUDA and tteps
# built against a CUDA LibTorch (docs/gpus.md). Within SECONDS (default 480) in all, in order
# of value: the `gpu` tests, training throughput against PyTorch eager on the same GPU (the
# shipped sample, the two sides alternated GPU_CHECK_ROUNDS times (default 3) at batch 64 and
# 1,024 with their medians, then generated trips for a batch larger than the sample), the unit
# tests, bench/compare on the GPU (sync and ring, W = 1, 2, 4, beside DDP over NCCL), then the
# integration tests until the time is up. Every step's log goes to OUT (at most 8 files);
# OUT/steps.txt lists the GPU and each step's exit status and seconds, with the throughput
# medians as a markdown table after the throughput steps. GPU_CHECK_SKIP="compare ..." skips
# the steps it names (gpu_tests, bench, unit_tests, compare, integration); GPU_CHECK_JOBS (default
# 8) is the integration tests' ctest -j.
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
  # What a timed-out ctest leaves running (its tests, their jobs) would slow every later step.
  pkill -KILL -f "^$root/build/" 2>/dev/null
  pkill -KILL -x mpirun 2>/dev/null
  pkill -KILL -x orted 2>/dev/null
}

# sample SECONDS: after SECONDS, what the machine does (load, threads per process and their
# states, CPU split), into OUT/diag.log: on the GPU machine tests that train the model on the
# CPU crawled when several ran at once, and finished in a second alone.
sample() {
  sleep "$1"
  {
    echo "# $(date +%T) load: $(cat /proc/loadavg)"
    top -b -n 2 -d 1 | sed -n '/^top/,/^$/p' | tail -8
    ps -N --ppid 2 -o pid,nlwp,stat,pcpu,etime,args --sort=-nlwp | cut -c1-160 | head -25
    ps -eLo stat,wchan:32,comm | sort | uniq -c | sort -rn | head -25
  } >>"$out/diag.log" 2>&1
}

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$TTEPS_PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"cudnn", torch.backends.cudnn.version())'
  nproc
} >"$out/steps.txt" 2>&1

cd "$root/build" || exit 1
step gpu_tests 200 ctest -L gpu -j 4 -V --timeout 180  # -V: the measured differences
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
# rounds DATA STATS N BATCHES...: tteps (every batch size in one process) and PyTorch (one
# process per batch size) alternated N times, so that the medians see the same machine.
rounds() {
  local data=$1 stats=$2 n=$3 r b
  shift 3
  for ((r = 1; r <= n; r++)); do
    echo "# round $r of $n"
    "$bin/bench_train_throughput" --device cuda --batch_sizes "$(IFS=,; echo "$*")" \
      --pad_multiples "${GPU_CHECK_PADS:-1,16,32}" --data "$data" --stats "$stats"
    for b in "$@"; do pytorch "$b" "$data" "$stats"; done
  done
}
# table: the medians of the lines above as a markdown table (docs/gpus.md shows it): per data
# set, batch size and pad multiple, tteps' median trips/s over its runs beside PyTorch's.
table() {
  "$TTEPS_PYTHON" - "$out/bench.log" <<'PY'
import json, statistics, sys
runs, data, order = {}, "", []
for line in open(sys.argv[1]):
    if line.startswith("# data: "):
        data = line[len("# data: "):].strip()
        continue
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    if r.get("bench") == "train_throughput":
        side = r.get("pad_multiple", 1)
    elif r.get("bench") == "pytorch_eager":
        side = "pytorch"
    else:
        continue  # bench_train_throughput's own median lines
    key = (data, r["batch_size"], side)
    if key not in runs:
        order.append(key)
    runs.setdefault(key, []).append(r["trips_per_s"])
print("| data | batch | pad multiple | runs | tteps trips/s | PyTorch eager trips/s | "
      "tteps / PyTorch |")
print("|---|---|---|---|---|---|---|")
for data, batch, pad in order:
    if pad == "pytorch":
        continue
    t, p = runs[(data, batch, pad)], runs.get((data, batch, "pytorch"))
    mt = statistics.median(t)
    mp = statistics.median(p) if p else None
    print(f"| {data} | {batch:,} | {pad} | {len(t)} | {mt:,.0f} | "
          f"{f'{mp:,.0f}' if mp else '-'} | {f'{mt / mp:.2f}' if mp else '-'} |")
PY
}
export -f pytorch rounds
export root bin
# The shipped sample has 1,200 trips: a batch of 4,096 takes all of them.
echo "# data: sample" >>"$out/bench.log"
step bench 200 rounds "$sample" "$root/data/chengdu/stats.json" "${GPU_CHECK_ROUNDS:-3}" 64 1024
step bench 60 rounds "$sample" "$root/data/chengdu/stats.json" 1 256 4096
# Whether new shapes are the cost at batch 64: after 40 warm-up steps (two epochs of the sample)
# every batch's shape has been seen once.
echo "# data: sample, 40 warm-up steps" >>"$out/bench.log"
step bench 30 "$bin/bench_train_throughput" --device cuda --batch_sizes 64 --warmup 40 \
  --pad_multiples 1,32
echo "# data: 40,000 generated" >>"$out/bench.log"
step bench 60 rounds "$gen" "$gen.stats.json" 1 4096
{ echo; table; } >>"$out/steps.txt" 2>&1
sample 30 &
sample 70 &
step unit_tests 150 ctest -L unit -j "${GPU_CHECK_UNIT_JOBS:-8}" --output-on-failure --timeout 100
step compare 200 "$TTEPS_PYTHON" "$root/bench/compare" --device cuda --modes sync,ring \
  --workers 1,2,4 --servers 1 --steps 40 --trips 20000 --no_accuracy --out /tmp/tteps-compare
cp /tmp/tteps-compare/report.md "$out/compare_report.md" 2>/dev/null
# fuzz: clang and libFuzzer, which the GPU machine lacks (the decoders it fuzzes are CPU code).
step integration 600 ctest -LE 'unit|gpu|fuzz' -j "${GPU_CHECK_JOBS:-8}" --output-on-failure --timeout 300
exit 0
