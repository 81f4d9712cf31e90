#!/usr/bin/env bash
# The architecture's rules, checked on the tree and the real programs: flags only in main and
# flags files, one step loop, dependencies pointing down, each program's --help listing its own
# flags, and the quiet console of a real job (at most 20 lines, each process's log in a file,
# a failed job's last line giving the cause).
set -euo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$src"

# 1. No library reads or defines a flag.
bad=$(grep -rlE 'FLAGS_[a-z]' common server worker scheduler | grep -vE '(_main\.cc|_flags\.(cc|h))$' || true)
[ -z "$bad" ] || fail "flags outside *_main.cc and *_flags.cc: $bad"
# 2. Exactly one step loop in worker/.
loops=$(grep -rlE 'for \(int64_t step = ' worker | sort)
[ "$loops" = "worker/step_driver.cc" ] || fail "step loops in: $loops"
# 3. Dependencies point down: common knows no role, server no worker, worker no server or
#    scheduler; LibTorch stays out of common/ and server/.
grep -rlE '#include "(worker|server|scheduler)/' common && fail "common/ includes a role"
grep -rlE '#include "(worker|scheduler)/' server && fail "server/ includes worker/ or scheduler/"
grep -rlE '#include "(server|scheduler)/' worker && fail "worker/ includes server/ or scheduler/"
grep -rlE '#include <torch/' common server && fail "LibTorch in common/ or server/"

# 4. Each program's --help lists the flags it uses and not the others'.
has() { "$bin/$1" --help >"$tmp/help" 2>&1 || true; grep -q -- "$2" "$tmp/help"; }
has tteps-server '--timeout_s' || fail "tteps-server --help lacks --timeout_s"
has tteps-server '--lr ' && fail "tteps-server --help lists the job's --lr"
has tteps-worker '--batch_size' || fail "tteps-worker --help lacks --batch_size"
has tteps-worker '--ppo_lr' && fail "tteps-worker --help lists the agent's flags"
has tteps-scheduler '--ppo_lr' || fail "tteps-scheduler --help lacks --ppo_lr"
has tteps-eval '--epochs' && fail "tteps-eval --help lists training flags"

# 5. A real job's console: a header, progress, the result; every process's log in a file.
data=$src/data/chengdu/trajectories.jsonl
TTEPS_BIN=$bin "$src/launch/tteps" --mode sync --workers 2 --servers 1 --out_dir "$tmp/ok" \
  -- --train_data "$data" --max_steps 30 --progress_s 0.5 >"$tmp/ok.out" 2>&1 ||
  { cat "$tmp/ok.out"; fail "the job failed"; }
lines=$(wc -l <"$tmp/ok.out")
[ "$lines" -le 20 ] || { cat "$tmp/ok.out"; fail "the console has $lines lines, more than 20"; }
# Within 100 columns but the mpirun line and the result (one JSON line each, whole for tools).
long=$(grep -v '^+ mpirun\|^{"final_eval"' "$tmp/ok.out" | awk 'length($0) > 100' || true)
[ -z "$long" ] || fail "console lines over 100 characters: $long"
grep -q '^\[tteps\] sync: 2 workers, 1 server;' "$tmp/ok.out" || { cat "$tmp/ok.out"; fail "no header"; }
grep -q '^\[sync\] step 30/30' "$tmp/ok.out" || { cat "$tmp/ok.out"; fail "no final progress line"; }
tail -1 "$tmp/ok.out" | grep -q '^{"final_eval":' || fail "the last line is not the result"
for f in scheduler-0 server-1 worker-2 worker-3; do
  [ -s "$tmp/ok/logs/$f.log" ] || fail "no log $f.log"
done
grep -q 'registered worker 1' "$tmp/ok/logs/scheduler-0.log" || fail "the scheduler's log is incomplete"
[ -s "$tmp/ok/config.json" ] || fail "no config.json"

# 6. A failed job: the cause reaches the console at once and again as the last line; the other
#    processes only note it in their logs.
head -n 20 "$data" >"$tmp/bad.jsonl"
sed -i '3s/"weekID":[0-9]*/"weekID":9/' "$tmp/bad.jsonl"
if TTEPS_BIN=$bin "$src/launch/tteps" --mode sync --workers 2 --servers 1 --out_dir "$tmp/bad" \
  -- --train_data "$tmp/bad.jsonl" >"$tmp/bad.out" 2>&1; then
  fail "a bad record did not fail the job"
fi
lines=$(wc -l <"$tmp/bad.out")
[ "$lines" -le 5 ] || { cat "$tmp/bad.out"; fail "the failed job printed $lines lines"; }
tail -1 "$tmp/bad.out" | grep -q "^tteps: the job failed: .*bad.jsonl:3: field 'weekID'" ||
  { cat "$tmp/bad.out"; fail "the last line does not repeat the cause"; }
grep -q 'PMIX ERROR' "$tmp/bad.out" && fail "mpirun's PMIX noise on the console"
TTEPS_BIN=$bin "$src/launch/tteps" --workers 0 >"$tmp/w0.out" 2>&1 && fail "--workers 0 accepted"
grep -q -- '--workers must be an integer >= 1' "$tmp/w0.out" || { cat "$tmp/w0.out"; fail "--workers 0 not named"; }
echo PASS
