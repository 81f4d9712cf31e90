#!/usr/bin/env bash
# Installs what the benchmarks need beyond the main install (launch/install-deps.sh):
# matplotlib for the plots and PyTorch for the DDP baseline, both from Debian's archive.
# TTEPS_PYTHON names another interpreter that has them (a GPU machine's CUDA PyTorch).
set -euo pipefail
python=${TTEPS_PYTHON:-/usr/bin/python3}
need=()
"$python" -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
"$python" -c 'import torch' 2>/dev/null || need+=(python3-torch)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$python" != /usr/bin/python3 ]; then
  echo "bench/setup.sh: $python cannot import ${need[*]} (TTEPS_PYTHON names it)" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
echo "bench/setup.sh: installing ${need[*]}" >&2
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
