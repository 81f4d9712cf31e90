#!/usr/bin/env bash
# launch/slurm.sbatch outside Slurm, with the variables sbatch would set: the placement it asks
# launch/tteps for over three nodes (a dry run; also from a compact node list where scontrol
# fails), the allocation's room (--launcher srun refuses a job larger than it before anything
# starts; mpirun runs it, sharing the CPUs), a launcher that fails named as itself (srun), the
# launcher's messages within 100 columns, and a real sync job on this host, then its requeued
# run, resumed from its checkpoints.
#   slurm_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
out=$(mktemp -d /tmp/tteps-slurm-test.XXXXXX)
trap 'rm -rf "$out"' EXIT
export TTEPS_BIN=$bin TMPDIR=$out
fail() { echo "FAIL: $*"; exit 1; }
line=$(SLURM_JOB_NODELIST=n1,n2,n3 SLURM_NTASKS=8 "$src/launch/slurm.sbatch" --dry_run 2>&1 |
  grep '^+ mpirun') || fail "no mpirun line"
hosts=$(echo "$line" | grep -o -- '-host [a-z0-9]* [^ ]*/tteps-[a-z]*' | awk '{print $2 "/" $3}' |
  sed 's|/.*/tteps-|:|' | tr '\n' ' ')
# 8 tasks: the scheduler, a server per node, 4 workers in blocks.
[ "$hosts" = "n1:scheduler n1:server n2:server n3:server n1:worker n1:worker n2:worker n3:worker " ] ||
  fail "placement: $hosts"
# With --replicas the replicas of a range (servers j and j + servers/replicas) are on different
# hosts, so that a lost node loses no range: 4 servers, 2 replicas, 2 nodes.
servers=$(SLURM_JOB_NODELIST=n1,n2 SLURM_NTASKS=9 "$src/launch/slurm.sbatch" --servers 4 \
  --workers 4 --dry_run -- --replicas 2 2>&1 | grep '^+ mpirun' |
  grep -o -- '-host [a-z0-9]* [^ ]*/tteps-server' | awk '{print $2}' | tr '\n' ' ')
[ "$servers" = "n1 n2 n2 n1 " ] || fail "replicas' placement: $servers"
# On 4 nodes the 4 servers still go one per node (each range's two replicas apart).
servers=$(SLURM_JOB_NODELIST=n1,n2,n3,n4 SLURM_NTASKS=9 "$src/launch/slurm.sbatch" --servers 4 \
  --workers 4 --dry_run -- --replicas 2 2>&1 | grep '^+ mpirun' |
  grep -o -- '-host [a-z0-9]* [^ ]*/tteps-server' | awk '{print $2}' | tr '\n' ' ')
[ "$servers" = "n1 n2 n3 n4 " ] || fail "replicas' placement on 4 nodes: $servers"
# Slurm's client without a slurm.conf (scontrol fails, prints nothing): the compact list is
# expanded by slurm.sbatch itself.
mkdir -p "$out/fake-bin"
printf '#!/bin/sh\necho "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error" >&2\nexit 1\n' \
  >"$out/fake-bin/scontrol"
chmod +x "$out/fake-bin/scontrol"
line=$(PATH="$out/fake-bin:$PATH" SLURM_JOB_NODELIST='n[1-2],n3' SLURM_NTASKS=8 \
  "$src/launch/slurm.sbatch" --dry_run 2>&1 | grep '^+ mpirun') ||
  fail "no mpirun line where scontrol fails"
again=$(echo "$line" | grep -o -- '-host [a-z0-9]* [^ ]*/tteps-[a-z]*' | awk '{print $2 "/" $3}' |
  sed 's|/.*/tteps-|:|' | tr '\n' ' ')
[ "$again" = "$hosts" ] || fail "placement where scontrol fails: $again"

# An allocation of 2 tasks (2 CPUs) for 1 scheduler, 1 server and 2 workers. srun would refuse
# the step only when the job starts: the launcher refuses it at once, saying what to ask for.
# A fake srun that would start it: the launcher must not get that far.
printf '#!/bin/sh\necho started >"%s/srun-ran"\n' "$out" >"$out/fake-bin/srun"
chmod +x "$out/fake-bin/srun"
alloc=(SLURM_JOB_ID=7 SLURM_JOB_NODELIST=localhost SLURM_NTASKS=2 SLURM_JOB_CPUS_PER_NODE=2)
start=$(date +%s.%N)
env PATH="$out/fake-bin:$PATH" "${alloc[@]}" "$src/launch/slurm.sbatch" --launcher srun \
  --workers 2 --servers 1 --out_dir "$out/small" -- --max_steps 5 >"$out/small.log" 2>&1
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
[ "$rc" -eq 2 ] || fail "srun, 4 tasks in 2: exit $rc, not 2: $(cat "$out/small.log")"
[ ! -e "$out/srun-ran" ] || fail "srun ran although the allocation is too small"
# The message, its lines joined.
want='needs 4 tasks (1 scheduler, 1 server, 2 workers), but this Slurm allocation has room for 2'
want+=' (2 CPUs, SLURM_NTASKS=2): submit it with sbatch (or salloc) --ntasks 4, or with'
want+=' --overcommit'
tr '\n' ' ' <"$out/small.log" | sed 's/  */ /g' | grep -qF "$want" ||
  fail "srun, 4 tasks in 2: $(cat "$out/small.log")"
