#!/usr/bin/env python3
"""GPU benchmarks of `dlc build --lib --target=cuda`, per call, data on the
device (bench/cuda/README.md): a contraction against cuBLAS, a fused chain
and its reduction against the device-to-device copy bandwidth, the MLP
training step and the GMM gradient against the same libraries on 2 CPU
threads (and the MLP against PyTorch on the GPU). Every reference is
measured in the same run; every driver checks its results.

Usage: run.py --dlc PATH [--quick] [--json PATH] [--budget S] [--keep DIR]
       run.py --dlc PATH --self-test   (no GPU needed: builds everything,
                                        runs the CPU halves)

Prints one table of medians and Delta/reference time ratios and writes
bench/cuda/results/latest.json (or --json). Without a CUDA device it prints
one SKIPPED line and exits 0. Exits 1 when a build, a driver or a check
failed, or the time budget ran out before every case had run.
"""
import argparse
import ctypes
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)

# Sizes per case. Contraction: type:MxKxN (A is M x K). Chain: elements.
# MLP: feat, hidden, classes, batch (bench/cases/mlp.dl's dims). GMM:
# n:k:d (points, components, dimensions).
FULL = {
    "contraction": [f"{t}:{s}" for t in ("f32", "f64") for s in (
        "1024x1024x1024", "2048x2048x2048", "4096x4096x4096",
        "8192x1024x4096")],
    "chain": [2**24, 2**26, 2**28],
    "mlp": [(784, 512, 10, 256), (784, 2048, 10, 2048),
            (1024, 4096, 1000, 1024)],
    "gmm": ["10000:25:10", "100000:25:10"],
}
QUICK = {
    "contraction": ["f32:2048x2048x2048", "f32:4096x4096x4096",
                    "f32:8192x1024x4096", "f64:4096x4096x4096"],
    "chain": [2**24, 2**28],
    "mlp": [(784, 512, 10, 256), (784, 2048, 10, 2048)],
    "gmm": ["100000:25:10"],
}
# Built in full, but only the CPU halves of MLP and GMM run.
SELF_TEST = {"contraction": ["f32:64x64x64"], "chain": [1024],
             "mlp": [(784, 512, 10, 256)], "gmm": ["1000:5:3"]}

# Targets on the Delta/reference time ratio (issue 28): at least 0.9x
# cuBLAS's speed, 0.8x the copy bandwidth.
TARGETS = {"contraction": 1 / 0.9, "chain": 1 / 0.8}

# The MLP's extra entry: the new parameters themselves, to check the GPU's
# against the CPU's leaf by leaf and to time a step whose results stay on
# the device.
TRAIN_STEP_PARAMS = """
// Added by bench/cuda/run.py: the new parameters, not their checksum.
export fn train_step_params(w1: f32[feat, hidden], b1: f32[hidden],
                            w2: f32[hidden, classes], b2: f32[classes],
                            xs: f32[batch, feat], labels: classes[batch])
    -> (f32[feat, hidden], f32[hidden], f32[hidden, classes], f32[classes]) {
  let p = Mlp { l1: Dense { w: w1, b: b1 }, l2: Dense { w: w2, b: b2 } };
  let next = p - 0.01 * grad(loss)(p, xs, labels);
  (next.l1.w, next.l1.b, next.l2.w, next.l2.b)
}
"""


