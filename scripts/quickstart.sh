#!/usr/bin/env bash
# The first of the README's two commands: set up, build, and show the
# flagship example checked, with the types dlc infers for it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
echo
echo "==> build/release/bin/dlc check --types examples/mlp.dl"
build/release/bin/dlc check --types examples/mlp.dl
