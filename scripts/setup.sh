#!/usr/bin/env bash
# Installs what Delta needs on Debian 12 (only what is missing), then
# configures and builds the release preset. Safe to run again at any time.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build
  llvm-19-dev llvm-19-tools clang-19 clang-format-19
  libclang-rt-19-dev libfuzzer-19-dev
  re2c bison doctest-dev libcli11-dev
  libedit-dev libdlpack-dev
  nlohmann-json3-dev python3-numpy valgrind
  python3
  # MPI for sharded dims (docs/distributed.md); MPICH works too
  # (-DDELTA_MPI_IMPL=mpich).
  libopenmpi-dev openmpi-bin
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
       grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing missing packages: ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "error: run as root (or install sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "==> apt-get update"
  "${sudo[@]}" apt-get update -q
  echo "==> apt-get install ${missing[*]}"
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "==> all ${#packages[@]} packages are installed"
fi

jobs=$(nproc 2>/dev/null || echo 2)
echo "==> cmake --preset release"
cmake --preset release
echo "==> cmake --build --preset release -j $jobs"
cmake --build --preset release -j "$jobs"
echo "==> built build/release/bin/dlc"
