#!/usr/bin/env bash
# Accumulation policies side by side: fixed alphas, speed (LB-BSP), goodput (Pollux) and the PPO
# agent, on the shipped sample in sync mode with 1 server, every run given the same wall-clock
# budget (--max_train_s):
#
#   bench/ppo_compare.sh [--out DIR] [--budget_s 45] [--seeds "1 2 3"] [--alphas "1 2 4 8"]
#                        [--policies "fixed speed goodput ppo ppo-shipped ppo-sim ppo-worker"]
#                        [--target_mape "0.35 0.30"] [--eval_every_s 3] [--split_accumulation 4]
#                        [--agent_accumulation 1] [--batch_size 64]
#                        [--log_every 10] [--data FILE --eval_fraction F]
#                        [--cases "even slow comego hetero"] [--scalings "none adascale"]
#                        [--geometries "optimizer plain"]
#                        [--quick]
#
# Cases: "even" (two equal workers), "slow" (worker 1 sleeps 200 % of its compute time: 3x
# slower), "comego" (worker 1 3x slower for 10 s of every 20 s: --slowdown_schedule 10/20) and
# "hetero" (4 workers of speeds 1, 1, 2, 3: --slowdowns 200,200,50,0). Policies: "fixed" (one run
# per alpha in --alphas); "speed" and "goodput" (starting at alpha --split_accumulation, 4 by
# default; speed keeps that global batch; goodput within [2, 16]);
# the PPO agent of job scope (it sets the global batch and the speed split allocates it; it starts
# at --agent_accumulation, 1 by default, as a job does): "ppo", learning online from scratch;
# "ppo-shipped", starting from the shipped policy (scheduler/ppo/shipped_policy.pt) and learning on
# (--ppo_learn=true); "ppo-frozen", the shipped policy acting greedily without learning (a job's
# default with the shipped policy); "ppo-sim",
# starting from a policy pre-trained offline on the simulated job calibrated from a live probe of
# the case, learning on; "ppo-worker": the agent of worker scope (it sets each worker's alpha), from
# scratch.
# Writes DIR/report.md (medians over seeds), DIR/results.csv and DIR/*.png
# (bench/ppo_report.py). --quick: 1 seed, 30 s. --scalings: each policy once per learning-rate
# scaling ("none", and "adascale": --lr_scaling adascale, the policy named with "+ada").
# --geometries: each policy once per geometry of the measured gradient noise (--noise_geometry:
# "optimizer", Adam's preconditioned gradient, the default; "plain", the policy named "+plain";
# fixed accumulations read no noise and run once).
# --eval_every_s: the held-out evaluation's cadence (the time to a target is interpolated
# between the evaluations around it). --target_mape: one target or several (quoted, spaces);
# the report gives the time to each and its ratio to the best fixed accumulation's.
# --log_every: steps per train report, the window every policy decides on.
# --batch_size: the jobs' --batch_size, the global batch at accumulation 1 (each worker's
# micro-batch is its slice of it): the unit in which every policy sizes and splits the batch.
# --data: another trips file (e.g. tteps-gen's synthetic trips) with its held-out share
# --eval_fraction (tail split); by default the shipped sample, 1/6 held out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TTEPS_BIN:-$root/build/bin}
out="bench-out/ppo-$(date +%Y%m%d-%H%M%S)" budget=45 seeds="1 2 3" alphas="1 2 4 8"
target=0.28 cases="even slow comego hetero" kinds="fixed speed goodput ppo ppo-shipped ppo-sim ppo-worker"
scalings="none" geometries="optimizer" eval_every=3 split_alpha=4 agent_alpha=1 log_every=10
batch_size=64
data="$root/data/chengdu/trajectories.jsonl" eval_fraction=0.1667 data_label=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --budget_s) budget=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --alphas) alphas=$2; shift 2 ;;
    --target_mape) target=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --policies) kinds=$2; shift 2 ;;
    --scalings) scalings=$2; shift 2 ;;
    --geometries) geometries=$2; shift 2 ;;
    --eval_every_s) eval_every=$2; shift 2 ;;
    --split_accumulation) split_alpha=$2; shift 2 ;;
    --agent_accumulation) agent_alpha=$2; shift 2 ;;
    --log_every) log_every=$2; shift 2 ;;
    --batch_size) batch_size=$2; shift 2 ;;
    --data) data=$2; data_label=$2; shift 2 ;;
    --eval_fraction) eval_fraction=$2; shift 2 ;;
    --quick) seeds=1 budget=30; shift ;;
    -h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ppo_compare: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin/tteps-ppo-pretrain" ] || { echo "ppo_compare: build first (launch/build.sh)" >&2; exit 2; }
"$root/bench/setup.sh"
mkdir -p "$out/policies"

declare -A case_flags=([even]="" [slow]="--slowdown 200 --slowdown_worker 1"
                       [comego]="--slowdown 200 --slowdown_worker 1 --slowdown_schedule 10/20"
                       [hetero]="--slowdowns 200,200,50,0")
declare -A case_workers=([even]=2 [slow]=2 [comego]=2 [hetero]=4)
for c in $cases; do
  [ -n "${case_workers[$c]:-}" ] ||
    { echo "ppo_compare: unknown case '$c' (even, slow, comego, hetero)" >&2; exit 2; }
