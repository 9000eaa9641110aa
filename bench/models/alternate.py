"""Compares two builds of one model case's Delta library in one process:
calls them in turn, A then B, then B then A, and prints each one's median
time and the median ratio B / A of the pairs with its quartiles. On a
shared machine a neighbour's burst then slows both of a pair, which
separate runs of run.py cannot promise: this is how the changes of
session 20 in docs/performance.md were measured.

Usage: alternate.py CASE SIZE_LABEL DIR_A DIR_B [PAIRS]
DIR_A and DIR_B hold `dlc build -O3 --lib` of the case's program at that
size (as run.py's build directory does); set DELTA_NUM_THREADS and pin
the process (taskset) as run.py does. Example:
  DELTA_NUM_THREADS=1 taskset -c 0 build/bench-venv/bin/python \\
      bench/models/alternate.py transformer_grad "s128 m256 h4" old/ new/ 150
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
import delta_lib  # noqa: E402


def main():
    if len(sys.argv) not in (5, 6):
        raise SystemExit(__doc__)
    name, label, dir_a, dir_b = sys.argv[1:5]
    pairs = int(sys.argv[5]) if len(sys.argv) == 6 else 60
    case = next(c for c in cases.CASES if c.name == name)
    sizes = case.sizes[label]
    inputs = case.inputs(sizes)
    prefix = os.path.splitext(case.dl)[0]
    calls = []
    for directory in (dir_a, dir_b):
        library, header = delta_lib.load(directory, prefix)
        entry = delta_lib.Entry(library, header, prefix, case.entry,
                                case.shapes(sizes))
        prepared = entry.prepare(*inputs)
        for _ in range(3):  # warm: caches, pages, the thread pool
            entry.call(prepared)
        calls.append((entry, prepared))
    times = ([], [])
    ratios = []
    for i in range(pairs):
        pair = [0.0, 0.0]
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            entry, prepared = calls[which]
            start = time.perf_counter()
            entry.call(prepared)
            pair[which] = time.perf_counter() - start
        times[0].append(pair[0])
        times[1].append(pair[1])
        ratios.append(pair[1] / pair[0])
    low, _, high = statistics.quantiles(ratios, n=4)
    print("%s %s: A %.3f ms, B %.3f ms, B/A %.3f [%.3f-%.3f]" % (
        name, label, statistics.median(times[0]) * 1e3,
        statistics.median(times[1]) * 1e3, statistics.median(ratios), low,
        high))


if __name__ == "__main__":
    main()
