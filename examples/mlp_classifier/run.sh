#!/bin/sh
# Trains the MLP and writes the loss curve to loss.svg (in the current
# folder). DLC overrides the compiler (default: the release build).
set -e
here=$(dirname "$0")
dlc=${DLC:-$here/../../build/release/bin/dlc}
"$dlc" run "$here/mlp.dl" | /usr/bin/python3 "$here/plot.py" "${1:-loss.svg}"
