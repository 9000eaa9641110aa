#!/usr/bin/python3
"""Emits PTX for every program with a `main` and validates it with ptxas.

For each lang-test (and GradBench/bench module) that has `fn main` or an
`export fn` (what `dlc run` or `dlc build --lib` would compile), runs
`dlc build --target=cuda --gpu-arch=ARCH --gpu-min-work=0 --emit=ptx` (every
op that can be a kernel is one) for sm_80 and sm_90 and
`ptxas -arch=ARCH` on the result. `fail_*` tests are included: many fail
only at run time. Programs that do not compile for the CPU either
(expected compile errors, missing imports) are skipped, as the CPU backend
rejects them too; the summary counts them. Without ptxas the check is
skipped with a message (exit 0). With --run and a CUDA device, also compares `dlc run
--target=cuda` with `dlc run` on each program (see docs/gpu.md).

Usage: check_ptx.py --dlc PATH [--ptxas PATH] [--arches A,B] [--run] [ROOT...]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ARCHES = ["sm_80", "sm_90"]


def find_ptxas(explicit):
    for candidate in [explicit, "/usr/local/cuda/bin/ptxas",
                      shutil.which("ptxas")]:
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def programs(roots):
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in ("Inputs", "utils"))
            for name in sorted(files):
                if not name.endswith(".dl"):
                    continue
                path = os.path.abspath(os.path.join(folder, name))
                # Benchmark modules are compiled whatever they hold.
                is_bench = os.sep + "bench" + os.sep in path
                with open(path, encoding="utf-8") as file:
                    text = file.read()
                has_main = re.search(r"^\s*fn\s+main\s*\(", text, re.M)
                if (is_bench or has_main
                        or re.search(r"^\s*export\s+fn\b", text, re.M)):
                    yield path, bool(has_main)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dlc", required=True)
    parser.add_argument("--ptxas")
    parser.add_argument("--arches", default=",".join(ARCHES),
                        help="comma-separated targets (default: %(default)s)")
    parser.add_argument("--run", action="store_true",
                        help="also compare GPU and CPU output (needs a GPU)")
    parser.add_argument("roots", nargs="*")
    args = parser.parse_args()
    args.dlc = os.path.abspath(args.dlc)
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = args.roots or [os.path.join(source, "lang-tests"),
                           os.path.join(source, "bench")]
    ptxas = find_ptxas(args.ptxas)
    if ptxas is None:
        print("check_ptx: SKIPPED: no ptxas (install the CUDA toolkit in "
              "/usr/local/cuda or put ptxas on PATH)")
        return 0
    failures = []
    checked = skipped = 0
    with tempfile.TemporaryDirectory() as scratch:
        for path, has_main in programs(roots):
            for arch in args.arches.split(","):
                ptx = os.path.join(scratch, f"out.{arch}.ptx")
                emit = subprocess.run(
                    [args.dlc, "build", "--target=cuda", f"--gpu-arch={arch}",
                     "--gpu-min-work=0", "--emit=ptx", path, "-o", ptx],
                    capture_output=True, text=True, cwd=os.path.dirname(path))
                if emit.returncode != 0:
                    cpu = subprocess.run(
                        [args.dlc, "build", "--emit=ir", path, "-o",
                         os.devnull], capture_output=True, text=True,
                        cwd=os.path.dirname(path))
                    if cpu.returncode != 0:
                        skipped += 1
                        break  # the program does not compile at all
                    failures.append(f"{path} [{arch}]: dlc failed:\n"
                                    f"{emit.stderr}")
                    continue
                check = subprocess.run([ptxas, f"-arch={arch}", ptx, "-o",
                                        os.devnull],
                                       capture_output=True, text=True)
                checked += 1
                if check.returncode != 0:
                    failures.append(f"{path} [{arch}]: ptxas failed:\n"
                                    f"{check.stderr}")
            if args.run and has_main:
                gpu = subprocess.run([args.dlc, "run", "--target=cuda", path],
                                     capture_output=True, text=True)
                cpu = subprocess.run([args.dlc, "run", path],
                                     capture_output=True, text=True)
                if (gpu.returncode, gpu.stdout) != (cpu.returncode,
                                                    cpu.stdout):
                    failures.append(f"{path}: GPU and CPU differ:\n"
                                    f"--- cpu\n{cpu.stdout}{cpu.stderr}"
                                    f"--- gpu\n{gpu.stdout}{gpu.stderr}")
    for failure in failures:
        print("FAIL:", failure)
    print(f"check_ptx: {checked} PTX files passed ptxas "
          f"({args.arches.replace(',', ', ')}), {len(failures)} failures, "
          f"{skipped} programs skipped (they do not compile for the CPU "
          f"either)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
