#!/usr/bin/python3
"""Runs a Delta program with a sharded dim as one process (no MPI), then
under `mpirun -np P` for P = 1, 2 and 3, compiled (the JIT) and
interpreted, and fails unless every run prints what the one process
printed, numbers within f32 reassociation (docs/distributed.md), and exits
with its status; once more with process 2 of 3 printing
(DELTA_SHARD_ROOT), so that every process is seen to hold the same
replicated values. Then passes the one-process output through for
FileCheck.

Usage: mpi_compare.py MPIRUN DLC [--build] [--compiled-only] [--rtol=R]
                      [dlc run options…] FILE [ARGS…]

--build also builds an executable with `dlc build` and runs it under mpirun;
--compiled-only skips the interpreter (for long programs).
Every run has a timeout: a hang is a failure, not a stuck suite.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_both import close, first_error  # noqa: E402

TIMEOUT = 60


def run(command, env=None):
    """Runs command; a launcher that crashes or does not exit after its
    processes did is retried once (OpenMPI 4.1's mpirun does either, rarely,
    after an MPI_Abort on a loaded machine), and a second time fails."""
    for attempt in (1, 2):
        try:
            # mpirun forwards standard input to process 0: give it none.
            result = subprocess.run(command, capture_output=True, text=True,
                                    timeout=TIMEOUT, env=env,
                                    stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            if attempt == 2:
                sys.exit(f"mpi_compare: timed out after {TIMEOUT} s: "
                         f"{' '.join(command)}")
            print(f"mpi_compare: retrying after a {TIMEOUT} s timeout: "
                  f"{' '.join(command)}", file=sys.stderr)
            continue
        if result.returncode < 0 and attempt == 1:
            print(f"mpi_compare: retrying after signal {-result.returncode}: "
                  f"{' '.join(command)}", file=sys.stderr)
            continue
        return result.returncode, result.stdout, result.stderr


def main():
    mpirun, dlc, arguments = sys.argv[1], sys.argv[2], sys.argv[3:]
    build = "--build" in arguments
    compiled_only = "--compiled-only" in arguments
    arguments = [a for a in arguments
                 if a not in ("--build", "--compiled-only")]
    rtol = 1e-5
    options = []
    while arguments and arguments[0].startswith("-"):
        option = arguments.pop(0)
        if option.startswith("--rtol="):
            rtol = float(option.split("=", 1)[1])
        else:
            options.append(option)
    source, program_args = arguments[0], arguments[1:]
    # OpenMPI refuses root without these, and 3 processes on 2 cores
    # without --oversubscribe; both are harmless elsewhere.
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    os.environ.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    # One thread per process: the runs compare processes, not threads.
    os.environ["DELTA_NUM_THREADS"] = "1"

    reference = run([dlc, "run", *options, source, *program_args])
    runs = {}
    for processes in (1, 2, 3):
        launch = [mpirun, "-np", str(processes)]
        runs[f"-np {processes}"] = run(
            [*launch, dlc, "run", *options, source, *program_args])
        if not compiled_only:
            runs[f"-np {processes} --interp"] = run(
                [*launch, dlc, "run", "--interp", *options, source,
                 *program_args])
    # The last process prints: replicated values are the same everywhere.
    runs["-np 3, printed by process 2"] = run(
        [mpirun, "-np", "3", dlc, "run", *options, source, *program_args],
        env={**os.environ, "DELTA_SHARD_ROOT": "2"})
    if build:
        with tempfile.TemporaryDirectory() as folder:
            executable = os.path.join(folder, "program")
            status, _, stderr = run([dlc, "build", *options, source, "-o",
                                     executable])
            if status != 0:
                sys.exit(f"mpi_compare: dlc build failed:\n{stderr}")
            for processes in (2, 3):
                runs[f"-np {processes} executable"] = run(
                    [mpirun, "-np", str(processes), executable, *program_args])

    failed = False
    for name, (status, stdout, stderr) in runs.items():
        problems = []
        if status != reference[0]:
            problems.append(f"exit status {status}, one process {reference[0]}")
        if not close(stdout, reference[1], rtol, 1e-6):
            problems.append("output differs")
        if first_error(stderr) != first_error(reference[2]):
            problems.append("error differs")
        if problems:
            failed = True
            print(f"mpi_compare: {name}: {'; '.join(problems)}\n"
                  f"--- one process:\n{reference[1]}{reference[2]}"
                  f"--- {name}:\n{stdout}{stderr}", file=sys.stderr)
    if failed:
        sys.exit(1)
    sys.stdout.write(reference[1])
    sys.stdout.flush()
    sys.stderr.write(reference[2])
    sys.exit(reference[0])


if __name__ == "__main__":
    main()
