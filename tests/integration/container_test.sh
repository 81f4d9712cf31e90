#!/usr/bin/env bash
# launch/container: builds the image from Debian's archive (the run-time packages only), checks
# what it holds, and runs the main job (2 epochs) inside it: the job must end with the same model,
# bit for bit, and the same MAPE as the same job outside it. Checks the archives for Apptainer
# (docker-archive) and enroot (squashfs) are written. Then a sync job across three pretend hosts
# (launch/netns-hosts) with mpirun outside and every process inside the image (launch/tteps
# --container, the hybrid model) must train the model the same job trains without the image.
# Needs root and Debian's archive; skips (exit 77, reason printed) without root.
#   container_test.sh SOURCE_DIR
set -uo pipefail
src=$1
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (mmdebstrap and podman as root)"; exit 77; fi
for t in ip tc unshare nsenter; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not found (iproute2, util-linux)"; exit 77; }
done
dir=$src/build/container-test
runs=$src/out/container-test-$$
# The image and its archives are 2 GB: gone after the test.
hosts=$src/launch/netns-hosts
trap '"$hosts" down; "$src/launch/container" rmi --image tteps-test:latest --dir "$dir" \
  >/dev/null 2>&1; rm -rf "$runs" "$dir" "$dir.log"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

start=$SECONDS
"$src/launch/container" build --image tteps-test:latest --dir "$dir" >"$dir.log" 2>&1 ||
  fail "build: $(tail -20 "$dir.log")"
echo "image built in $((SECONDS - start)) s: $(cat "$dir/build.json")"
for f in tteps.docker.tar tteps.sqsh build.json; do
  [ -s "$dir/$f" ] || fail "$dir/$f not written"
done
# Not grep -q: it would end at the first match and tar, still listing, would die of SIGPIPE
# (under pipefail, a failure although the manifest is there).
tar -tf "$dir/tteps.docker.tar" | grep -x 'manifest.json' >/dev/null ||
  fail "no docker-archive manifest"
c=("$src/launch/container" run --image tteps-test:latest --dir "$dir" --)
# Run-time packages only: no compiler, no -dev package, no apt lists.
tools=$("${c[@]}" sh -c 'for t in g++ c++ cc gcc cmake make; do command -v $t; done')
[ -z "$tools" ] || fail "build tools in the image: $tools"
devs=$("${c[@]}" dpkg-query -W -f='${Package}\n' | grep -e '-dev$') && fail "-dev packages: $devs"
"${c[@]}" test -x /opt/tteps/build/bin/tteps-worker || fail "no programs in /opt/tteps/build/bin"

mkdir -p "$runs"
"$src/launch/main-job.sh" --out_dir "$runs/outside" --epochs 2 >"$runs/outside.log" 2>&1 ||
  fail "main job outside: $(tail -5 "$runs/outside.log")"
start=$SECONDS
"$src/launch/container" main-job --image tteps-test:latest --dir "$dir" \
  --out_dir "/opt/tteps/out/container-test-$$/inside" --epochs 2 >"$runs/inside.log" 2>&1 ||
  fail "main job inside: $(tail -5 "$runs/inside.log")"
echo "main job inside the image: $((SECONDS - start)) s"
mape() {
  python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["final_eval"]["mape"]))' "$1"
}
out_mape=$(mape "$runs/outside/summary.json") || fail "no MAPE outside"
in_mape=$(mape "$runs/inside/summary.json") || fail "no MAPE inside"
[ "$out_mape" = "$in_mape" ] || fail "MAPE outside $out_mape, inside $in_mape"
cmp -s "$runs/outside/model.pt" "$runs/inside/model.pt" || fail "the models differ"
# The console's last line is the result, as outside.
tail -1 "$runs/inside.log" | grep -q '^{"final_eval":' ||
  fail "inside: $(tail -2 "$runs/inside.log")"
echo "same model and MAPE ($in_mape) inside the image and outside"

# Across three pretend hosts: mpirun outside the image, every process inside it.
"$hosts" up 3 --rate 1gbit >"$runs/up.log" 2>&1 || fail "netns-hosts up: $(cat "$runs/up.log")"
flags=(--mode sync --workers 4 --servers 2 --hostfile /run/tteps-netns/hostfile)
train=(-- --max_steps 12 --timeout_s 60)
"$src/launch/tteps" "${flags[@]}" --out_dir "$runs/hosts" "${train[@]}" >"$runs/hosts.log" 2>&1 ||
  fail "across hosts: $(tail -5 "$runs/hosts.log")"
start=$SECONDS
# This host's build is not needed (TTEPS_BIN names none), and a relative out_dir is this
# directory's, as without the image.
(cd "$runs" && TTEPS_BIN="$runs/no-build" "$src/launch/tteps" "${flags[@]}" \
  --container tteps-test:latest --out_dir hosts-image "${train[@]}") \
  >"$runs/hosts-image.log" 2>&1 ||
  fail "across hosts in the image: $(tail -5 "$runs/hosts-image.log")"
echo "a job across 3 hosts, every process in the image: $((SECONDS - start)) s"
in_image='^+ mpirun .*launch/container run --image tteps-test:latest '
in_image+='.*/opt/tteps/build/bin/tteps-worker'
grep -q "$in_image" "$runs/hosts-image.log" ||
  fail "the ranks did not run in the image: $(grep '^+ mpirun' "$runs/hosts-image.log")"
cmp -s "$runs/hosts/model.pt" "$runs/hosts-image/model.pt" ||
  fail "across hosts the image's job trained another model"
echo "across 3 hosts: the same model in the image and outside"
