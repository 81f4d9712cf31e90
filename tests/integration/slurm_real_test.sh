#!/usr/bin/env bash
# launch/slurm.sbatch under a real Slurm: a single-node cluster (slurmctld, slurmd and munge,
# Debian's packages) started in a temporary directory. A sync job submitted with sbatch and
# waited for (its summary and model in the default out_dir); the same job stopped twice while it
# trains, first by the time limit's warning (SIGUSR1: it requeues itself), then by Slurm's own
# requeue, and each time resumed by itself: it ends "done", with the undisturbed job's model bit
# for bit. A job cancelled with scancel while it trains: every process gone, summary.json
# "interrupted", not requeued, and its checkpoint resumed. A job started by srun, and one too
# large for its allocation under srun, refused at once.
# Needs root and Slurm (launch/install-deps.sh installs it); exits 77 (skipped) without them.
#   slurm_real_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
skip() { echo "SKIPPED: $*"; exit 77; }
fail() {
  echo "FAIL: $*"
  for f in "$d"/*.log "$d"/*.out "$d"/run*/logs/scheduler-*.log "$d"/out/*/logs/scheduler-*.log \
      "$d"/out/*/requeued/*/logs/scheduler-*.log; do
    [ -e "$f" ] && { echo "== $f"; tail -15 "$f"; }
  done
  exit 1
}
[ "$(id -u)" -eq 0 ] || skip "needs root (slurmd runs jobs as root here)"
for p in slurmctld slurmd munged sbatch scancel squeue; do
  command -v "$p" >/dev/null || skip "$p not installed (launch/install-deps.sh installs Slurm)"
done

d=$(mktemp -d /tmp/tteps-slurm-real.XXXXXX)
chmod 755 "$d"
cleanup() {
  [ -e "$d/slurmctld.pid" ] && kill "$(cat "$d/slurmctld.pid")" 2>/dev/null
  [ -e "$d/slurmd.pid" ] && kill "$(cat "$d/slurmd.pid")" 2>/dev/null
  [ -e "$d/munged.pid" ] && kill "$(cat "$d/munged.pid")" 2>/dev/null
  pkill -KILL -f "$d/" 2>/dev/null
  sleep 0.5
  [ -n "${TTEPS_KEEP:-}" ] || rm -rf "$d"
}
trap cleanup EXIT
export SLURM_CONF=$d/slurm.conf TTEPS_BIN=$bin TTEPS_ROOT=$src

# munge: its own key, socket and files.
dd if=/dev/urandom of="$d/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$d/munge.key"
munged --key-file "$d/munge.key" --socket "$d/munge.sock" --pid-file "$d/munged.pid" \
  --log-file "$d/munged.log" --seed-file "$d/munge.seed" --force 2>"$d/munged.err" ||
  fail "munged did not start: $(cat "$d/munged.err")"

host=$(hostname -s)
port=$((20000 + RANDOM % 20000))
mkdir -p "$d/state" "$d/spool"
cat >"$SLURM_CONF" <<EOF
ClusterName=tteps-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.sock
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=5
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -c -i >"$d/slurmctld.out" 2>&1 || fail "slurmctld did not start"
slurmd >"$d/slurmd.out" 2>&1 || fail "slurmd did not start"
for _ in $(seq 100); do
  sinfo -h -o %T 2>/dev/null | grep -qx idle && break
  sleep 0.1
done
sinfo -h -o %T | grep -qx idle || fail "the node is not idle: $(sinfo 2>&1)"
start=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
# until SECONDS CMD...: waits for CMD to succeed; false if it has not within SECONDS.
until_ok() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do [ "$SECONDS" -lt "$end" ] || return 1; sleep 0.05; done
}
# The last training step a metrics.jsonl reports (0 if none yet).
step_at_least() {
  local s
  s=$(grep -o '"type":"train","worker":[0-9]*,"step":[0-9]*' "$1" 2>/dev/null |
    grep -o '[0-9]*$' | sort -n | tail -1)
  [ "${s:-0}" -ge "$2" ]
}
is_state() { [ "$(state "$1")" = "$2" ]; }
summary_has() { grep -q "$2" "$1/summary.json" 2>/dev/null; }
# release JOB: a requeued JOB starts now rather than in two minutes. Not in the second of its
# requeue: slurmd refuses a job credential as old as the revocation of the one before it ("Job
# credential revoked", and the job fails).
release() {
  sleep 2
  scontrol update JobId="$1" StartTime=now || fail "scontrol update StartTime"
}
# finish JOB: waits for JOB to end (sbatch --wait polls at growing intervals, up to half a
# minute late) and returns its exit code.
finish() {
  local end=$((SECONDS + 120)) st
  while :; do
    st=$(state "$1")
    case "$st" in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE)
        break ;;
    esac
    [ "$SECONDS" -lt "$end" ] || { echo "job $1 still $st after 120 s"; return 124; }
    sleep 0.1
  done
  return "$(scontrol show job "$1" | grep -o ' ExitCode=[0-9]*' | cut -d= -f2)"
}
predict() {
  "$bin/tteps-eval" --model "$1" --data "$src/data/chengdu/trajectories.jsonl" --predictions "$2" \
    >/dev/null 2>&1
}

# A sync job to the end, in the default out_dir (out/slurm-JOBID where it runs): 1 scheduler,
# 1 server, 2 workers in one allocation of 4 tasks. The reference of the requeued job below:
# the same flags (--slowdowns only sleeps, so that the job below is stopped mid-run).
# shellcheck disable=SC2054  # 200,200 is one value
flags=(--max_steps 60 --checkpoint_every 5 --log_every 1 --timeout_s 60 --slowdowns 200,200)
ref=$(sbatch --parsable --nodes 1 --ntasks 4 --output "$d/job1.out" --chdir "$d" \
  "$src/launch/slurm.sbatch" --workers 2 --servers 1 -- "${flags[@]}" 2>"$d/sbatch1.log") ||
  fail "sbatch: $ref"
finish "$ref" || fail "the job failed"
r=$d/out/slurm-$ref
summary_has "$r" '"status":"done"' || fail "summary: $(cat "$r/summary.json")"
summary_has "$r" '"steps":60' || fail "not 60 steps"
[ -s "$r/model_last.pt" ] || fail "no model_last.pt"
echo "job 1: done, 60 steps, in $(since "$start") s"

# The same job, stopped twice and requeued: SIGUSR1 to the batch shell (what --signal=B:USR1@90
# sends before the time limit) after step 12: it stops and requeues itself. Slurm holds a
# requeued job for two minutes: the test starts it at once. Its second run resumes and is
# requeued by Slurm (SIGTERM, as a preemption's requeue) after step 32; the third resumes.
t=$(date +%s.%N)
j=$(sbatch --parsable --nodes 1 --ntasks 4 --output "$d/job2.out" --chdir "$d" \
  "$src/launch/slurm.sbatch" --workers 2 --servers 1 -- "${flags[@]}" 2>"$d/sbatch2.log") ||
  fail "sbatch: $j"
o=$d/out/slurm-$j
until_ok 60 step_at_least "$o/metrics.jsonl" 12 || fail "the job did not train"
signalled=$(date +%s.%N)
scancel --signal=USR1 --batch "$j" || fail "scancel --signal=USR1"
until_ok 30 is_state "$j" PENDING || fail "not requeued after SIGUSR1: $(state "$j")"
usr1_took=$(since "$signalled")
summary_has "$o" '"status":"interrupted"' || fail "after SIGUSR1: $(cat "$o/summary.json")"
grep -q 'the time limit is near (SIGUSR1): stopped after step' "$d/job2.out" ||
  fail "no SIGUSR1 line: $(cat "$d/job2.out")"
release "$j"
until_ok 60 test -e "$o/requeued/0/summary.json" || fail "run 1 did not start"
until_ok 60 step_at_least "$o/metrics.jsonl" 32 || fail "run 1 did not train"
requeued=$(date +%s.%N)
scontrol requeue "$j" || fail "scontrol requeue"
until_ok 30 is_state "$j" PENDING || fail "not pending after scontrol requeue: $(state "$j")"
requeue_took=$(since "$requeued")
summary_has "$o" '"signal":"SIGTERM"' || fail "after scontrol requeue: $(cat "$o/summary.json")"
release "$j"
finish "$j" || fail "the requeued job failed: $(state "$j")"
summary_has "$o" '"status":"done"' || fail "after the requeues: $(cat "$o/summary.json")"
summary_has "$o" '"steps":60' || fail "not 60 steps: $(cat "$o/summary.json")"
summary_has "$o" "\"resumed_from\":{\"checkpoint_dir\":\"$o/requeued/1/checkpoints\"" ||
  fail "run 2 did not resume from run 1: $(cat "$o/summary.json")"
tr '\n' ' ' <"$d/job2.out" | sed 's/  */ /g' |
  grep -q "requeued run 1: resuming from $o/requeued/0/checkpoints" ||
  fail "run 1 did not resume from run 0: $(cat "$d/job2.out")"
for k in 0 1; do
  summary_has "$o/requeued/$k" '"status":"interrupted"' || fail "run $k: not interrupted"
done
predict "$r/model_last.pt" "$d/ref.pred" || fail "tteps-eval of the reference"
predict "$o/model_last.pt" "$d/requeued.pred" || fail "tteps-eval of the requeued job"
cmp -s "$d/ref.pred" "$d/requeued.pred" || fail "the requeued job's predictions differ"
cmp -s "$r/model_last.pt" "$o/model_last.pt" || fail "the requeued job's model_last.pt differs"
echo "job 2 (requeued twice): done, the model of job 1 bit for bit; stopped and requeued" \
  "$usr1_took s after SIGUSR1 and $requeue_took s after scontrol requeue; $(since "$t") s in all"

# scancel while it trains: every process gone, the summary says interrupted, the job is not
# requeued, and the checkpoint resumes.
jobid=$(sbatch --parsable --nodes 1 --ntasks 4 --output "$d/job3.out" --chdir "$d" \
  "$src/launch/slurm.sbatch" --workers 2 --servers 1 --out_dir "$d/run2" -- \
  --epochs 1000 --max_steps 100000 --log_every 1 --checkpoint_every 5 --timeout_s 60) ||
  fail "sbatch: $jobid"
until_ok 60 step_at_least "$d/run2/metrics.jsonl" 12 || fail "job 3 did not train"
cancelled=$(date +%s.%N)
scancel "$jobid" || fail "scancel"
until_ok 30 is_state "$jobid" CANCELLED || fail "not cancelled: $(state "$jobid")"
gone=""
for _ in $(seq 100); do
  pgrep -f "$d/run2" >/dev/null || { gone=1; break; }
  sleep 0.1
done
[ -n "$gone" ] || fail "processes left after scancel: $(pgrep -af "$d/run2")"
took=$(since "$cancelled")
summary_has "$d/run2" '"status":"interrupted"' ||
  fail "summary after scancel: $(cat "$d/run2/summary.json" 2>&1)"
ls "$d/run2/checkpoints" >/dev/null 2>&1 || fail "no checkpoints after scancel"
sleep 1
is_state "$jobid" CANCELLED || fail "requeued after scancel: $(state "$jobid")"
echo "job 3 (scancel): every process gone and the summary written $took s after scancel"
# The scripts' lines stay within 100 columns (a long path on a line of its own).
grep -h -E '^(tteps:|slurm.sbatch:| )' "$d"/job[123].out |
  awk 'length($0) > 100 { bad = 1; print "over 100 columns: " $0 } END { exit bad }' ||
  fail "console lines over 100 columns"
"$src/launch/tteps" --mode sync --workers 2 --servers 1 --out_dir "$d/run3" -- \
  --resume "$d/run2/checkpoints" --epochs 1000 --max_steps 30 --timeout_s 60 >"$d/resume.log" 2>&1 ||
  fail "the resume failed: $(tail -5 "$d/resume.log")"
grep -q '"resumed_from"' "$d/run3/summary.json" || fail "not resumed: $(cat "$d/run3/summary.json")"
# A direct launch, for sites that forbid mpirun inside allocations: srun --multi-prog over
# Slurm's PMIx.
j=$(sbatch --parsable --nodes 1 --ntasks 4 --output "$d/job4.out" --chdir "$d" \
  "$src/launch/slurm.sbatch" --launcher srun --workers 2 --servers 1 --out_dir "$d/run4" -- \
  --max_steps 20 --timeout_s 60 2>"$d/sbatch4.log") || fail "sbatch: $j"
finish "$j" || fail "sbatch --launcher srun: the job failed"
grep -q '"status":"done"' "$d/run4/summary.json" || fail "srun summary: $(cat "$d/run4/summary.json")"
grep -q '^+ srun --mpi=pmix' "$d/job4.out" || fail "not launched by srun"
[ -s "$d/run4/logs/worker-3.log" ] || fail "no log of rank 3: $(ls "$d/run4/logs")"
echo "job 4 (--launcher srun): done"
# Too small an allocation for srun: 2 tasks for 1 scheduler, 1 server and 2 workers. Refused
# before srun runs (whose own failure says nothing of the fix), naming what to ask for.
t=$(date +%s.%N)
j=$(sbatch --parsable --nodes 1 --ntasks 2 --output "$d/job5.out" --chdir "$d" \
  "$src/launch/slurm.sbatch" --launcher srun --workers 2 --servers 1 --out_dir "$d/run5" -- \
  --max_steps 20 --timeout_s 60 2>"$d/sbatch5.log") || fail "sbatch: $j"
finish "$j"
rc=$?
took=$(since "$t")
[ "$rc" -eq 2 ] || fail "srun, 4 tasks in 2: exit $rc, not 2: $(cat "$d/job5.out")"
want='the job needs 4 tasks (1 scheduler, 1 server, 2 workers), but this Slurm allocation has'
want+=' room for 2 (2 CPUs, SLURM_NTASKS=2): submit it with sbatch (or salloc) --ntasks 4, or'
want+=' with --overcommit'
tr '\n' ' ' <"$d/job5.out" | sed 's/  */ /g' | grep -qF "$want" ||
  fail "srun, 4 tasks in 2: $(cat "$d/job5.out")"
grep -q '^+ srun' "$d/job5.out" && fail "srun ran: $(cat "$d/job5.out")"
awk -v t="$took" 'BEGIN { exit !(t < 15) }' || fail "the refusal took $took s"
echo "job 5 (--launcher srun, 4 tasks in 2): exit 2, $took s from sbatch to the job's end"
echo "PASS: sbatch ran a job to the end (mpirun and srun); requeued twice (SIGUSR1, scontrol" \
  "requeue) it resumed by itself to the same model; scancel left a resumable checkpoint;" \
  "srun refused a job too large for its allocation; $(since "$start") s"
