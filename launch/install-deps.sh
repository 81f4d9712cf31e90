#!/usr/bin/env bash
# Installs tteps' build and run dependencies from Debian 12 packages.
# Idempotent: when every package is already present it does nothing (no apt-get update).
# Works as root or as a normal user with sudo.
#   launch/install-deps.sh [--container]   --container: also what launch/container needs to
#                                          build and run images (mmdebstrap, podman, runc,
#                                          squashfs-tools)
set -euo pipefail

PACKAGES=(
  build-essential cmake
  libtorch-dev
  libopenblas0-openmp  # LibTorch links libblas.so.3; the reference BLAS is ~10x slower
  libzmq3-dev cppzmq-dev
  libcereal-dev
  libopenmpi-dev openmpi-bin
  openssh-client  # mpirun starts the processes of a job across hosts over ssh
  libgflags-dev libgoogle-glog-dev
  libgtest-dev
  libsimdjson-dev
  libcpp-httplib-dev  # the scheduler's /metrics endpoint for Prometheus (--metrics_port)
  libtcmalloc-minimal4  # the programs' allocator (cmake/Dependencies.cmake)
  clang libclang-rt-14-dev  # the fuzz targets (libFuzzer, AddressSanitizer, UBSan)
  slurmctld slurmd slurm-client munge  # the tests' single-node Slurm (tests/integration)
  protobuf-compiler python3-protobuf  # the tests' independent reader of TensorBoard's events
  python3-torch  # worker/tools/tteps_predict.py: a model.pt used from Python (and its test)
)
if [ "${1:-}" = --container ]; then
  PACKAGES+=(mmdebstrap podman runc squashfs-tools)
elif [ $# -gt 0 ]; then
  echo "install-deps: unknown argument '$1' (only --container)" >&2
  exit 2
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=(sudo DEBIAN_FRONTEND=noninteractive)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
