#!/usr/bin/python3
"""Delta's benchmark suite: builds each Delta benchmark (bench/cases/*.dl,
bench/gmm.dl, and the GradBench modules ba.dl and lstm.dl) with `dlc build -O3 --emit=obj`, links it into a C driver
(bench/drivers/*.c) together with the hand-written C references
(bench/ref/*.c, clang-19 -O3 -march=native) and OpenBLAS, runs PyTorch
(bench/torch_mlp.py) in the same run, and prints one table of medians and
ratios on 1 and 2 threads; the table is also written as JSON to
bench/results/. Run with /usr/bin/python3 (Debian's numpy/torch). See
bench/README.md."""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
CC = shutil.which("clang-19") or shutil.which("clang") or "cc"
CFLAGS = ["-O3", "-march=native", "-I" + ROOT]

GMM_DS = [2, 10, 20, 32, 64]
GMM_KS = [5, 10, 25, 50, 100, 200]
# ADBench/GradBench workloads: BA (n cameras, m points, p observations) ba1
# and ba3; LSTM (layers, characters, lanes) l2/l4 c1024 with GradBench's
# 14 lanes, and a wide one where the work per step dominates.
BA_SIZES = {"quick": [(49, 7776, 31843)],
            "full": [(49, 7776, 31843), (161, 48126, 182072)]}
LSTM_SIZES = {"quick": [(2, 1024, 14)],
              "full": [(2, 1024, 14), (4, 1024, 14), (2, 256, 1024)]}
MODULES = os.path.join(BENCH, "gradbench", "modules")

# (case, what Delta is compared against, target ratio of times delta/ref
# or None, description of the target)
TARGETS = {
    "elementwise": ("c", 1 / 0.85, ">= 0.85x STREAM triad bandwidth"),
    "matmul": ("openblas", 1 / 0.8, ">= 0.8x OpenBLAS sgemm"),
    "softmax": ("c", 1.0, "<= 1.0x hand C"),
    "gmm_objective": ("c", 1.0, "<= 1.0x hand C"),
    "gmm_gradient": ("c", 1.0, "<= 1.0x Manual gradient"),
    "ba_objective": ("c", None, ""),
    "ba_jacobian": ("c", 1.0, "<= 1.0x Manual Jacobian"),
    "lstm_objective": ("c", None, ""),
    "lstm_gradient": ("c", 1.0, "<= 1.0x Manual gradient"),
    "mlp": ("pytorch", 1 / 1.5, ">= 1.5x faster than PyTorch"),
    "vmap_matvec": ("delta-direct", 1.2, "within 1.2x of the contraction"),
    "per_example": ("c", 1.0, "<= 1.0x hand C"),
}

# Derivative cases whose table row also gives time(derivative) /
# time(objective), for Delta and for the reference.
OBJECTIVE_OF = {"gmm_gradient": "gmm_objective",
                "ba_jacobian": "ba_objective",
                "lstm_gradient": "lstm_objective"}


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(command, env=None, capture=True):
    result = subprocess.run(command, env=env, text=True,
                            stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.PIPE if capture else None)
    if result.returncode != 0:
        log("command failed: " + " ".join(command))
        if capture:
            log(result.stdout + result.stderr)
        raise SystemExit(1)
    return result.stdout if capture else ""


def apt_install(package):
    """Installs a Debian package the references need when we are root."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return
    log("%s is missing: apt-get install -y %s" % (package, package))
    subprocess.run(["apt-get", "install", "-y", package], check=False)


def ensure_openblas():
    """libopenblas-dev gives cblas.h and libopenblas.so."""
    def present():
        # cblas.h alone may come from another BLAS (libblas-dev): the
        # reference links libopenblas.
        header = os.path.exists("/usr/include/x86_64-linux-gnu/cblas.h") or \
            os.path.exists("/usr/include/cblas.h")
        library = any(os.path.exists(os.path.join(d, "libopenblas.so"))
                      for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib"))
        return header and library
    if not present():
        apt_install("libopenblas-dev")
    if present():
        return True
    log("libopenblas-dev is missing: the matmul reference is skipped")
    return False


def have_torch(python):
    """Debian's python3-torch, for the interpreter that runs torch_mlp.py."""
    def present():
        return subprocess.run([python, "-c", "import torch"],
                              capture_output=True).returncode == 0
    if not present() and python == "/usr/bin/python3":
        apt_install("python3-torch")
    return present()