echo "srun, 4 tasks in an allocation of 2: exit 2 after $took s"
# Ring mode has no servers: 1 scheduler and 3 workers are 4 tasks too.
env PATH="$out/fake-bin:$PATH" "${alloc[@]}" "$src/launch/slurm.sbatch" --launcher srun \
  --mode ring --workers 3 --dry_run >"$out/ring.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "srun, ring, 4 tasks in 2: exit $rc, not 2: $(cat "$out/ring.log")"
grep -q 'needs 4 tasks (1 scheduler, 3 workers)' "$out/ring.log" ||
  fail "ring: $(cat "$out/ring.log")"
# --overcommit (sbatch sets SLURM_OVERCOMMIT): srun may start them; a dry run shows it would.
env PATH="$out/fake-bin:$PATH" "${alloc[@]}" SLURM_OVERCOMMIT=1 "$src/launch/slurm.sbatch" \
  --launcher srun --workers 2 --servers 1 --dry_run >"$out/over.log" 2>&1 ||
  fail "srun with --overcommit refused: $(cat "$out/over.log")"
# mpirun: the job runs, its processes sharing the CPUs, and one note says so.
env "${alloc[@]}" "$src/launch/slurm.sbatch" --workers 2 --servers 1 --dry_run \
  >"$out/mpi.log" 2>&1 ||
  fail "mpirun, 4 processes in 2 tasks: $(cat "$out/mpi.log")"
grep -q '^tteps: note: the job runs 4 processes' "$out/mpi.log" ||
  fail "no note: $(cat "$out/mpi.log")"
grep -q '^+ mpirun .*--oversubscribe' "$out/mpi.log" || fail "mpirun without --oversubscribe"

# srun failing before any process starts: the launcher names srun, not mpirun, and srun's error.
printf '#!/bin/sh\necho "srun: error: Unable to create step for job 7: %s" >&2\nexit 1\n' \
  "Invalid generic resource" >"$out/fake-bin/srun"
env PATH="$out/fake-bin:$PATH" SLURM_JOB_ID=7 SLURM_NTASKS=4 "$src/launch/tteps" --launcher srun \
  --workers 2 --servers 1 --out_dir "$out/fails" -- --max_steps 5 >"$out/fails.log" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "a failing srun: exit $rc, not 1: $(cat "$out/fails.log")"
last='tteps: srun failed (exit status 1) before any process of the job wrote a log'
tail -1 "$out/fails.log" | grep -qxF "$last" ||
  fail "a failing srun, last line: $(tail -2 "$out/fails.log")"
grep -q "^tteps: srun could not start the job's processes: Unable to create step" \
  "$out/fails.log" ||
  fail "srun's reason not named: $(cat "$out/fails.log")"

# Containers under Slurm (docs/container.md): pyxis mounts the image on srun's step; apptainer
# runs each program in the image, under srun or mpirun; podman only under mpirun.
env PATH="$out/fake-bin:$PATH" SLURM_JOB_ID=7 SLURM_NTASKS=4 "$src/launch/tteps" --launcher srun \
  --workers 2 --servers 1 --container pyxis:/images/tteps.sqsh --out_dir "$out/pyxis" \
  --dry_run -- --max_steps 5 >"$out/pyxis.log" 2>&1 || fail "pyxis: $(cat "$out/pyxis.log")"
pyxis="+ srun --mpi=pmix --ntasks 4 --container-image=/images/tteps.sqsh"
pyxis+=" --container-mounts=$out/pyxis:$out/pyxis "
grep -qF "$pyxis" "$out/pyxis.log" || fail "pyxis: $(head -1 "$out/pyxis.log")"
grep -q '^+   3 /opt/tteps/build/bin/tteps-worker ' "$out/pyxis.log" ||
  fail "pyxis: not the image's programs: $(cat "$out/pyxis.log")"
env PATH="$out/fake-bin:$PATH" SLURM_JOB_ID=7 SLURM_NTASKS=4 "$src/launch/tteps" --launcher srun \
  --workers 2 --servers 1 --container apptainer:/images/tteps.sif --out_dir "$out/app" \
  --dry_run -- --max_steps 5 >"$out/app.log" 2>&1 || fail "apptainer: $(cat "$out/app.log")"
grep -q "^+   2 apptainer exec --bind $out/app /images/tteps.sif /opt/tteps/build/bin/tteps-worker " \
  "$out/app.log" || fail "apptainer under srun: $(cat "$out/app.log")"
env PATH="$out/fake-bin:$PATH" SLURM_JOB_ID=7 SLURM_NTASKS=4 "$src/launch/tteps" --launcher srun \
  --container tteps:latest --dry_run >"$out/podman.log" 2>&1 && fail "podman under srun taken"
