#!/usr/bin/python3
"""A change's effect on GradBench: the tool with a base `dlc` and with this
build's, on bench.py's default workloads, alternating call by call on one
pinned core (DELTA_NUM_THREADS=1), each output checked against bench.py's
references. Prints each function's mean time per call (median over the
rounds) under both compilers and each eval's totals.

Usage: compare.py --base-dlc PATH [--rounds N] [--min-seconds S] [--cpu N]
                  [--quick] EVAL...
  --base-dlc PATH  the base compiler (with its runtime beside it, as in a
                   build tree), e.g. the main branch's build/release/bin/dlc
"""
import argparse
import os
import statistics
import sys
import tempfile

import bench
import references
from manual import check, run_delta


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-dlc", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-seconds", type=float, default=0.3)
    parser.add_argument("--cpu", default="1")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("evals", nargs="+")
    args = parser.parse_args()
    tool_path = os.environ.get("GRADBENCH_TOOL", os.path.join(bench.ROOT, "bench/gradbench/tool"))
    base_cache = tempfile.mkdtemp(prefix="gradbench-base-")
    environment = {**os.environ, "DELTA_NUM_THREADS": "1"}
    tools = {"base": bench.Tool(["taskset", "-c", args.cpu, tool_path],
                                {**environment, "GRADBENCH_DLC": args.base_dlc, "GRADBENCH_CACHE": base_cache}),
             "new": bench.Tool(["taskset", "-c", args.cpu, tool_path], environment)}
    runs = {"min_runs": 1, "min_seconds": args.min_seconds}
    failed = 0
    print("| eval | workload | function | base (ms) | new (ms) | new / base | check base, new |")
    print("| --- | --- | --- | ---: | ---: | ---: | --- |")
    for tool in tools.values():
        tool.send({"kind": "start", "eval": "compare"})
    for name in args.evals:
        totals = {"base": 0.0, "new": 0.0}
        for tool in tools.values():
            if not tool.send({"kind": "define", "module": name}).get("success"):
                raise RuntimeError(f"the tool did not define {name}")
        workloads = list(bench.EVALS[name]())
        if args.quick:
            workloads = workloads[: (len(workloads) + 1) // 2]
        for description, inp, functions, _ in workloads:
            expected = {key: bench.plain(value) for key, value in references.expected_outputs(name, inp).items()}
            for function in functions:
                times, checks = {"base": [], "new": []}, {}
                for _ in range(args.rounds):
                    for label, tool in tools.items():
                        output, seconds = run_delta(tool, name, {**inp, **runs}, function)
                        times[label].append(seconds)
                        checks[label] = check(output, expected[function])
                failed += sum(c != "ok" for c in checks.values())
                base, new = statistics.median(times["base"]), statistics.median(times["new"])
                totals["base"] += base
                totals["new"] += new
                print(f"| {name} | {description} | {function} | {base * 1e3:.3f} | {new * 1e3:.3f} | {new / base:.2f} "
                      f"| {checks['base']}, {checks['new']} |", flush=True)
        print(f"| {name} | total | | {totals['base'] * 1e3:.2f} | {totals['new'] * 1e3:.2f} "
              f"| {totals['new'] / totals['base']:.2f} | |", flush=True)
    for tool in tools.values():
        tool.close()
    print(f"\n{failed} failed checks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
