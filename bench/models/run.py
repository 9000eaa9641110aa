#!/usr/bin/python3
"""Delta's model suite against JAX and PyTorch (eager and torch.compile):
builds each bench/models/*.dl with `dlc build -O3 --lib` at each size,
installs jax[cpu] and torch from PyPI into a virtual environment (once),
runs every implementation in its own process on 1 and 2 threads, in
alternating short bursts (Note [Paired bursts] in bench/README.md), checks
that their results agree, and prints one table of medians with the
Delta/JAX and Delta/PyTorch ratios (medians of the paired bursts'
ratios); compile (dlc) and first-call (JIT) times are separate columns.
See bench/README.md and docs/performance.md. Never run by the test
suite."""
import argparse
import datetime
import importlib.util
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import cases  # noqa: E402


def bench_run():
    """bench/run.py, for its helpers (a module of the same name as this)."""
    spec = importlib.util.spec_from_file_location(
        "bench_run", os.path.join(os.path.dirname(HERE), "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_helpers = bench_run()
cpu_name, fmt_time, log = _helpers.cpu_name, _helpers.fmt_time, _helpers.log

PACKAGES = ["jax[cpu]", "torch", "numpy"]
IMPLS = ["delta", "jax", "torch", "torch.compile"]
# Calls in one burst at least (Note [Paired bursts]).
BURST_REPS = 3


def ensure_venv(venv):
    """The virtual environment with JAX and a current PyTorch from PyPI."""
    python = os.path.join(venv, "bin", "python")
    check = [python, "-c", "import jax, torch, numpy"]
    if os.path.exists(python) and subprocess.run(
            check, capture_output=True).returncode == 0:
        return python
    log("creating %s and installing %s from PyPI" % (venv, " ".join(PACKAGES)))
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet"] + PACKAGES,
                   check=True)
    subprocess.run(check, check=True)
    return python


def build_library(dlc, case, sizes, out):
    """`dlc build -O3 --lib` of `case` at `sizes` into `out`; returns the
    seconds it took."""
    text = open(os.path.join(HERE, case.dl)).read()
    for key, value in sizes.items():
        text = text.replace("@%s@" % key, str(value))
    os.makedirs(out, exist_ok=True)
    source = os.path.join(out, case.dl)
    with open(source, "w") as f:
        f.write(text)
    start = time.perf_counter()
    result = subprocess.run([dlc, "build", "-O3", "--lib", source, "-o",
                             out], capture_output=True, text=True)
    if result.returncode != 0:
        log(result.stdout + result.stderr)
        raise SystemExit("dlc failed on %s %s" % (case.name, sizes))
    return time.perf_counter() - start


def build(args, case, label):
    """The Delta library of `case` at one size; returns (dir, seconds)."""
    out = os.path.join(args.build_dir, case.name, label.replace(" ", "_"))
    return out, build_library(args.dlc, case, case.sizes[label], out)


class Worker:
    """One implementation of one case at one size and thread count, in its
    own process (worker.py --serve), pinned to that many cores; the first
    call (compile or trace) has run once the constructor returns."""

    def __init__(self, args, python, impl, case, label, threads, lib_dir,
                 out_dir):
        env = dict(os.environ)
        env.pop("OPENBLAS_CORETYPE", None)
        for var in ("DELTA_NUM_THREADS", "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "BENCH_THREADS"):
            env[var] = str(threads)
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=%s" % (
            "true" if threads > 1 else "false")
        command = ["taskset", "-c", ",".join(str(c) for c in range(threads)),
                   python, os.path.join(HERE, "worker.py"), "--serve", impl,
                   case.name, label, out_dir, lib_dir]
        self.name = "%s %s %s" % (impl, case.name, label)
        self.timeout = args.timeout
        # stderr to a file: a chatty library must never fill a pipe that
        # nobody reads and stall the worker.
        self.errors = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.errors, text=True)
        self.first = self._answer()

    def burst(self, seconds, reps):
        """The median time of calls run for `seconds` (at least `reps`)."""
        if self.process is None:
            return None
        self.process.stdin.write("burst %g %d\n" % (seconds, reps))
        self.process.stdin.flush()
        return self._answer()

    def close(self):
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()
            self.process = None

    def _answer(self):
        """The worker's next JSON line; None (and the worker stopped) if it
        failed or took longer than --timeout."""
        ready, _, _ = select.select([self.process.stdout], [], [],
                                    self.timeout)
        line = self.process.stdout.readline() if ready else ""
        if line:
            return json.loads(line)
        self.process.kill()
        self.process.wait()
        self.errors.seek(0)
        log("%s: %s\n%s" % (self.name, "failed" if ready else "over %d s, "
                            "skipped" % self.timeout,
                            self.errors.read()[-2000:]))
        self.process = None
        return None


def measure_row(args, python, impls, case, label, threads, lib_dir,
                out_dir):
    """Note [Paired bursts]: every implementation's worker starts (and
    makes its first call) first; then --rounds rounds of one short burst
    each, in turn, the order reversed every other round. Returns
    {impl: [burst median or None per round]} and each one's first call."""
    workers = {}
    for impl in impls:
        if impl == "torch.compile" and not case.compile_torch:
            continue
        log("%s %s: starting %s on %d thread(s)" % (case.name, label, impl,
                                                     threads))
        worker = Worker(args, python, impl, case, label, threads, lib_dir,
                        out_dir)
        if worker.first is not None:
            workers[impl] = worker
    medians = {impl: [] for impl in workers}
    for round_index in range(args.rounds):
        order = list(workers)
        if round_index % 2 == 1:
            order.reverse()
        for impl in order:
            # A pause between bursts: threads that spin after a call (the
            # pools of Delta, XLA and OpenMP) stop before the next one.
            time.sleep(0.02)
            answer = workers[impl].burst(args.burst, BURST_REPS)
            medians[impl].append(answer and answer["median_s"])
    for worker in workers.values():
        worker.close()
    return medians, {impl: w.first["first_call_s"]
                     for impl, w in workers.items()}


