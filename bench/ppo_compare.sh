#!/usr/bin/env bash
# The PPO accumulation policy against fixed alphas, on the shipped sample in sync mode with 2
# workers and 1 server, every run given the same wall-clock budget (--max_train_s):
#
#   bench/ppo_compare.sh [--out DIR] [--budget_s 45] [--seeds "1 2 3"] [--alphas "1 2 4 8"]
#                        [--target_mape 0.28] [--cases "even slow"] [--quick]
#
# Cases: "even" (two equal workers) and "slow" (worker 1 sleeps --slowdown 200 % of its compute
# time: 3x slower). Policies: fixed alpha in --alphas; "ppo", learning online from scratch;
# "ppo-sim", starting from a policy pre-trained offline on the simulated job
# (tteps-ppo-pretrain) whose speeds are the ones measured here, and learning on. Writes
# DIR/report.md, DIR/results.csv and DIR/*.png (bench/ppo_report.py). --quick: 1 seed, 30 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TTEPS_BIN:-$root/build/bin}
out="bench-out/ppo-$(date +%Y%m%d-%H%M%S)" budget=45 seeds="1 2 3" alphas="1 2 4 8"
target=0.28 cases="even slow"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --budget_s) budget=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --alphas) alphas=$2; shift 2 ;;
    --target_mape) target=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --quick) seeds=1 budget=30; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ppo_compare: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin/tteps-ppo-pretrain" ] || { echo "ppo_compare: build first (launch/build.sh)" >&2; exit 2; }
"$root/bench/setup.sh"
mkdir -p "$out/policies"

# The simulated job behind "ppo-sim": seconds per micro-batch of 32 trips per worker and per
# step of communication (push + pull + wait), as measured by sync runs on this 2-core machine
# (summary.json step_time_s at alpha 1: compute 0.14, exchange 0.02); the slow worker is 3x.
declare -A sim_compute=([even]="0.14,0.14" [slow]="0.14,0.42")
declare -A case_flags=([even]="" [slow]="--slowdown 200 --slowdown_worker 1")
for c in $cases; do
  [ -n "${sim_compute[$c]:-}" ] || { echo "ppo_compare: unknown case '$c' (even, slow)" >&2; exit 2; }
done
for c in $cases; do
  echo "== pre-training the $c policy on the simulated job" >&2
  "$bin/tteps-ppo-pretrain" --ppo_policy_out "$out/policies/$c.pt" --episodes 300 \
    --ppo_lr 1e-3 --ppo_rollout 64 --report_every 50 --sim_compute_s "${sim_compute[$c]}" \
    --sim_comm_s 0.02 2>&1 | tee "$out/policies/$c.log" | tail -1
done

policies=""
for a in $alphas; do policies+=" fixed-$a"; done
policies+=" ppo ppo-sim"
# Seeds outermost: drift in the machine's speed touches every policy alike.
for seed in $seeds; do
  for c in $cases; do
    for p in $policies; do
      dir="$out/runs/$c/$p/seed$seed"
      mkdir -p "$(dirname "$dir")"
      flags=(--train_data "$root/data/chengdu/trajectories.jsonl" --split tail
             --eval_fraction 0.1667 --epochs 100000 --max_train_s "$budget" --eval_every_s 3
             --log_every 10 --seed "$seed" --progress_s 1000 ${case_flags[$c]})
      case "$p" in
        fixed-*) flags+=(--accumulation "${p#fixed-}") ;;
        ppo) flags+=(--accumulation_policy ppo --ppo_seed "$seed") ;;
        ppo-sim) flags+=(--accumulation_policy ppo --ppo_seed "$seed"
                         --ppo_policy_in "$out/policies/$c.pt") ;;
      esac
      printf '== %-5s %-8s seed %s: ' "$c" "$p" "$seed" >&2
      if TTEPS_BIN=$bin "$root/launch/tteps" --mode sync --workers 2 --servers 1 \
           --out_dir "$dir" -- "${flags[@]}" >"$dir.log" 2>&1; then
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("%d steps, MAPE %.4f" % (s["steps"], s["final_eval"]["mape"]))' "$dir/summary.json" >&2
      else
        echo "FAILED (see $dir.log)" >&2
      fi
    done
  done
done
/usr/bin/python3 "$root/bench/ppo_report.py" --out "$out" --target_mape "$target" \
  --budget_s "$budget"
echo "report: $out/report.md" >&2
