#!/bin/sh
# The C ABI's cost per call (docs/embedding.md, "Cost of a call"): builds
# square.dl as a library and times main.c against it.
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dlc=${DLC:-$root/build/release/bin/dlc}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$dlc" build --lib -O3 "$here/square.dl" -o "$out/square"
cc -O2 -I"$out/square" -I"$root/bench" "$here/main.c" "$out/square/libsquare.a" \
  -lstdc++ -lm -lpthread -o "$out/bench"
"$out/bench"
