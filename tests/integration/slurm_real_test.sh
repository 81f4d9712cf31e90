#!/usr/bin/env bash
# launch/slurm.sbatch under a real Slurm: a single-node cluster (slurmctld, slurmd and munge,
# Debian's packages) started in a temporary directory, a sync job submitted with sbatch and
# waited for (its summary and model), then a longer job cancelled with scancel while it trains:
# every process of it gone, summary.json "interrupted", and its checkpoint resumed.
# Needs root and Slurm (launch/install-deps.sh installs it); exits 77 (skipped) without them.
#   slurm_real_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; for f in "$d"/*.log "$d"/*.out "$d"/run*/logs/scheduler-*.log; do [ -e "$f" ] && { echo "== $f"; tail -15 "$f"; }; done; exit 1; }
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

# A sync job to the end: 1 scheduler, 1 server, 2 workers in one allocation of 4 tasks.
sbatch --wait --nodes 1 --ntasks 4 --output "$d/job1.out" --chdir "$d" \
  "$src/launch/slurm.sbatch" --workers 2 --servers 1 --out_dir "$d/run1" -- \
  --max_steps 20 --timeout_s 60 >"$d/sbatch1.log" 2>&1 || fail "sbatch --wait: the job failed"
grep -q '"status":"done"' "$d/run1/summary.json" || fail "summary: $(cat "$d/run1/summary.json")"
grep -q '"steps":20' "$d/run1/summary.json" || fail "not 20 steps"
[ -s "$d/run1/model.pt" ] || fail "no model.pt"
echo "job 1 (sbatch --wait): done, 20 steps, in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"

# scancel while it trains: every process gone, the summary says interrupted, the checkpoint
# resumes.
jobid=$(sbatch --parsable --nodes 1 --ntasks 4 --output "$d/job2.out" --chdir "$d" \
  "$src/launch/slurm.sbatch" --workers 2 --servers 1 --out_dir "$d/run2" -- \
  --epochs 1000 --max_steps 100000 --log_every 1 --checkpoint_every 5 --timeout_s 60) ||
  fail "sbatch: $jobid"
for _ in $(seq 600); do
  grep -q '"step":12,' "$d/run2/metrics.jsonl" 2>/dev/null && break
  sleep 0.1
done
grep -q '"step":12,' "$d/run2/metrics.jsonl" 2>/dev/null || fail "job 2 did not train"
cancelled=$(date +%s.%N)
scancel "$jobid" || fail "scancel"
for _ in $(seq 300); do
  squeue -h -j "$jobid" 2>/dev/null | grep -q . || break
  sleep 0.1
done
gone=""
for _ in $(seq 100); do
  pgrep -f "$d/run2" >/dev/null || { gone=1; break; }
  sleep 0.1
done
[ -n "$gone" ] || fail "processes left after scancel: $(pgrep -af "$d/run2")"
took=$(awk -v a="$cancelled" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
grep -q '"status":"interrupted"' "$d/run2/summary.json" 2>/dev/null ||
  fail "summary after scancel: $(cat "$d/run2/summary.json" 2>&1)"
ls "$d/run2/checkpoints" >/dev/null 2>&1 || fail "no checkpoints after scancel"
echo "job 2 (scancel): every process gone and the summary written $took s after scancel"
"$src/launch/tteps" --mode sync --workers 2 --servers 1 --out_dir "$d/run3" -- \
  --resume "$d/run2/checkpoints" --epochs 1000 --max_steps 30 --timeout_s 60 >"$d/resume.log" 2>&1 ||
  fail "the resume failed: $(tail -5 "$d/resume.log")"
grep -q '"resumed_from"' "$d/run3/summary.json" || fail "not resumed: $(cat "$d/run3/summary.json")"
# A direct launch, for sites that forbid mpirun inside allocations: srun --multi-prog over
# Slurm's PMIx.
sbatch --wait --nodes 1 --ntasks 4 --output "$d/job4.out" --chdir "$d" \
  "$src/launch/slurm.sbatch" --launcher srun --workers 2 --servers 1 --out_dir "$d/run4" -- \
  --max_steps 20 --timeout_s 60 >"$d/sbatch4.log" 2>&1 || fail "sbatch --launcher srun: the job failed"
grep -q '"status":"done"' "$d/run4/summary.json" || fail "srun summary: $(cat "$d/run4/summary.json")"
grep -q '^+ srun --mpi=pmix' "$d/job4.out" || fail "not launched by srun"
[ -s "$d/run4/logs/worker-3.log" ] || fail "no log of rank 3: $(ls "$d/run4/logs")"
echo "job 4 (--launcher srun): done"
echo "PASS: sbatch ran a job to the end (mpirun and srun); scancel left a resumable checkpoint"