def disagreement(out_dir, impl, case, count):
    """The largest max|a - delta| / max|delta| over the results (or the
    fraction of elements that differ: Case.count_mismatches)."""
    worst = 0.0
    for k in range(count):
        a = np.load(os.path.join(out_dir, "%s_%d.npy" % (impl, k)))
        d = np.load(os.path.join(out_dir, "delta_%d.npy" % k))
        if a.shape != d.shape:
            return float("inf")
        if case.count_mismatches:
            worst = max(worst, float(np.mean(a != d)))
            continue
        scale = max(float(np.max(np.abs(d))), 1e-30)
        worst = max(worst, float(np.max(np.abs(a - d))) / scale)
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dlc", default=os.path.join(
        ROOT, "build", "release", "bin", "dlc"))
    parser.add_argument("--build-dir", default=os.path.join(
        ROOT, "build", "bench-models"))
    parser.add_argument("--venv", default=os.path.join(
        ROOT, "build", "bench-venv"))
    parser.add_argument("--cases", default=",".join(c.name
                                                    for c in cases.CASES))
    parser.add_argument("--sizes", default="all",
                        help="all, or the first size of each case: first")
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=9,
                        help="bursts of each implementation, in turn; the "
                        "table shows the median of their medians and of "
                        "the rounds' ratios")
    parser.add_argument("--burst", type=float, default=0.2,
                        help="seconds of calls in one burst (at least %d "
                        "calls)" % BURST_REPS)
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds for one implementation at one size")
    args = parser.parse_args()
    python = ensure_venv(args.venv)
    threads = [int(t) for t in args.threads.split(",")]
    impls = args.impls.split(",")
    load_before = open("/proc/loadavg").read().split()[:3]
    rows = []
    for case in cases.CASES:
        if case.name not in args.cases.split(","):
            continue
        labels = list(case.sizes)
        if args.sizes == "first":
            labels = labels[:1]
        for label in labels:
            lib_dir, compile_s = build(args, case, label)
            out_dir = os.path.join(lib_dir, "results")
            shutil.rmtree(out_dir, ignore_errors=True)
            for t in threads:
                row = {"case": case.name, "size": label, "threads": t,
                       "dlc_s": compile_s}
                medians, firsts = measure_row(args, python, impls, case,
                                              label, t, lib_dir, out_dir)
                for impl, times in medians.items():
                    done = [x for x in times if x is not None]
                    if not done:
                        continue
                    row[impl] = statistics.median(done)
                    row[impl + " first"] = firsts[impl]
                    if impl == "delta" or "delta" not in medians:
                        continue
                    # The ratio of each round's pair, then their median.
                    pairs = [d / x for d, x in zip(medians["delta"], times)
                             if d is not None and x is not None]
                    if pairs:
                        row["delta/" + impl] = statistics.median(pairs)
                        row["delta/" + impl + " rounds"] = pairs
                    error = disagreement(
                        out_dir, impl, case,
                        len(case.shapes(case.sizes[label])))
                    row[impl + " error"] = error
                    if error > case.tolerance:
                        log("DISAGREE: %s %s %s: %.3g" % (
                            case.name, label, impl, error))
                rows.append(row)
    load_after = open("/proc/loadavg").read().split()[:3]
    print_table(rows, cases.CASES)
    print("load average before/after: %s / %s" % (" ".join(load_before),
                                                   " ".join(load_after)))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    path = os.path.join(ROOT, "bench", "results", "models-latest.json")
    with open(path, "w") as f:
        json.dump({"date": datetime.datetime.now().isoformat(
            timespec="seconds"), "cpu": cpu_name(), "rows": rows,
            "load_before": load_before, "load_after": load_after}, f,
            indent=1)
    print("JSON: " + os.path.relpath(path, ROOT))


def print_table(rows, all_cases):
    tolerance = {c.name: c.tolerance for c in all_cases}
    header = ("case", "size", "thr", "delta", "jax", "torch", "compiled",
              "delta/jax", "delta/torch", "dlc", "jax jit", "compile",
              "agree")
    lines = []
    for r in rows:
        def ratio(ref):
            """The median of the rounds' paired ratios (Note [Paired
            bursts]), or None."""
            return r.get("delta/" + ref)
        torch_best = min((x for x in (ratio("torch"), ratio("torch.compile"))
                          if x is not None), default=None)
        agree = all(r.get(i + " error", 0) <= tolerance[r["case"]]
                    for i in IMPLS[1:])
        lines.append((
            r["case"], r["size"], str(r["threads"]),
            fmt_time(r.get("delta")), fmt_time(r.get("jax")),
            fmt_time(r.get("torch")), fmt_time(r.get("torch.compile")),
            "%.2f" % ratio("jax") if ratio("jax") is not None else "-",
            "%.2f" % torch_best if torch_best is not None else "-",
            "%.1f s" % r["dlc_s"],
            fmt_time(r.get("jax first")),
            fmt_time(r.get("torch.compile first")),
            "yes" if agree else "NO"))
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    for line in [header] + lines:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)))
    print("delta/torch is against the faster of eager and torch.compile; "
          "dlc is `dlc build -O3 --lib`; jax jit and compile are the first "
          "call (trace and compile) of jax.jit and torch.compile.")


if __name__ == "__main__":
    main()
