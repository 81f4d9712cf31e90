#!/usr/bin/env bash
# launch/slurm.sbatch outside Slurm, with the variables sbatch would set: the placement it asks
# launch/tteps for over three nodes (a dry run; also from a compact node list where scontrol
# fails), and a real sync job on this host.
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
SLURM_JOB_NODELIST=localhost SLURM_NTASKS=4 SLURM_JOB_ID=test "$src/launch/slurm.sbatch" \
  --out_dir "$out/run" -- --max_steps 5 --timeout_s 60 >"$out/job.log" 2>&1 ||
  fail "the job failed: $(tail -5 "$out/job.log")"
grep -q '"steps":5' "$out/run/summary.json" || fail "summary: $(cat "$out/run/summary.json")"
grep -q '"workers":2,"slices":2,"servers":1' "$out/run/summary.json" || fail "not 2 workers (2 slices) and 1 server"
echo "PASS: $hosts"
