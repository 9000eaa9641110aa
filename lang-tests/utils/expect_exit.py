#!/usr/bin/python3
"""Runs a command and succeeds only if it exits with the given status.

Usage (in lit RUN lines): %expect_exit 1 %dlc check %s 2>&1 | FileCheck %s
The command's stdout and stderr pass through unchanged. `not` would accept
any failure, a crash included; dlc's contract is an exact status.
"""
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        print("usage: expect_exit.py STATUS COMMAND [ARGS...]", file=sys.stderr)
        return 2
    expected = int(sys.argv[1])
    status = subprocess.call(sys.argv[2:])
    if status != expected:
        how = (f"was killed by signal {-status}" if status < 0
               else f"exited with {status}")
        print(f"expect_exit: {sys.argv[2]} {how}, expected {expected}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
