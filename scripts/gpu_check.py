#!/usr/bin/python3
"""Runs every program of the repository on the GPU and on the CPU and
compares them (docs/gpu.md, "Testing on a GPU").

For each `.dl` file with a `fn main` under the roots (lang-tests/, examples/
and bench/cases/ by default), runs `dlc run [OPTIONS] FILE` and `dlc run
--target=cuda [OPTIONS] FILE` (with --gpu-min-work=0 for lang-tests, so
that their small arrays run on the GPU too), where OPTIONS are those of the test's own
`%run_both` or `%dlc run` RUN line, and fails unless both exit with the same
status, print the same first error line, and print the same standard output
up to the float tolerance the test states (a `// GPU: --rtol=R --atol=A`
line, else its `%run_both --rtol=R --atol=A`), or, where it states none,
DEFAULT_RTOL and DEFAULT_ATOL: a GPU sums in another order than a CPU's
loop, and its libdevice math may differ from the host's in the last bit.
A sharded program (`@shard dim`) runs as one process, and where `mpirun`
is on the PATH its GPU runs go through lang-tests/utils/mpi_compare.py
(1, 2 and 3 processes, which must agree) before the comparison with the
CPU. Programs that do not compile for the CPU (expected compile errors),
and those whose `// UNSUPPORTED:` line names a lit feature this machine
has (`overcommit`), are skipped and counted by reason. Runs the programs in
parallel.

Without a CUDA device, prints one SKIPPED line and exits 0.

Usage: gpu_check.py --dlc PATH [--jobs N] [--summary FILE] [ROOT...]
"""
import argparse
import collections
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys

UTILS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                     "lang-tests", "utils")
sys.path.insert(0, UTILS)
import run_both  # noqa: E402  (its output comparison with tolerances)

DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-6
TIMEOUT = 120


def has_cuda_device():
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        return (driver.cuInit(0) == 0
                and driver.cuDeviceGetCount(ctypes.byref(count)) == 0
                and count.value > 0)
    except OSError:
        return False


def run_options(text):
    """The `dlc run` options and tolerances of the program's first RUN line
    that runs it, e.g. `%run_both --rtol=1e-5 -O3 %s`, and the tolerances of
    its `// GPU:` line, which come first."""
    tolerance = {}
    gpu = re.search(r"^//\s*GPU:(.*)$", text, re.M)
    if gpu:
        for word in gpu.group(1).split():
            key, _, value = word.partition("=")
            tolerance[key] = float(value)
    for line in text.splitlines():
        match = re.search(r"RUN:.*?%(?:run_both|dlc run)\s+(.*?)%s", line)
        if not match:
            continue
        options = []
        for word in shlex.split(match.group(1)):
            key = word.split("=")[0]
            if key in ("--rtol", "--atol"):
                tolerance.setdefault(key, float(word.split("=", 1)[1]))
            elif key not in ("--interp", "--target", "--gpu-min-work"):
                options.append(word)
        return options, tolerance
    return [], tolerance


def programs(roots):
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs
                             if d not in ("Inputs", "utils", "Output"))
            for name in sorted(files):
                if not name.endswith(".dl"):
                    continue
                path = os.path.abspath(os.path.join(folder, name))
                with open(path, encoding="utf-8") as file:
                    text = file.read()
                if re.search(r"^\s*fn\s+main\s*\(", text, re.M):
                    yield path, text


def run(command, cwd):
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                cwd=cwd, timeout=TIMEOUT)
        return result.returncode, result.stdout, result.stderr
    except subprocess.TimeoutExpired:
        return "timeout", "", f"timed out after {TIMEOUT} s"


def overcommits():
    """Whether the kernel grants any allocation (vm.overcommit_memory = 1)."""
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def check(dlc, path, text):
    """('pass' | 'skip' | 'fail', message)."""
    options, tolerance = run_options(text)
    folder = os.path.dirname(path)
    # What lit would not run here either (lang-tests/lit.cfg.py's features).
    unsupported = re.search(r"^//\s*UNSUPPORTED:(.*)$", text, re.M)
    if unsupported and "overcommit" in unsupported.group(1) and overcommits():
        return "skip", "unsupported here (overcommit)"
    # Compile errors are the same whatever the target.
    if run([dlc, "build", "--emit=ir", path, "-o", os.devnull], folder)[0]:
        return "skip", "compile errors on the CPU too"
    cpu = run([dlc, "run", *options, path], folder)
    # Language tests are small: --gpu-min-work=0 puts every op that can run
    # on the GPU there, so that each kernel kind meets each feature.
    # Examples and benchmarks run as users run them.
    gpu_options = ["--target=cuda"]
    if os.sep + "lang-tests" + os.sep in path:
        gpu_options.append("--gpu-min-work=0")
    gpu_run = [dlc, "run", *gpu_options, *options, path]
    mpirun = shutil.which("mpirun")
    if mpirun and re.search(r"^\s*@shard\s+dim", text, re.M):
        # Passes the one-process output through when every count agrees.
        gpu_run = [sys.executable, os.path.join(UTILS, "mpi_compare.py"),
                   mpirun, dlc, "--compiled-only", *gpu_run[2:]]
    gpu = run(gpu_run, folder)
    rtol = tolerance.get("--rtol", DEFAULT_RTOL)
    atol = tolerance.get("--atol", DEFAULT_ATOL)
    same = (cpu[0] == gpu[0]
            and run_both.first_error(cpu[2]) == run_both.first_error(gpu[2])
            and run_both.close(cpu[1], gpu[1], rtol, atol))
    if same:
        return "pass", ""
    def clip(s):
        return s if len(s) < 3000 else s[:1500] + "\n[...]\n" + s[-1500:]
    return "fail", (f"--- cpu (exit {cpu[0]})\n{clip(cpu[1])}{clip(cpu[2])}"
                    f"--- gpu (exit {gpu[0]})\n{clip(gpu[1])}{clip(gpu[2])}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dlc", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--summary", help="also append the summary here")
    parser.add_argument("roots", nargs="*")
    args = parser.parse_args()
    dlc = os.path.abspath(args.dlc)
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = args.roots or [os.path.join(source, folder) for folder in
                           ("lang-tests", "examples",
                            os.path.join("bench", "cases"))]
    if not has_cuda_device():
        print("gpu_check: SKIPPED: no CUDA device (libcuda.so.1 with a GPU)")
        return 0
    counts = {"pass": 0, "fail": 0, "skip": 0}
    skip_reasons = collections.Counter()
    failures = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        jobs = {pool.submit(check, dlc, path, text): path
                for path, text in programs(roots)}
        for job in concurrent.futures.as_completed(jobs):
            path = os.path.relpath(jobs[job], source)
            outcome, message = job.result()
            counts[outcome] += 1
            if outcome == "skip":
                skip_reasons[message] += 1
            if outcome == "fail":
                failures.append(path)
                print(f"FAIL: {path}\n{message}", flush=True)
    reasons = ", ".join(f"{count} {reason}"
                        for reason, count in sorted(skip_reasons.items()))
    line = (f"gpu_check: {counts['pass']} passed, {counts['fail']} failed, "
            f"{counts['skip']} skipped ({reasons or 'none'})")
    print(line)
    if args.summary:
        with open(args.summary, "a", encoding="utf-8") as file:
            file.write(line + "\n")
            for path in sorted(failures):
                file.write(f"  FAIL {path}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
