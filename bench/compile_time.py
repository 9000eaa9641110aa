#!/usr/bin/python3
"""Compile-time benchmark (issue 26): for each GradBench module, each
example and each bench case, at each -O level, the seconds and peak memory
(RSS) of `dlc build --emit=obj --no-cache` on one core, and the ratio of
LLVM IR lines (after LLVM's optimizer) to Delta IR lines. Prints a Markdown
table (the one in docs/performance.md) and writes it as JSON to
bench/results/compile-time.json. Run on an idle machine:

    /usr/bin/python3 bench/compile_time.py [--dlc build/release/bin/dlc]
        [--levels 0 1 2 3] [--repeat 3] [--cpu 1] [FILTER...]
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def programs(filters):
    paths = sorted(glob.glob(os.path.join(ROOT, "bench/gradbench/modules/*.dl")))
    paths += sorted(glob.glob(os.path.join(ROOT, "examples/**/*.dl"),
                              recursive=True))
    paths += sorted(glob.glob(os.path.join(ROOT, "bench/cases/*.dl")))
    paths.append(os.path.join(ROOT, "bench/gmm.dl"))
    rel = [os.path.relpath(p, ROOT) for p in paths]
    return [p for p in rel if not filters or any(f in p for f in filters)]


# Sizes for the placeholders of bench/run.py's templates (bench/cases/
# matmul.dl has `dim i = @N@;`), as bench/run.py fills them.
PLACEHOLDERS = {"@N@": "1024", "@K@": "10", "@D@": "10"}


def instantiate(path, scratch):
    """The program to compile: `path`, or a copy with its placeholders
    filled."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    if not any(p in text for p in PLACEHOLDERS):
        return path
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    filled = os.path.join(scratch, os.path.basename(path))
    with open(filled, "w") as f:
        f.write(text)
    return filled


def measure(dlc, path, level, cpu, out):
    """Seconds and peak RSS (MB) of one compilation, or None if it fails."""
    command = ["/usr/bin/time", "-f", "%e %M"]
    if cpu is not None and shutil.which("taskset"):
        command = ["taskset", "-c", str(cpu)] + command
    command += [dlc, "build", "--no-cache", "--emit=obj", f"-O{level}",
                path, "-o", out]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        return None
    seconds, kilobytes = result.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kilobytes) / 1024


def lines(dlc, path, level, emit):
    result = subprocess.run([dlc, "build", "--no-cache", f"--emit={emit}",
                             f"-O{level}", path, "-o", "-"],
                            cwd=ROOT, capture_output=True, text=True)
    return result.stdout.count("\n") if result.returncode == 0 else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dlc", default=os.path.join(
        ROOT, "build/release/bin/dlc"))
    parser.add_argument("--levels", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per measurement; the median is reported")
    parser.add_argument("--cpu", type=int, default=1,
                        help="the core to pin to (taskset)")
    parser.add_argument("--json", default=os.path.join(
        ROOT, "bench/results/compile-time.json"))
    parser.add_argument("filters", nargs="*",
                        help="only programs whose path contains one of these")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "out.o")
        for name in programs(args.filters):
            row = {"program": name, "levels": {}}
            path = instantiate(name, scratch)
            for level in args.levels:
                runs = [measure(args.dlc, path, level, args.cpu, out)
                        for _ in range(args.repeat)]
                if any(run is None for run in runs):
                    row["levels"][level] = None
                    continue
                ir = lines(args.dlc, path, level, "ir")
                llvm = lines(args.dlc, path, level, "llvm")
                row["levels"][level] = {
                    "seconds": statistics.median(r[0] for r in runs),
                    "peak_mb": max(r[1] for r in runs),
                    "ir_lines": ir, "llvm_lines": llvm,
                    "ratio": llvm / ir if ir else None}
            rows.append(row)
            print(f"measured {name}", file=sys.stderr)
    header = "| program |" + "".join(
        f" -O{l} s | -O{l} MB | -O{l} LLVM/IR lines |" for l in args.levels)
    print(header)
    print("|---|" + "---:|---:|---:|" * len(args.levels))
    for row in rows:
        cells = []
        for level in args.levels:
            m = row["levels"][level]
            if m is None:
                cells += ["fails", "", ""]
                continue
            ratio = f"{m['ratio']:.1f} ({m['llvm_lines']}/{m['ir_lines']})" \
                if m["ratio"] else ""
            cells += [f"{m['seconds']:.2f}", f"{m['peak_mb']:.0f}", ratio]
        print(f"| {row['program']} | " + " | ".join(cells) + " |")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
