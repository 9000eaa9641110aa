#!/usr/bin/python3
"""The test suite's check of the model suite (no JAX, no PyTorch): every
case's Delta program, at tiny sizes, builds with `dlc build -O3 --lib` and
its entry, called through delta_lib.py, returns finite results of the
expected shapes. Usage: smoke.py --dlc DLC --work DIR"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402
import delta_lib  # noqa: E402
from run import build_library  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dlc", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    passed = failed = 0
    for case in cases.CASES:
        out = os.path.join(args.work, case.name)
        build_library(args.dlc, case, case.smoke, out)
        prefix = os.path.splitext(case.dl)[0]
        library, header = delta_lib.load(out, prefix)
        shapes = case.shapes(case.smoke)
        entry = delta_lib.Entry(library, header, prefix, case.entry, shapes)
        results = entry.call(entry.prepare(*case.inputs(case.smoke)))
        ok = len(results) == len(shapes) and all(
            r.shape == tuple(s) and np.all(np.isfinite(r))
            for r, s in zip(results, shapes))
        print("%s: %s" % (case.name, "ok" if ok else "FAILED"))
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
