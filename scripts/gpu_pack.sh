#!/usr/bin/env bash
# Packs what the GPU machine lacks (docs/gpu.md, "Testing on a GPU"): dlc
# and the shared libraries it needs (LLVM 19 among them), the runtime
# archive, FileCheck and not, and lit, into .gpu/delta.tar.xz (about 30 MB).
# scripts/gpu_suite.sh unpacks it there. Usage: gpu_pack.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/delta/bin" "$stage/delta/lib" "$stage/delta/llvm-tools"
cp "$build/bin/dlc" "$stage/delta/bin/"
cp "$build/lib/libdelta_runtime.a" "$stage/delta/lib/"
# Every shared library dlc needs that is not part of glibc or libstdc++.
ldd "$build/bin/dlc" | awk '/=> \//{print $3}' |
  grep -Ev '/lib(c|m|pthread|dl|rt|stdc\+\+|gcc_s)\.so' |
  while read -r library; do cp -L "$library" "$stage/delta/lib/"; done
for tool in FileCheck not llvm-readelf llvm-nm; do
  cp -L /usr/lib/llvm-19/bin/$tool "$stage/delta/llvm-tools/"
done
cp -r /usr/lib/llvm-19/build/utils/lit "$stage/delta/lit"
rm -rf "$stage/delta/lit/tests" "$stage/delta/lit/examples"
mkdir -p .gpu
echo "==> packing $(du -sh "$stage/delta" | cut -f1) into .gpu/delta.tar.xz"
tar -C "$stage" -cf - delta | xz -T2 -6 >.gpu/delta.tar.xz
ls -la .gpu/delta.tar.xz