def find_gpu():
    """(name, compute capability, driver version, memory in GiB) of device
    0, or a string saying why there is none."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        return f"cannot load libcuda.so.1 ({error})"
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0:
        return "cuInit failed"
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return "the driver sees no device"
    device = ctypes.c_int(0)
    driver.cuDeviceGet(ctypes.byref(device), 0)
    name = ctypes.create_string_buffer(256)
    driver.cuDeviceGetName(name, 256, device)
    major, minor, version = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    driver.cuDeviceGetAttribute(ctypes.byref(major), 75, device)
    driver.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)
    driver.cuDriverGetVersion(ctypes.byref(version))
    memory = ctypes.c_size_t(0)
    driver.cuDeviceTotalMem_v2(ctypes.byref(memory), device)
    return {"name": name.value.decode(),
            "compute": f"{major.value}.{minor.value}",
            "driver": f"{version.value // 1000}.{version.value % 1000 // 10}",
            "memory_gib": round(memory.value / 2**30, 1)}


class Toolkit:
    """The CUDA toolkit: nvcc, headers and the runtime/cuBLAS libraries."""

    def __init__(self, root):
        if root is None:
            nvcc = shutil.which("nvcc")
            root = (os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
                    or (os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
                        if nvcc else "/usr/local/cuda"))
        self.root = root
        self.nvcc = os.path.join(root, "bin", "nvcc")
        self.include = os.path.join(root, "include")
        self.lib = next((d for d in (os.path.join(root, "lib64"),
                                     os.path.join(root, "lib"),
                                     os.path.join(root, "targets",
                                                  "x86_64-linux", "lib"))
                         if os.path.exists(os.path.join(d, "libcudart.so"))),
                        None)

    def problems(self):
        cublas = os.path.join(self.include, "cublas_v2.h")
        found = ((self.nvcc, os.path.exists(self.nvcc)),
                 (cublas, os.path.exists(cublas)),
                 (f"libcudart.so under {self.root}", self.lib is not None))
        return [f"missing {what}" for what, ok in found if not ok]


class Builder:
    """Builds the Delta libraries and the drivers into `work`."""

    def __init__(self, args, toolkit, arch, work, deadline):
        self.dlc = args.dlc
        self.deadline = deadline
        self.toolkit = toolkit
        self.arch = arch
        self.work = work
        self.cc = os.environ.get("CC", "cc")
        # Debian's libdlpack-dev where installed, else the vendored copy.
        self.includes = [HERE, toolkit.include]
        if not os.path.exists("/usr/include/dlpack/dlpack.h"):
            self.includes.append(os.path.join(HERE, "third_party"))

    def run(self, command):
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=max(10, self.deadline -
                                              time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{' '.join(command)}: stopped (the time "
                               "budget)") from None
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n"
                               f"{done.stdout}{done.stderr}".strip())

    def library(self, source, folder, target):
        """dlc build --lib of `source` into `folder`; returns the folder."""
        command = [self.dlc, "build", "--lib", "-O3", f"--target={target}"]
        if target == "cuda":
            command.append(f"--gpu-arch={self.arch}")
        self.run(command + [source, "-o", folder + os.sep])
        return folder

    def driver(self, source, output, libraries, cublas=False):
        """Compiles a driver (.c with cc, .cu with nvcc) against the Delta
        libraries in `libraries` ({folder: name})."""
        flags = [f"-I{d}" for d in self.includes + list(libraries)]
        links = []
        for folder, name in libraries.items():
            links += [f"-L{folder}", f"-l{name}"]
        links += [f"-L{self.toolkit.lib}"] + (["-lcublas"] if cublas else [])
        rpath = ":".join(list(libraries) + [self.toolkit.lib])
        if source.endswith(".cu"):
            command = ([self.toolkit.nvcc, "-O2", f"-arch={self.arch}",
                        "-Xcompiler", "-Wall"] + flags + [source] + links +
                       ["-Xlinker", f"-rpath={rpath}", "-o", output])
        else:
            command = ([self.cc, "-O2", "-std=gnu11", "-Wall", "-Wextra"] +
                       flags + [source] + links +
                       ["-lcudart", "-lm", f"-Wl,-rpath,{rpath}", "-o", output])
        self.run(command)
        return output

    def case_folder(self, name):
        folder = os.path.join(self.work, name)
        os.makedirs(folder, exist_ok=True)
        return folder

    def contraction(self):
        folder = self.case_folder("contraction")
        self.library(os.path.join(HERE, "contraction.dl"), folder, "cuda")
        return [self.driver(os.path.join(HERE, "contraction_bench.c"),
                            os.path.join(folder, "contraction_bench"),
                            {folder: "contraction"}, cublas=True)]

    def chain(self):
        folder = self.case_folder("chain")
        self.library(os.path.join(HERE, "chain.dl"), folder, "cuda")
        return [self.driver(os.path.join(HERE, "chain_bench.cu"),
                            os.path.join(folder, "chain_bench"),
                            {folder: "chain"})]

    def twin(self, folder, stem, text):
        """The module as STEM_gpu (CUDA) and STEM_cpu: distinct prefixes,
        so that one driver links both."""
        libraries = {}
        for target, suffix in (("cuda", "gpu"), ("cpu", "cpu")):
            source = os.path.join(folder, f"{stem}_{suffix}.dl")
            with open(source, "w", encoding="utf-8") as file:
                file.write(text)
            out = self.library(source, os.path.join(folder, suffix), target)
            libraries[out] = f"{stem}_{suffix}"
        return libraries

    def mlp(self, sizes):
        feat, hidden, classes, batch = sizes
        folder = self.case_folder(f"mlp_{feat}_{hidden}_{classes}_{batch}")
        with open(os.path.join(BENCH, "cases", "mlp.dl"),
                  encoding="utf-8") as file:
            text = file.read()
        for name, size in (("feat", feat), ("hidden", hidden),
                           ("classes", classes), ("batch", batch)):
            text, count = re.subn(rf"^dim {name} = \d+;",
                                  f"dim {name} = {size};", text, flags=re.M)
            if count != 1:
                raise RuntimeError(f"bench/cases/mlp.dl: no `dim {name} = N;`")
        libraries = self.twin(folder, "mlp", text + TRAIN_STEP_PARAMS)
        return [self.driver(os.path.join(HERE, "mlp_bench.c"),
                            os.path.join(folder, "mlp_bench"), libraries)]

    def gmm(self):
        folder = self.case_folder("gmm")
        with open(os.path.join(BENCH, "gradbench", "modules", "gmm.dl"),
                  encoding="utf-8") as file:
            libraries = self.twin(folder, "gmm", file.read())
        return [self.driver(os.path.join(HERE, "gmm_bench.c"),
                            os.path.join(folder, "gmm_bench"), libraries)]


def build_all(builder, sizes):
    """Builds every case in parallel. Returns ({job: [driver]}, {job: error})
    with jobs "contraction", "chain", "mlp F-H-C-B", "gmm"."""
    jobs = {}
    if sizes["contraction"]:
        jobs["contraction"] = builder.contraction
    if sizes["chain"]:
        jobs["chain"] = builder.chain
    for mlp in sizes["mlp"]:
        jobs[mlp_key(mlp)] = lambda mlp=mlp: builder.mlp(mlp)
    if sizes["gmm"]:
        jobs["gmm"] = builder.gmm
    built, errors = {}, {}
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        for name, future in futures.items():
            try:
                built[name] = future.result()
            except (RuntimeError, OSError) as error:
                errors[name] = str(error)
    return built, errors


def mlp_key(sizes):
    return "mlp {}-{}-{} batch {}".format(*sizes)


class Runner:
    """Runs drivers one at a time (nothing else on the GPU), within the
    budget, collecting their JSON lines and failures."""

    def __init__(self, deadline, env):
        self.deadline = deadline
        self.env = env
        self.log = []
        self.records = []
        self.failures = []

    def __call__(self, name, command):
        left = self.deadline - time.monotonic()
        if left < 2:
            self.failures.append(f"{name}: not run, the time budget was spent")
            return []
        started = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  env=self.env, timeout=left)
        except subprocess.TimeoutExpired as expired:
            done = None
            stdout = expired.stdout or ""
            stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
            self.failures.append(f"{name}: stopped after {left:.0f} s (the "
                                 "time budget)")
        else:
            stdout = done.stdout
        self.log.append(f"==> {name} ({time.monotonic() - started:.1f} s): "
                        f"{' '.join(command)}\n{stdout}"
                        f"{done.stderr if done else ''}\n")
        records = []
        for line in stdout.splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        for record in records:
            if "fail" in record:
                self.failures.append(f"{name} {record.get('params', '')}: "
                                     f"{record['fail']}")
            elif record.get("ok") is False:
                self.failures.append(
                    f"{name} {record['params']}: {record['check']} is off by "
                    f"{record['error']:.3g} "
                    f"(tolerance {record['tolerance']:.3g})")
        if done is not None and done.returncode != 0 and not any(
                "fail" in r or r.get("ok") is False for r in records):
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            self.failures.append(f"{name}: exit status {done.returncode}: "
                                 + " | ".join(tail))
        self.records += records
        return records


def median(records, case, params, impl):
    for record in records:
        if (record.get("case") == case and record.get("params") == params
                and record.get("impl") == impl and "median_s" in record):
            return record
    return None


# How the table names what the drivers call their Delta timings.
DELTA_LABELS = {"delta": "GPU matmul", "delta chain": "GPU chain",
                "delta sum": "GPU chain_sum_squares",
                "delta gpu step": "GPU train_step",
                "delta gpu params": "GPU train_step_params",
                "delta gpu": "GPU jacobian"}


def rate(record):
    """Throughput of a timing record in its natural unit."""
    per_second = record["work"] / record["median_s"]
    if record["unit"] == "flop":
        return f"{per_second / 1e12:.2f} TFLOP/s"
    if record["unit"] == "byte":
        return f"{per_second / 1e9:.0f} GB/s"
    return ""


def make_rows(records):
    """Delta/reference ratios of every pair measured in the same run."""
    rows = []

    def add(case, params, delta_impl, ref_impl, label, target=None,
            shown=None, ref_seconds=None, ref_rate=None):
        delta = median(records, case, params, delta_impl)
        ref = median(records, case, params, ref_impl)
        if delta is None or ref is None:
            return
        ref_s = ref["median_s"] if ref_seconds is None else ref_seconds
        ratio = delta["median_s"] / ref_s
        rows.append({
            "case": case, "params": shown or params, "delta": delta_impl,
            "reference": label, "delta_s": delta["median_s"],
            "reference_s": ref_s, "ratio": ratio,
            "delta_rate": rate(delta), "reference_rate": ref_rate or rate(ref),
            "reps": min(delta["reps"], ref["reps"]), "target": target,
            "met": None if target is None else ratio <= target})

    seen = []
    for record in records:
        key = (record.get("case"), record.get("params"))
        if "median_s" in record and key not in seen:
            seen.append(key)
    for case, params in seen:
        if case == "contraction":
            ref = "cublas dgemm" if params.startswith("f64") else "cublas sgemm"
            add(case, params, "delta", ref, ref.replace("cublas", "cuBLAS"),
                TARGETS["contraction"])
        elif case == "chain":
            copy = median(records, case, params, "copy")
            if copy is None:
                continue
            bandwidth = copy["work"] / copy["median_s"]
            for impl, what in (("delta chain", "z = x*y + x*0.5 - y"),
                               ("delta sum", "sum(z * z)")):
                delta = median(records, case, params, impl)
                if delta is not None:
                    # The reference time: a copy at the measured bandwidth
                    # moving the bytes this kernel must move.
                    add(case, params, impl, "copy", "D2D copy bandwidth",
                        TARGETS["chain"], f"{params}: {what}",
                        delta["work"] / bandwidth, rate(copy))
        elif case == "mlp":
            add(case, params, "delta gpu step", "delta cpu step",
                "Delta CPU 2 threads")
            add(case, params, "delta gpu step", "pytorch cuda", "PyTorch GPU")
            add(case, params, "delta gpu params", "delta cpu params",
                "Delta CPU 2 threads")
        elif case == "gmm":
            add(case, params, "delta gpu", "delta cpu", "Delta CPU 2 threads")
    return rows


def format_seconds(seconds):
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def print_table(rows):
    if not rows:
        return
    header = ("case", "size", "Delta", "reference", "Delta time",
              "ref time", "Delta/ref", "target", "Delta rate", "ref rate")
    lines = [header]
    for row in rows:
        target = ""
        if row["target"] is not None:
            target = (f"<= {row['target']:.2f} "
                      f"{'ok' if row['met'] else 'MISSED'}")
        delta_rate = row["delta_rate"] or (
            f"{1 / row['ratio']:.1f}x faster" if row["ratio"] < 1 else
            f"{row['ratio']:.1f}x slower")
        lines.append((
            row["case"], row["params"],
            DELTA_LABELS.get(row["delta"], row["delta"]), row["reference"],
            format_seconds(row["delta_s"]), format_seconds(row["reference_s"]),
            f"{row['ratio']:.2f}" + ("*" if row["reps"] < 5 else ""),
            target, delta_rate, row["reference_rate"]))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(width)
                        for cell, width in zip(line, widths)).rstrip())
    if any(row["reps"] < 5 for row in rows):
        print("* fewer than 5 timed calls (BENCH_MAX_TIME stopped them)")


def check_torch(records, failures):
    """PyTorch's checksum against the Delta CPU library's, per size."""
    for record in records:
        if record.get("impl", "").startswith("pytorch"):
            want = abs_sum = None
            for other in records:
                if (other.get("case") == "mlp"
                        and other.get("params") == record["params"]):
                    if other.get("value") == "checksum":
                        want = other["x"]
                    if other.get("value") == "abs_sum":
                        abs_sum = other["x"]
            if want is None:
                continue
            # As mlp_bench.c checks the GPU's checksum: within 1e-7 of the
            # sum of the weights' magnitudes.
            scale = max(1.0, 0.01 * (abs_sum or 0), abs(want))
            error = abs(record["checksum"] - want) / scale
            ok = error <= 1e-5
            records.append({"case": "mlp", "params": record["params"],
                            "check": "pytorch checksum vs delta cpu",
                            "error": error, "tolerance": 1e-5, "ok": ok})
            if not ok:
                failures.append(f"mlp {record['params']}: PyTorch's checksum "
                                f"{record['checksum']} vs Delta's {want}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dlc", required=True)
    parser.add_argument("--quick", action="store_true",
                        help="fewer sizes, shorter medians (about 90 s)")
    parser.add_argument("--self-test", action="store_true",
                        help="no GPU needed: build everything, run the CPU "
                        "halves of the MLP and GMM drivers and PyTorch on the "
                        "CPU, compare their checksums")
    parser.add_argument("--json", help="where to write the results "
                        "(default bench/cuda/results/latest.json)")
    parser.add_argument("--budget", type=float,
                        help="seconds for the whole run, builds included "
                        "(default 170, 85 with --quick)")
    parser.add_argument("--cuda", help="the CUDA toolkit's root (default: "
                        "CUDA_HOME, nvcc's, /usr/local/cuda)")
    parser.add_argument("--gpu-arch", help="default: the device's "
                        "(sm_90 from 9.0 up, sm_80 below)")
    parser.add_argument("--keep", help="build into this folder and keep it")
    args = parser.parse_args()
    started = time.monotonic()
    budget = args.budget or (85 if args.quick else 170)
    deadline = started + budget
    args.dlc = os.path.abspath(args.dlc)

    gpu = find_gpu()
    if isinstance(gpu, str) and not args.self_test:
        print(f"bench/cuda: SKIPPED: no CUDA device ({gpu})")
        return 0
    toolkit = Toolkit(args.cuda)
    problems = toolkit.problems()
    if not os.path.exists(args.dlc):
        problems.append(f"no dlc at {args.dlc}")
    if problems:
        print("bench/cuda: FAILED: " + "; ".join(problems))
        return 1
    arch = args.gpu_arch
    if arch is None:
        major = (int(gpu["compute"].split(".")[0]) if isinstance(gpu, dict)
                 else 9)
        arch = "sm_90" if major >= 9 else "sm_80"
    sizes = SELF_TEST if args.self_test else QUICK if args.quick else FULL

    work = args.keep or tempfile.mkdtemp(prefix="delta-bench-cuda-")
    os.makedirs(work, exist_ok=True)
    try:
        status = run_all(args, gpu, toolkit, arch, sizes, work, started,
                         deadline)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return status


def run_all(args, gpu, toolkit, arch, sizes, work, started, deadline):
    builder = Builder(args, toolkit, arch, work, deadline)
    built, build_errors = build_all(builder, sizes)
    build_s = time.monotonic() - started
    print(f"bench/cuda: built {len(built)} of {len(built) + len(build_errors)}"
          f" in {build_s:.1f} s ({arch})", flush=True)
    failures = [f"build {name}: {error}"
                for name, error in build_errors.items()]

    env = dict(os.environ)
    env.update({
        # The CPU libraries' 2 threads (the GPU libraries' host code shares
        # the setting: one process).
        "DELTA_NUM_THREADS": "2",
        # Plain FP32 everywhere unless a library opts in itself.
        "NVIDIA_TF32_OVERRIDE": "0",
        "BENCH_MIN_TIME": os.environ.get("BENCH_MIN_TIME",
                                         "0.05" if args.quick else "0.2"),
        "BENCH_MAX_TIME": os.environ.get("BENCH_MAX_TIME",
                                         "1" if args.quick else "3"),
    })
    runner = Runner(deadline, env)
    cpu_only = ["--cpu-only"] if args.self_test else []
    if "contraction" in built and not args.self_test:
        runner("contraction", built["contraction"] + sizes["contraction"])
    if "chain" in built and not args.self_test:
        runner("chain", built["chain"] + [str(n) for n in sizes["chain"]])
    for mlp in sizes["mlp"]:
        if mlp_key(mlp) in built:
            runner(mlp_key(mlp), built[mlp_key(mlp)] + cpu_only)
    if sizes["gmm"] and "gmm" in built:
        runner("gmm", built["gmm"] + cpu_only + sizes["gmm"])
    torch_note = None
    if sizes["mlp"]:
        torch_records = runner("pytorch mlp", [
            sys.executable, os.path.join(HERE, "torch_mlp.py"),
            "--device", "cpu" if args.self_test else "cuda"] +
            [":".join(str(s) for s in mlp) for mlp in sizes["mlp"]])
        for record in torch_records:
            if "skipped" in record:
                torch_note = f"PyTorch skipped: {record['skipped']}"
            elif "torch" in record:
                torch_note = f"PyTorch {record['torch']} on {record['device']}"
    failures += runner.failures
    check_torch(runner.records, failures)

    rows = make_rows(runner.records)
    print()
    if isinstance(gpu, dict):
        print(f"{gpu['name']} (compute {gpu['compute']}, driver "
              f"{gpu['driver']}, {gpu['memory_gib']} GiB); CPU rows on 2 "
              "threads; medians per call, data on the device")
    print_table(rows)
    if args.self_test:
        for record in runner.records:
            if "median_s" in record:
                print(f"self-test: {record['case']} {record['params']}: "
                      f"{record['impl']} {format_seconds(record['median_s'])}")
            elif "check" in record:
                print(f"self-test: {record['case']} {record['params']}: "
                      f"{record['check']}: error {record['error']:.3g} "
                      f"({'ok' if record['ok'] else 'FAILED'})")
    if torch_note:
        print(torch_note)
    wall_s = time.monotonic() - started
    print(f"bench/cuda: {len(rows)} ratios, {len(failures)} failures, "
          f"{wall_s:.0f} s" + (" (self-test: CPU halves only)"
                               if args.self_test else ""))
    for failure in failures:
        print(f"FAIL: {failure}")

    result = {
        "command": " ".join([os.path.relpath(__file__)] + sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "gpu": gpu if isinstance(gpu, dict) else None,
        "gpu_arch": arch,
        "host": {"cores": os.cpu_count(), "cpu": cpu_model()},
        "quick": args.quick, "self_test": args.self_test,
        "build_s": round(build_s, 1),
        "wall_s": round(wall_s, 1),
        "env": {k: env[k] for k in ("DELTA_NUM_THREADS", "BENCH_MIN_TIME",
                                    "BENCH_MAX_TIME", "NVIDIA_TF32_OVERRIDE")},
        "rows": rows, "measurements": runner.records, "failures": failures,
        "pytorch": torch_note,
    }
    json_path = args.json or os.path.join(HERE, "results", "latest.json")
    if args.self_test and not args.json:
        json_path = os.path.join(work, "self_test.json")
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w", encoding="utf-8") as file:
        json.dump(result, file, indent=1)
        file.write("\n")
    if not args.self_test or args.json:
        print(f"bench/cuda: wrote {json_path}")
    if failures:
        # The drivers' whole output, for the failures' context.
        log_path = os.path.splitext(json_path)[0] + ".log"
        with open(log_path, "w", encoding="utf-8") as file:
            file.write("".join(f"build {name}: {error}\n"
                               for name, error in build_errors.items()))
            file.write("".join(runner.log))
        print(f"bench/cuda: the drivers' output is in {log_path}")
    return 1 if failures else 0


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


if __name__ == "__main__":
    sys.exit(main())
