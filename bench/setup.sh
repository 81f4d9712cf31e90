#!/usr/bin/env bash
# Installs what the benchmarks need beyond the main install (launch/install-deps.sh):
# matplotlib for the plots and PyTorch for the DDP baseline, both from Debian's archive.
set -euo pipefail
need=()
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
/usr/bin/python3 -c 'import torch' 2>/dev/null || need+=(python3-torch)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
echo "bench/setup.sh: installing ${need[*]}" >&2
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
