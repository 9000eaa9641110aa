#!/usr/bin/python3
"""Runs `dlc fmt --verify` on every .dl file of lang-tests/, examples/ and
stdlib/ that parses (syntax fail_* tests are skipped): formatting must keep
the AST (same dump), be idempotent and keep every comment.
Usage: verify_all.py PATH/TO/dlc SOURCE_ROOT"""
import pathlib
import subprocess
import sys


def main():
    dlc, root = sys.argv[1], pathlib.Path(sys.argv[2])
    files = sorted(
        str(path) for folder in ("lang-tests", "examples", "stdlib")
        for path in (root / folder).rglob("*.dl")
        if not (path.parent.name == "syntax" and path.name.startswith("fail_"))
    )
    run = subprocess.run([dlc, "fmt", "--verify", *files], capture_output=True,
                         text=True)
    sys.stdout.write(run.stdout + run.stderr)
    print(f"fmt --verify: {len(files)} files, exit status {run.returncode}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
