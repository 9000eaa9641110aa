#!/usr/bin/python3
"""Delta's model suite against JAX and PyTorch (eager and torch.compile):
builds each bench/models/*.dl with `dlc build -O3 --lib` at each size,
installs jax[cpu] and torch from PyPI into a virtual environment (once),
runs every implementation in its own process on 1 and 2 threads, checks
that their results agree, and prints one table of medians with the
Delta/JAX and Delta/PyTorch ratios; compile (dlc) and first-call (JIT)
times are separate columns. See bench/README.md and docs/performance.md.
Never run by the test suite."""
import argparse
import datetime
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
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


def measure(args, python, impl, case, label, threads, lib_dir, out_dir):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    for var in ("DELTA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "OPENBLAS_NUM_THREADS", "BENCH_THREADS"):
        env[var] = str(threads)
    env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=%s" % (
        "true" if threads > 1 else "false")
    command = ["taskset", "-c", ",".join(str(c) for c in range(threads)),
               python, os.path.join(HERE, "worker.py"), impl, case.name,
               label, out_dir, lib_dir]
    try:
        result = subprocess.run(command, env=env, capture_output=True,
                                text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        log("%s %s %s: over %d s, skipped" % (impl, case.name, label,
                                              args.timeout))
        return None
    if result.returncode != 0:
        log("%s %s %s failed:\n%s" % (impl, case.name, label,
                                      result.stderr[-2000:]))
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


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
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each implementation, interleaved; "
                        "the table shows the median of their medians")
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
                # Rounds of every implementation in turn: a neighbour's
                # burst on a shared machine then slows one round of each,
                # not every run of one (Note [Rounds] in bench/README.md).
                runs = {}
                for round_index in range(args.rounds):
                    for impl in impls:
                        if impl == "torch.compile" and \
                                not case.compile_torch:
                            continue
                        log("%s %s: %s on %d thread(s), round %d" % (
                            case.name, label, impl, t, round_index + 1))
                        m = measure(args, python, impl, case, label, t,
                                    lib_dir, out_dir)
                        if m is not None:
                            runs.setdefault(impl, []).append(m)
                for impl, ms in runs.items():
                    row[impl] = statistics.median(m["median_s"] for m in ms)
                    row[impl + " first"] = ms[0]["first_call_s"]
                    if impl != "delta" and "delta" in row:
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
            if "delta" not in r or ref not in r:
                return "-"
            return "%.2f" % (r["delta"] / r[ref])
        torch_best = min((r[i] for i in ("torch", "torch.compile")
                          if i in r), default=None)
        agree = all(r.get(i + " error", 0) <= tolerance[r["case"]]
                    for i in IMPLS[1:])
        lines.append((
            r["case"], r["size"], str(r["threads"]),
            fmt_time(r.get("delta")), fmt_time(r.get("jax")),
            fmt_time(r.get("torch")), fmt_time(r.get("torch.compile")),
            ratio("jax"),
            "%.2f" % (r["delta"] / torch_best) if torch_best and
            "delta" in r else "-",
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