done
# "ppo-sim": the simulated job calibrated from a 20 s live probe of the case (fixed alpha 4;
# bench/calibrate_sim.py: speeds, exchange time, gradient noise scale, measured in the first
# geometry of --geometries), then pre-trained on it.
case " $kinds " in *" ppo-sim "*) pretrain=$cases ;; *) pretrain="" ;; esac
for c in $pretrain; do
  echo "== probing the $c case and pre-training its policy on the calibrated simulation" >&2
  TTEPS_BIN=$bin "$root/launch/tteps" --mode sync --workers "${case_workers[$c]}" --servers 1 \
    --out_dir "$out/policies/probe-$c" -- --train_data "$data" --split tail --eval_fraction 0 \
    --noise_geometry "${geometries%% *}" \
    --epochs 100000 --max_train_s 20 --log_every 10 --accumulation 4 --progress_s 1000 \
    ${case_flags[$c]} >"$out/policies/probe-$c.log" 2>&1
  sim=$(/usr/bin/python3 "$root/bench/calibrate_sim.py" "$out/policies/probe-$c")
  echo "   $sim" >&2
  # shellcheck disable=SC2086
  "$bin/tteps-ppo-pretrain" --ppo_policy_out "$out/policies/$c.pt" --episodes 300 \
    --ppo_lr 1e-3 --ppo_rollout 64 --report_every 50 $sim 2>&1 | tee "$out/policies/$c.log" |
    tail -1
done

policies=""
for k in $kinds; do
  case "$k" in
    fixed) for a in $alphas; do policies+=" fixed-$a"; done ;;
    speed|goodput|ppo|ppo-shipped|ppo-frozen|ppo-sim|ppo-worker) policies+=" $k" ;;
    *) echo "ppo_compare: unknown policy '$k' (fixed, speed, goodput, ppo, ppo-shipped," \
         "ppo-frozen, ppo-sim, ppo-worker)" >&2; exit 2 ;;
  esac
done
scaled=""
for s in $scalings; do
  case "$s" in
    none) scaled+="$policies" ;;
    adascale) for p in $policies; do scaled+=" $p+ada"; done ;;
    *) echo "ppo_compare: unknown scaling '$s' (none, adascale)" >&2; exit 2 ;;
  esac
done
policies=""
for g in $geometries; do
  case "$g" in
    optimizer) policies+="$scaled" ;;
    # A fixed accumulation reads no noise: its training is the same in either geometry.
    plain) for p in $scaled; do
             case "$p" in
               fixed-*) [[ " $geometries " == *" optimizer "* ]] || policies+=" $p+plain" ;;
               *) policies+=" $p+plain" ;;
             esac
           done ;;
    *) echo "ppo_compare: unknown geometry '$g' (optimizer, plain)" >&2; exit 2 ;;
  esac
done
# Seeds outermost: drift in the machine's speed touches every policy alike.
for seed in $seeds; do
  for c in $cases; do
    for p in $policies; do
      dir="$out/runs/$c/$p/seed$seed"
      mkdir -p "$(dirname "$dir")"
      flags=(--train_data "$data" --split tail
             --eval_fraction "$eval_fraction" --epochs 100000 --max_train_s "$budget" --eval_every_s "$eval_every"
             --log_every "$log_every" --batch_size "$batch_size" --seed "$seed" --progress_s 1000 ${case_flags[$c]})
      case "$p" in *+plain) flags+=(--noise_geometry plain) ;; esac
      case "${p%+plain}" in *+ada) flags+=(--lr_scaling adascale) ;; esac
      base=${p%+plain}
      case "${base%+ada}" in
        fixed-*) a=${base#fixed-}; flags+=(--accumulation "${a%+ada}") ;;
        speed) flags+=(--accumulation_policy speed --accumulation "$split_alpha") ;;
        goodput) flags+=(--accumulation_policy goodput --accumulation "$split_alpha"
                         --accumulation_min 2) ;;
        ppo) flags+=(--accumulation_policy ppo --ppo_seed "$seed" --ppo_policy_in none
                     --accumulation "$agent_alpha") ;;
        ppo-shipped) flags+=(--accumulation_policy ppo --ppo_seed "$seed" --ppo_learn=true
                             --accumulation "$agent_alpha") ;;
        ppo-frozen) flags+=(--accumulation_policy ppo --ppo_seed "$seed" --ppo_learn=false
                            --accumulation "$agent_alpha") ;;
        ppo-sim) flags+=(--accumulation_policy ppo --ppo_seed "$seed" --ppo_learn=true
                         --ppo_policy_in "$out/policies/$c.pt" --accumulation "$agent_alpha") ;;
        ppo-worker) flags+=(--accumulation_policy ppo --ppo_scope worker --ppo_seed "$seed"
                            --ppo_policy_in none --accumulation "$agent_alpha") ;;
      esac
      printf '== %-5s %-8s seed %s: ' "$c" "$p" "$seed" >&2
      if TTEPS_BIN=$bin "$root/launch/tteps" --mode sync --workers "${case_workers[$c]}" --servers 1 \
           --out_dir "$dir" -- "${flags[@]}" >"$dir.log" 2>&1; then
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("%d steps, MAPE %.4f" % (s["steps"], s["final_eval"]["mape"]))' "$dir/summary.json" >&2
      else
        echo "FAILED (see $dir.log)" >&2
      fi
    done
  done
done
report_data=()
[ -n "$data_label" ] && report_data=(--data "$data_label, $eval_fraction held out (tail split)")
/usr/bin/python3 "$root/bench/ppo_report.py" --out "$out" --target_mape "$target" \
  --budget_s "$budget" --eval_every_s "$eval_every" --batch_size "$batch_size" "${report_data[@]}"
echo "report: $out/report.md" >&2
