#!/usr/bin/env bash
# A job across three pretend hosts (launch/netns-hosts: network + UTS namespaces, 1 Gbit/s
# links), started without MPI: scheduler on tteps-h1, a server on tteps-h2, two workers on
# tteps-h3. Checks that every socket listens on its host's own address (never 0.0.0.0), that the
# job warns once that it is unauthenticated, that with --curve_dir it does not, and that both
# runs train the same model. Then the same through mpirun (launch/tteps --hostfile, processes
# started in the namespaces by launch/netns-rsh): a sync job across the three hosts must train
# exactly the model the same job trains on loopback, with every socket on its host's address.
# Needs root; skips (exit 77, reason printed) without it.
#   netns_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
hosts="$src/launch/netns-hosts"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to create network namespaces"; exit 77; fi
for t in ip tc unshare nsenter ss; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not found (iproute2, util-linux)"; exit 77; }
done
out=$(mktemp -d /tmp/tteps-netns-test.XXXXXX)
trap '"$hosts" down; rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; for f in "$out"/*/*.out; do echo "== $f"; tail -5 "$f"; done; exit 1; }
"$hosts" up 3 --rate 1gbit >"$out/up.log" 2>&1 || fail "netns-hosts up: $(cat "$out/up.log")"
[ "$(tail -1 "$out/up.log")" = /run/tteps-netns/hostfile ] || fail "up did not print the hostfile"
[ "$(grep -c "^tteps-h" /run/tteps-netns/hostfile)" -eq 3 ] || fail "hostfile: $(cat /run/tteps-netns/hostfile)"
[ "$("$hosts" run tteps-h2 hostname)" = tteps-h2 ] || fail "tteps-h2 has no host name of its own"

job() {  # job NAME [node flags...]
  local name=$1; shift
  local d="$out/$name" f=(--scheduler=tcp://10.77.0.1:7000 --timeout_s 60 "$@")
  mkdir -p "$d"
  "$hosts" run tteps-h1 "$bin/tteps-scheduler" --mode sync --num_servers 1 --num_workers 2 \
    --out_dir "$d/run" --logs "$d/run/logs" --max_steps 12 "${f[@]}" >"$d/scheduler.out" 2>&1 &
  local s=$!
  "$hosts" run tteps-h2 "$bin/tteps-server" --logs "$d/run/logs" "${f[@]}" >"$d/server.out" 2>&1 &
  for w in 1 2; do
    "$hosts" run tteps-h3 "$bin/tteps-worker" --logs "$d/run/logs" "${f[@]}" >"$d/worker$w.out" 2>&1 &
  done
  # While it trains: what listens in each namespace (only this job's processes run there).
  for _ in $(seq 1 300); do
    grep -qs '"type":"train"' "$d/run/metrics.jsonl" && break
    sleep 0.2
  done
  for h in 1 2 3; do "$hosts" run "tteps-h$h" ss -ltnH >>"$d/listening"; done
  wait "$s" || fail "$name: the scheduler failed"
  wait
}

job plain
"$bin/tteps-keygen" "$out/keys" >/dev/null || fail "keygen"
job curve --curve_dir "$out/keys"

for name in plain curve; do
  listening=$(awk '{print $4}' "$out/$name/listening" | sort | tr '\n' ' ')
  echo "$name listens on: $listening"
  case "$listening" in
    "10.77.0.1:7000 10.77.0.2:"[0-9]*" ") ;;
    *) fail "$name: expected the scheduler on 10.77.0.1:7000 and the server on 10.77.0.2 only" ;;
  esac
  grep -q '"final_eval":{"mape":' "$out/$name/run/summary.json" || fail "$name: no final eval"
done
grep -q "warning: the job spans 3 hosts without authentication" "$out/plain/scheduler.out" ||
  fail "no warning for an unauthenticated job across hosts"
[ "$(grep -c 'warning: the job spans' "$out/plain/scheduler.out")" -eq 1 ] || fail "warned twice"
grep -q "warning: the job spans" "$out/curve/scheduler.out" && fail "warned although CURVE is on"
grep -q '"curve":true' "$out/curve/run/summary.json" || fail "curve run without CURVE"
m1=$(grep -o '"final_eval":{[^}]*}' "$out/plain/run/summary.json")
m2=$(grep -o '"final_eval":{[^}]*}' "$out/curve/run/summary.json")
[ "$m1" = "$m2" ] || fail "the CURVE run evaluated differently: $m1 vs $m2"
echo "without MPI: $m1"

# mpirun across the hosts, against the same job on loopback.
export TTEPS_BIN=$bin
flags=(--mode sync --workers 4 --servers 2)
"$src/launch/tteps" "${flags[@]}" --hostfile /run/tteps-netns/hostfile --out_dir "$out/mpi" \
  -- --max_steps 12 --timeout_s 60 >"$out/mpi.out" 2>&1 || fail "mpirun across hosts: $(tail -5 "$out/mpi.out")"
"$src/launch/tteps" "${flags[@]}" --out_dir "$out/loop" -- --max_steps 12 --timeout_s 60 \
  >"$out/loop.out" 2>&1 || fail "the loopback job: $(tail -5 "$out/loop.out")"
m3=$(grep -o '"final_eval":{[^}]*}' "$out/mpi/summary.json")
m4=$(grep -o '"final_eval":{[^}]*}' "$out/loop/summary.json")
[ -n "$m3" ] && [ "$m3" = "$m4" ] || fail "across hosts the job trained another model: $m3 vs loopback $m4"
# Placement: the scheduler on the first host, the servers on two hosts, a worker on each host.
placed=$(grep -o 'registered [a-z]* [0-9]* (rank [0-9]*, host [a-z0-9-]*' "$out/mpi/logs/scheduler-0.log" |
  sed 's/registered \([a-z]*\) \([0-9]*\) .*host /\1\2@/' | sort | tr '\n' ' ')
[ "$placed" = "server0@tteps-h1 server1@tteps-h2 worker0@tteps-h1 worker1@tteps-h1 worker2@tteps-h2 worker3@tteps-h3 " ] ||
  fail "placement: $placed"
# Key ranges by link load: server 0's host has 2 workers elsewhere, server 1's 3, so they share
# the 315,382 keys outside the embedding tables 3 : 2 (loopback: evenly).
for r in "mpi:[0, 584762) [584762, 710923)" "loop:[0, 553222) [553222, 710923)"; do
  got=$(grep -o 'holds \[[0-9, ]*)' "$out/${r%%:*}/logs/scheduler-0.log" | sed 's/holds //' | tr '\n' ' ')
  [ "$got" = "${r#*:} " ] || fail "${r%%:*} key ranges: $got, expected ${r#*:}"
done
listen=$(grep -ho 'listening: tcp://[0-9.]*' "$out/mpi/logs/"*.log | sort | tr '\n' ' ')
case "$listen" in
  # Every worker listens too, for its ring neighbour (ring mode over TCP).
  "listening: tcp://10.77.0.1 listening: tcp://10.77.0.1 listening: tcp://10.77.0.1 listening: tcp://10.77.0.1 listening: tcp://10.77.0.2 listening: tcp://10.77.0.2 listening: tcp://10.77.0.3 ") ;;
  *) fail "mpirun job: expected the scheduler, a server and 2 workers on 10.77.0.1, a server and a worker on 10.77.0.2, a worker on 10.77.0.3: $listen" ;;
esac
echo "PASS: across 3 hosts with mpirun as on loopback: $m3"