grep -q "under Slurm use apptainer:FILE.sif or pyxis:FILE.sqsh" "$out/podman.log" ||
  fail "podman under srun: $(cat "$out/podman.log")"
env PATH="$out/fake-bin:$PATH" "$src/launch/tteps" --container pyxis:/images/tteps.sqsh --dry_run \
  >"$out/pyxis-mpirun.log" 2>&1 && fail "pyxis under mpirun taken"
grep -q "pyxis is srun's --container-image" "$out/pyxis-mpirun.log" ||
  fail "pyxis under mpirun: $(cat "$out/pyxis-mpirun.log")"
echo "containers under Slurm: pyxis on srun, apptainer exec per program, podman refused"

# The launcher's messages stay within 100 columns, a long path broken onto a line of its own
# (the mpirun line is the command, whole): an out_dir of 70 characters, in the message that
# names it twice.
long=$out/runs/main-20261129-045302
long=$long$(printf 'a%.0s' $(seq $((70 - ${#long}))))
mkdir -p "$long" && echo '{"status":"done"}' >"$long/summary.json"
"$src/launch/tteps" --mode local --out_dir "$long" -- --max_steps 1 >"$out/long.log" 2>&1
[ $? -eq 2 ] || fail "a finished out_dir not refused: $(cat "$out/long.log")"
tr '\n' ' ' <"$out/long.log" | sed 's/  */ /g' |
  grep -q "the output directory $long holds a finished job ($long/summary.json); its results" ||
  fail "the refusal: $(cat "$out/long.log")"
cat "$out"/{small,mpi,fails,long}.log | grep -v '^+ ' |
  awk 'length($0) > 100 { bad = 1; print "over 100 columns: " $0 } END { exit bad }' ||
  fail "console lines over 100 columns"

# A real job on this host, then the same job's requeued run (SLURM_RESTART_COUNT=1, as Slurm
# sets it): the first run's files go to OUT_DIR/requeued/0 (the rest of OUT_DIR stays), and the
# run resumes from its checkpoints, in OUT_DIR. (The first run is marked interrupted here, as a
# stopped one leaves it, and the second runs 2 steps more, so that both end within seconds.)
sim=(SLURM_JOB_NODELIST=localhost SLURM_NTASKS=4 SLURM_JOB_ID=test)
env "${sim[@]}" "$src/launch/slurm.sbatch" --out_dir "$out/run" -- --max_steps 4 \
  --checkpoint_every 2 --timeout_s 60 >"$out/job.log" 2>&1 ||
  fail "the job failed: $(tail -5 "$out/job.log")"
grep -q '"steps":4' "$out/run/summary.json" || fail "summary: $(cat "$out/run/summary.json")"
grep -q '"workers":2,"slices":2,"servers":1' "$out/run/summary.json" || fail "not 2 workers (2 slices) and 1 server"
grep -q '^slurm.sbatch: 1 node (localhost), 2 workers, 1 server;' "$out/job.log" ||
  fail "the job's first line: $(head -1 "$out/job.log")"
sed -i 's/"status":"done"/"status":"interrupted"/' "$out/run/summary.json"
echo mine >"$out/run/notes.txt"
env "${sim[@]}" SLURM_RESTART_COUNT=1 "$src/launch/slurm.sbatch" --out_dir "$out/run" -- \
  --max_steps 6 --checkpoint_every 2 --timeout_s 60 >"$out/requeued.log" 2>&1 ||
  fail "the requeued run failed: $(tail -5 "$out/requeued.log")"
grep -q '"status":"done"' "$out/run/summary.json" || fail "requeued: $(cat "$out/run/summary.json")"
grep -q "\"resumed_from\":{\"checkpoint_dir\":\"$out/run/requeued/0/checkpoints\",\"version\":4}" \
  "$out/run/summary.json" || fail "not resumed from run 0: $(cat "$out/run/summary.json")"
[ -s "$out/run/model.pt" ] || fail "no model.pt in the out_dir"
[ -s "$out/run/requeued/0/model.pt" ] && [ -s "$out/run/requeued/0/logs/scheduler-0.log" ] ||
  fail "run 0's files not in requeued/0: $(ls -a "$out/run/requeued/0")"
[ -e "$out/run/notes.txt" ] && [ ! -e "$out/run/requeued/0/notes.txt" ] || fail "notes.txt moved"
# Requeued again once done: nothing to do.
env "${sim[@]}" SLURM_RESTART_COUNT=2 "$src/launch/slurm.sbatch" --out_dir "$out/run" -- \
  --max_steps 6 --checkpoint_every 2 --timeout_s 60 >"$out/again.log" 2>&1 ||
  fail "a requeued run of a finished job: $(cat "$out/again.log")"
grep -q 'is done already' "$out/again.log" && [ ! -e "$out/run/requeued/1" ] ||
  fail "a requeued run of a finished job: $(cat "$out/again.log")"
echo "PASS: $hosts"
