"""Runs one implementation of one model case at one size, in its own
process (run.py sets the thread count in the environment and pins the
process to that many cores): the first call (which compiles or traces
for JAX and torch.compile) is timed alone, then the median of repeated
calls as in bench/common.h (at least BENCH_MIN_REPS = 5 runs and
BENCH_MIN_TIME = 0.3 s). Prints one JSON line; saves the results as .npy
for run.py's agreement check.

Usage: worker.py [--serve] IMPL CASE SIZE_LABEL OUT_DIR [DELTA_LIB_DIR]
IMPL is delta, jax, torch or torch.compile.

With --serve the worker stays up after the first call: it prints one
JSON line (the first call's time), then answers each line `burst S N`
on standard input with the median of calls timed for at least S seconds
and at least N calls (BENCH_MIN_REPS without N), until `quit` or the end
of input.
run.py alternates short bursts of every implementation this way (Note
[Paired bursts] in bench/README.md)."""
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402


def timed(fn, sync):
    start = time.perf_counter()
    sync(fn())
    return time.perf_counter() - start


def burst(call, sync, min_time, min_reps):
    """Times calls until min_reps of them and min_time seconds; at most
    200."""
    times = []
    while len(times) < 200 and (len(times) < min_reps or
                                sum(times) < min_time):
        times.append(timed(call, sync))
    return times


def main():
    serve = sys.argv[1] == "--serve"
    if serve:
        del sys.argv[1]
    impl, case_name, label, out_dir = sys.argv[1:5]
    case = next(c for c in cases.CASES if c.name == case_name)
    sizes = case.sizes[label]
    inputs = case.inputs(sizes)
    threads = int(os.environ.get("BENCH_THREADS", "1"))

    if impl == "delta":
        import delta_lib
        prefix = os.path.splitext(case.dl)[0]
        library, header = delta_lib.load(sys.argv[5], prefix)
        entry = delta_lib.Entry(library, header, prefix, case.entry,
                                case.shapes(sizes))
        prepared = entry.prepare(*inputs)
        def call(): return entry.call(prepared)
        def sync(r): return r
        def to_numpy(r): return [np.asarray(x) for x in r]
    elif impl == "jax":
        import jax
        jax.config.update("jax_platforms", "cpu")
        fn = case.jax(sizes, case.entry)
        args = [jax.numpy.asarray(x) for x in inputs]
        def call(): return fn(*args)
        def sync(r): return jax.block_until_ready(r)
        def to_numpy(r): return [np.asarray(x) for x in r]
    else:
        import torch
        torch.set_num_threads(threads)
        fn = case.torch(sizes, case.entry, impl == "torch.compile")
        args = [torch.from_numpy(np.array(x)) if isinstance(x, np.ndarray)
                else x for x in inputs]
        def call(): return fn(*args)
        def sync(r): return r
        def to_numpy(r): return [x.detach().numpy() if hasattr(x, "detach")
                                 else np.asarray(x) for x in r]

    first = timed(call, sync)
    results = to_numpy(sync(call()))
    os.makedirs(out_dir, exist_ok=True)
    for k, r in enumerate(results):
        np.save(os.path.join(out_dir, "%s_%d.npy" % (impl, k)), r)
    min_time = float(os.environ.get("BENCH_MIN_TIME", "0.3"))
    min_reps = int(os.environ.get("BENCH_MIN_REPS", "5"))
    report = {"case": case_name, "size": label, "impl": impl,
              "threads": threads, "first_call_s": first}
    if not serve:
        times = burst(call, sync, min_time, min_reps)
        report.update(median_s=statistics.median(times), reps=len(times))
        print(json.dumps(report))
        return
    print(json.dumps(report), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            return
        reps = int(words[2]) if len(words) > 2 else min_reps
        times = burst(call, sync, float(words[1]), reps)
        print(json.dumps({"median_s": statistics.median(times),
                          "reps": len(times)}), flush=True)


if __name__ == "__main__":
    main()
