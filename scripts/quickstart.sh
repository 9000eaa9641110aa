#!/usr/bin/env bash
# The first of the README's two commands: set up, build, and run the
# flagship example (an MLP trained with grad), after printing its types.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
echo
echo "==> build/release/bin/dlc check --types examples/mlp.dl"
build/release/bin/dlc check --types examples/mlp.dl
echo
echo "==> build/release/bin/dlc run examples/mlp.dl"
build/release/bin/dlc run examples/mlp.dl
