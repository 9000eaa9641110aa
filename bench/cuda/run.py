#!/usr/bin/python3
"""GPU benchmarks of --target=cuda (docs/gpu.md): a fused elementwise chain
against memory bandwidth, the tiled contraction against cuBLAS sgemm in the
same run, and the GMM gradient against the CPU build. Needs a GPU with its
driver and the CUDA toolkit (nvcc, cuBLAS); exits 0 with a message
otherwise.

Each program is built once and timed as a whole process (median of 5);
the time of the same program at a tiny size (same kernels, same start-up)
is subtracted so that the difference is the work itself.

Usage: run.py --dlc PATH [--repeats N]
"""
import argparse
import ctypes
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NVCC = "/usr/local/cuda/bin/nvcc"


def has_gpu():
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        return (driver.cuInit(0) == 0 and
                driver.cuDeviceGetCount(ctypes.byref(count)) == 0 and
                count.value > 0)
    except OSError:
        return False


def timed(command, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def build(dlc, source, output, target, replace=None):
    if replace:
        text = open(source).read()
        for old, new in replace:
            text = re.sub(old, new, text)
        source = output + ".dl"
        open(source, "w").write(text)
    subprocess.run([dlc, "build", f"--target={target}", source, "-o", output],
                   check=True)
    return output


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dlc", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if not has_gpu():
        print("bench/cuda: SKIPPED: no CUDA device (libcuda.so.1 with a GPU)")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        def path(name):
            return os.path.join(scratch, name)

        # 1. Fused chain: x and y are written by their own kernels (8 bytes
        # per element) and read once by the fused reduction (8 more): 16
        # bytes per element, to compare with the GPU's bandwidth (H200:
        # about 4.8 TB/s).
        chain = os.path.join(HERE, "fused_chain.dl")
        big = build(args.dlc, chain, path("chain"), "cuda")
        small = build(args.dlc, chain, path("chain_small"), "cuda",
                      [(r"dim n = \d+", "dim n = 1024")])
        seconds = timed([big], args.repeats) - timed([small], args.repeats)
        elements = 67108864
        print(f"fused chain: {seconds * 1e3:.2f} ms, "
              f"{16 * elements / seconds / 1e9:.1f} GB/s effective "
              f"(x, y written, then read once by the fused kernel)")

        # 2. Contraction vs cuBLAS in the same run.
        contraction = os.path.join(HERE, "contraction.dl")
        big = build(args.dlc, contraction, path("gemm"), "cuda")
        small = build(args.dlc, contraction, path("gemm_small"), "cuda",
                      [(r"dim (\w) = 4096", r"dim \1 = 64")])
        delta = timed([big], args.repeats) - timed([small], args.repeats)
        flops = 2 * 4096 ** 3
        line = f"contraction 4096^3: Delta {flops / delta / 1e12:.2f} TFLOP/s"
        if os.path.exists(NVCC):
            subprocess.run([NVCC, "-O2", os.path.join(HERE, "cublas_sgemm.cu"),
                            "-lcublas", "-o", path("cublas")], check=True)
            cublas = float(subprocess.run([path("cublas")], check=True,
                                          capture_output=True,
                                          text=True).stdout)
            line += (f", cuBLAS {flops / cublas / 1e12:.2f} TFLOP/s, "
                     f"ratio Delta/cuBLAS time {delta / cublas:.1f}")
        print(line)

        # 3. GMM gradient: the GradBench module, GPU build vs CPU build.
        gmm = path("gmm_grad.dl")
        shutil.copy(os.path.join(HERE, "gmm_grad.dl"), gmm)
        shutil.copy(os.path.join(HERE, "..", "gradbench", "modules", "gmm.dl"),
                    path("gmm.dl"))
        gpu = build(args.dlc, gmm, path("gmm_gpu"), "cuda")
        cpu = build(args.dlc, gmm, path("gmm_cpu"), "cpu")
        gpu_time = timed([gpu], args.repeats)
        cpu_time = timed([cpu], args.repeats)
        print(f"GMM gradient: GPU {gpu_time:.3f} s, CPU {cpu_time:.3f} s, "
              f"speed-up {cpu_time / gpu_time:.1f}x (whole process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