def build(args, name, dl_text, driver, refs, defines=(), libs=()):
    """The Delta object, with its C `main` weakened so that the driver's
    wins, linked with the driver, the references and the runtime."""
    out = os.path.join(args.build_dir, name)
    with open(out + ".dl", "w") as f:
        f.write(dl_text)
    run([args.dlc, "build", "-O3", "--emit=obj", out + ".dl", "-o",
         out + ".o"])
    run(["objcopy", "--weaken-symbol=main", out + ".o"])
    sources = [os.path.join(BENCH, "drivers", driver)]
    sources += [os.path.join(BENCH, "ref", r) for r in refs]
    run([CC] + CFLAGS + ["-D" + d for d in defines] + sources +
        [out + ".o", args.runtime, "-o", out] + list(libs) +
        ["-lstdc++", "-lm", "-lpthread"])
    return out


def measure(program, threads, env_base):
    env = dict(env_base)
    env.update({"DELTA_NUM_THREADS": str(threads),
                "OPENBLAS_NUM_THREADS": str(threads),
                "BENCH_THREADS": str(threads)})
    rows = []
    for line in run(program if isinstance(program, list) else [program],
                    env=env).splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            row["threads"] = threads
            rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dlc", default=os.path.join(
        ROOT, "build", "release", "bin", "dlc"))
    parser.add_argument("--runtime", default=os.path.join(
        ROOT, "build", "release", "lib", "libdelta_runtime.a"))
    parser.add_argument("--build-dir", default=os.path.join(
        ROOT, "build", "bench"))
    parser.add_argument("--cases", default="elementwise,matmul,softmax,gmm,"
                        "ba,lstm,mlp,vmap_matvec,per_example")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--gmm", default="full",
                        help="full (d x K grid), quick (d10 K25, d64 K25) "
                        "or instances as D:K,D:K (e.g. 32:200,64:5)")
    parser.add_argument("--adbench", default="full",
                        help="BA and LSTM sizes: full (ba1, ba3; LSTM l2 and "
                        "l4 c1024, and b1024) or quick (ba1, LSTM l2 c1024)")
    parser.add_argument("--python", default="/usr/bin/python3",
                        help="interpreter with torch for the MLP reference")
    args = parser.parse_args()
    os.makedirs(args.build_dir, exist_ok=True)
    cases = args.cases.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    env = dict(os.environ)
    # The image presets the Haswell kernel, which halves sgemm speed on
    # these AVX-512 machines: compare against the best kernel.
    coretype = env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        log("unset OPENBLAS_CORETYPE=%s (AVX-512 kernel)" % coretype)

    programs = []  # (program, threads or None for every count)
    if "elementwise" in cases:
        text = open(os.path.join(BENCH, "cases", "elementwise.dl")).read()
        programs.append(build(args, "elementwise",
                              text.replace("@N@", "8388608"),
                              "elementwise.c", ["elementwise.c"],
                              ["BENCH_N=8388608"]))
    if "matmul" in cases and ensure_openblas():
        text = open(os.path.join(BENCH, "cases", "matmul.dl")).read()
        for n in (1024, 2048):
            programs.append(build(args, "matmul%d" % n,
                                  text.replace("@N@", str(n)), "matmul.c", [],
                                  ["BENCH_N=%d" % n], ["-lopenblas"]))
    if "softmax" in cases:
        programs.append(build(
            args, "softmax", open(os.path.join(BENCH, "cases",
                                               "softmax.dl")).read(),
            "softmax.c", ["softmax.c"]))
    if "gmm" in cases:
        text = open(os.path.join(BENCH, "gmm.dl")).read()
        grid = [(d, k) for d in GMM_DS for k in GMM_KS]
        if args.gmm == "quick":
            grid = [(10, 25), (64, 25)]
        elif args.gmm != "full":
            grid = [tuple(int(v) for v in pair.split(":"))
                    for pair in args.gmm.split(",")]
        for d, k in grid:
            programs.append(build(
                args, "gmm_d%d_k%d" % (d, k),
                text.replace("@N@", "1000").replace("@K@", str(k))
                .replace("@D@", str(d)), "gmm.c", ["gmm.c"],
                ["BENCH_GMM_N=1000", "BENCH_GMM_K=%d" % k,
                 "BENCH_GMM_D=%d" % d]))
    if "ba" in cases:
        text = open(os.path.join(MODULES, "ba.dl")).read()
        for n, m, p in BA_SIZES[args.adbench]:
            programs.append(build(
                args, "ba_p%d" % p, text, "ba.c", ["ba.c"],
                ["BENCH_BA_N=%d" % n, "BENCH_BA_M=%d" % m,
                 "BENCH_BA_P=%d" % p]))
    if "lstm" in cases:
        text = open(os.path.join(MODULES, "lstm.dl")).read()
        for l, c, b in LSTM_SIZES[args.adbench]:
            programs.append(build(
                args, "lstm_l%d_c%d_b%d" % (l, c, b), text, "lstm.c",
                ["lstm.c"], ["BENCH_LSTM_L=%d" % l, "BENCH_LSTM_C=%d" % c,
                             "BENCH_LSTM_B=%d" % b]))
    if "mlp" in cases:
        programs.append(build(
            args, "mlp", open(os.path.join(BENCH, "cases", "mlp.dl")).read(),
            "mlp.c", []))
        if have_torch(args.python):
            programs.append([args.python, os.path.join(BENCH,
                                                       "torch_mlp.py")])
        else:
            log("%s has no torch (Debian: python3-torch): the PyTorch "
                "reference is skipped" % args.python)
    if "vmap_matvec" in cases:
        programs.append(build(
            args, "vmap_matvec",
            open(os.path.join(BENCH, "cases", "vmap_matvec.dl")).read(),
            "vmap_matvec.c", []))
    if "per_example" in cases:
        programs.append(build(
            args, "per_example",
            open(os.path.join(BENCH, "cases", "per_example.dl")).read(),
            "per_example.c", ["per_example.c"]))

    load_before = open("/proc/loadavg").read().split()[:3]
    rows = []
    for program in programs:
        for t in threads:
            name = program[-1] if isinstance(program, list) else program
            log("running %s on %d thread(s)" % (os.path.basename(name), t))
            rows += measure(program, t, env)
    load_after = open("/proc/loadavg").read().split()[:3]

    table = tabulate(rows)
    print_table(table)
    print("load average before/after: %s / %s (2 vCPUs; above ~0.5 the "
          "numbers are disturbed)" % (" ".join(load_before),
                                      " ".join(load_after)))
    results = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": platform.processor() or platform.machine(),
        "cpu": cpu_name(), "nproc": os.cpu_count(),
        "openblas_coretype_preset": coretype,
        "load_before": load_before, "load_after": load_after,
        "rows": rows, "table": table,
    }
    os.makedirs(os.path.join(BENCH, "results"), exist_ok=True)
    path = os.path.join(BENCH, "results", "latest.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print("JSON: " + os.path.relpath(path, ROOT))


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def tabulate(rows):
    """One line per (case, params, threads): Delta's median, the
    reference's, and time(delta)/time(reference); the derivatives of GMM,
    BA and LSTM add time(derivative)/time(objective)."""
    by_key = {}
    for row in rows:
        key = (row["case"], row["params"], row["threads"])
        by_key.setdefault(key, {})[row["impl"]] = row
    table = []
    for (case, params, t), impls in by_key.items():
        ref_prefix, target, target_text = TARGETS.get(case, ("c", None, ""))
        ref = next((impls[i] for i in impls if i.startswith(ref_prefix)),
                   None)
        delta = impls.get("delta")
        entry = {"case": case, "params": params, "threads": t,
                 "delta_s": delta["median_s"] if delta else None,
                 "reference": ref["impl"] if ref else None,
                 "reference_s": ref["median_s"] if ref else None,
                 "target": target_text}
        if delta and ref:
            entry["ratio"] = delta["median_s"] / ref["median_s"]
            entry["meets_target"] = target is None or \
                entry["ratio"] <= target
        if case in OBJECTIVE_OF:
            objective = by_key.get((OBJECTIVE_OF[case], params, t), {})
            if "delta" in objective and delta:
                entry["grad_over_objective"] = \
                    delta["median_s"] / objective["delta"]["median_s"]
            if "c" in objective and ref:
                entry["ref_grad_over_objective"] = \
                    ref["median_s"] / objective["c"]["median_s"]
        table.append(entry)
    return table


def print_table(table):
    header = ("case", "params", "thr", "delta", "reference", "ref",
              "delta/ref", "note")
    lines = []
    for e in table:
        note = ""
        if "grad_over_objective" in e:
            note = "grad/obj %.2f (C %.2f)" % (
                e["grad_over_objective"],
                e.get("ref_grad_over_objective", float("nan")))
        if "meets_target" in e and not e["meets_target"]:
            note = (note + "; " if note else "") + "misses " + e["target"]
        lines.append((e["case"], e["params"], str(e["threads"]),
                      fmt_time(e["delta_s"]), e["reference"] or "-",
                      fmt_time(e["reference_s"]),
                      "%.2f" % e["ratio"] if "ratio" in e else "-", note))
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    for line in [header] + lines:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)))


def fmt_time(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return "%.1f us" % (seconds * 1e6)
    if seconds < 1:
        return "%.2f ms" % (seconds * 1e3)
    return "%.2f s" % seconds


if __name__ == "__main__":
    main()
