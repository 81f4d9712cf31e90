#!/usr/bin/env bash
# The release: VERSION is a semantic version; every program in BIN_DIR and launch/tteps print it
# with --version, with the commit they were built from; CHANGELOG.md has its section and
# CITATION.cff names it; LICENSE is there and the README states it.
#   version_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
version=$(head -n 1 "$src/VERSION")
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "VERSION '$version' is not MAJOR.MINOR.PATCH"
commit='([0-9a-f]{7,40}(-dirty)?|unknown)'
n=0
for p in "$bin"/*; do
  [ -x "$p" ] && [ -f "$p" ] || continue
  name=$(basename "$p")
  out=$("$p" --version 2>/dev/null) || fail "$name --version exited non-zero: $out"
  [[ "$out" =~ ^$name\ $version\ \(commit\ $commit\;\ wire\ protocol\ [0-9]+, ]] ||
    fail "$name --version printed '$out', not '$name $version (commit ...; wire protocol ...'"
  n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n programs in $bin"
out=$(TTEPS_BIN=$bin "$src/launch/tteps" --version) || fail "launch/tteps --version failed"
[[ "$(head -n 1 <<<"$out")" =~ ^launch/tteps\ $version\ \(commit\ $commit\)$ ]] ||
  fail "launch/tteps --version printed '$out'"
[[ "$(sed -n 2p <<<"$out")" =~ ^tteps-scheduler\ $version\ \(commit ]] ||
  fail "launch/tteps --version does not name its programs' version: '$out'"
grep -q "^## \[$version\]" "$src/CHANGELOG.md" || fail "CHANGELOG.md has no section [$version]"
grep -q "^version: \"\?$version\"\?$" "$src/CITATION.cff" || fail "CITATION.cff is not of $version"
grep -q "Apache License" "$src/LICENSE" || fail "LICENSE is not the Apache License"
grep -q "Apache License 2.0" "$src/README.md" || fail "the README does not state the licence"
echo "PASS: $n programs and launch/tteps print $version with their commit"
