#!/usr/bin/python3
"""Runs a command under mpirun on this machine, with a timeout: a hang is a
failure, not a stuck suite. Passes the output and the exit status through.

Usage: mpi_run.py MPIRUN -np P COMMAND [ARGS…]
"""
import os
import subprocess
import sys

TIMEOUT = 60


def main():
    mpirun, arguments = sys.argv[1], sys.argv[2:]
    # As in mpi_compare.py: root, and more processes than cores.
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    os.environ.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    os.environ["DELTA_NUM_THREADS"] = "1"
    try:
        # mpirun forwards standard input to process 0: give it none.
        result = subprocess.run([mpirun, *arguments], timeout=TIMEOUT,
                                stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        sys.exit(f"mpi_run: timed out after {TIMEOUT} s: "
                 f"{' '.join(arguments)}")
    sys.exit(result.returncode if result.returncode >= 0 else 1)


if __name__ == "__main__":
    main()
