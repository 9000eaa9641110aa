#!/usr/bin/python3
"""Runs the GradBench tool on the default workloads of SPEC.md, checks every
output against an independent NumPy reference (references.py) with the
validator's rule (SPEC §2: |a − e| / max(1, |a| + |e|) ≤ 1e-4, the same JSON
shape and keys, integers exact, no NaN/inf), and times it against, where
there is one, a vectorized NumPy version of the same function; prints a
Markdown table (docs/gradbench.md), then the failures and a summary per
eval. Exit status 1 if a define, an evaluate or a check failed.

Usage: bench.py [--quick] [--check-only] [EVAL...]
  --quick       the smaller half of each eval's sizes
  --check-only  run each function once (min_runs = 1, min_seconds = 0) and
                skip the NumPy timings: the fastest full verification
"""
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

import references

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNS = {"min_runs": 1, "min_seconds": 1}


def rng():
    return np.random.default_rng(31337)


def llsq():
    for n in [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392]:
        x = rng().random(128)
        yield f"n={n},m=128", {"x": x.tolist(), "n": n}, ("primal", "gradient"), lambda x=x, n=n: llsq_ref(x, n)


def llsq_ref(x, n):
    def residual():
        t = -1 + 2 * np.arange(n) / (n - 1)
        powers = t[:, None] ** np.arange(len(x))[None, :]
        return np.sign(t) - powers @ x, powers

    def primal():
        r, _ = residual()
        return 0.5 * r.dot(r)

    def gradient():
        r, powers = residual()
        return -(r @ powers)

    return [primal, gradient]


def lse():
    for k in range(10):
        n = 2500 * 2**k
        x = rng().random(n)
        yield f"n={n}", {"x": x.tolist()}, ("primal", "gradient"), lambda x=x: lse_ref(x)


def lse_ref(x):
    def primal():
        a = x.max()
        return a + math.log(np.exp(x - a).sum())

    def gradient():
        e = np.exp(x - x.max())
        return e / e.sum()

    return [primal, gradient]


def ode():
    for n, s in sorted(((n, s) for n in (1000, 10000, 100000) for s in (1, 10, 100)), key=lambda p: p[0] * p[1]):
        x = rng().random(n)
        yield f"n={n},s={s}", {"x": x.tolist(), "s": s}, ("primal", "gradient"), lambda x=x, s=s: ode_ref(x, s)


def ode_ref(x, s):
    return [lambda: references.ode_primal(x, s), None]


def kmeans():
    sizes = sorted(((k, n, d) for k in (10, 100, 1000) for n in (1000, 10000) for d in (8, 16)), key=lambda p: p[0] * p[1] * p[2])
    for k, n, d in sizes:
        points = rng().random((n, d))
        centroids = points[-k:].copy()
        yield f"k={k},n={n},d={d}", {"points": points.tolist(), "centroids": centroids.tolist()}, ("cost", "dir"), \
            lambda p=points, c=centroids: kmeans_ref(p, c)


def kmeans_ref(points, centroids):
    def dist():
        return (points * points).sum(1)[:, None] - 2 * points @ centroids.T + (centroids * centroids).sum(1)[None, :]

    def cost():
        return dist().min(1).sum()

    def direction():
        nearest = dist().argmin(1)
        k = centroids.shape[0]
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, points)
        counts = np.bincount(nearest, minlength=k)[:, None]
        return centroids - sums / counts

    return [cost, direction]


def gmm():
    sizes = sorted(((d, k) for d in (2, 10, 20, 32, 64) for k in (5, 10, 25, 50, 100)), key=lambda p: p[0] * p[1])
    for d, k in sizes:
        g, n = rng(), 1000
        inp = {"d": d, "k": k, "n": n, "x": g.normal(size=(n, d)).tolist(), "m": 0, "gamma": 1.0,
               "alpha": g.normal(size=k).tolist(), "mu": g.random((k, d)).tolist(), "q": g.normal(size=(k, d)).tolist(),
               "l": g.normal(size=(k, d * (d - 1) // 2)).tolist()}
        yield f"{d}_{k}_{n}", inp, ("objective", "jacobian"), lambda inp=inp: gmm_ref(inp)


def gmm_ref(inp):
    x, alpha, mu, q, l = (np.array(inp[key]) for key in ("x", "alpha", "mu", "q", "l"))
    n, d = x.shape
    k = alpha.shape[0]
    rows, cols = np.tril_indices(d, -1)
    order = np.lexsort((rows, cols))  # column by column
    rows, cols = rows[order], cols[order]

    def objective():
        Q = np.zeros((k, d, d))
        Q[:, np.arange(d), np.arange(d)] = np.exp(q)
        Q[:, rows, cols] = l
        y = np.einsum("kij,nkj->nki", Q, x[:, None, :] - mu[None, :, :])
        beta = alpha + q.sum(1) - 0.5 * (y * y).sum(2)
        a = beta.max(1, keepdims=True)
        lse = (a[:, 0] + np.log(np.exp(beta - a).sum(1))).sum()
        aa = alpha.max()
        return -n * d / 2 * math.log(2 * math.pi) + lse - n * (aa + math.log(np.exp(alpha - aa).sum())) \
            - (0.5 * (np.exp(q) ** 2).sum() + 0.5 * (l * l).sum())

    return [objective, None]


def ba():
    files = [("ba1", 49, 7776, 31843), ("ba2", 21, 11315, 36455), ("ba3", 161, 48126, 182072), ("ba4", 372, 47423, 204472),
             ("ba5", 257, 65132, 225911), ("ba6", 539, 65220, 277273), ("ba7", 93, 61203, 287451), ("ba8", 88, 64298, 383937),
             ("ba9", 810, 88814, 393775), ("ba10", 1197, 126327, 563734), ("ba11", 1723, 156502, 678718),
             ("ba12", 253, 163691, 899155), ("ba13", 245, 198739, 1091386), ("ba14", 356, 226730, 1255268)]
    for name, n, m, p in files:
        g = rng()
        cam = g.random(11) * 0.1
        cam[5] = -3.0
        inp = {"n": n, "m": m, "p": p, "cam": cam.tolist(), "x": g.random(3).tolist(), "w": float(g.random()), "feat": g.random(2).tolist()}
        yield f"{name}_n{n}_m{m}_p{p}", inp, ("objective", "jacobian"), None


def lstm():
    for l, c in sorted(((l, c) for l in (2, 4, 6) for c in (1024, 4096, 8192)), key=lambda p: p[0] * p[1]):
        g, b = rng(), 14
        codes = g.integers(32, 8217, size=c)
        seq = [[float((int(ch) >> (b - 1 - j)) & 1) for j in range(b)] for ch in codes]
        inp = {"main_params": g.random((2 * l, 4 * b)).tolist(), "extra_params": g.random((3, b)).tolist(),
               "state": g.random((2 * l, b)).tolist(), "sequence": seq}
        yield f"l={l},c={c}", inp, ("objective", "jacobian"), None


def det():
    for ell in range(5, 12):
        yield f"{ell}", {"A": rng().random(ell * ell).tolist(), "ell": ell}, ("primal", "gradient"), None


def ht():
    for i, pts in enumerate(references.HT_DEFAULT_POINTS):
        inp = references.ht_default_input(pts)
        yield f"hand{i + 1}_t26_c{pts}", inp, ("objective", "jacobian"), lambda inp=inp: ht_ref(inp)


def ht_ref(inp):
    theta, us, data = references.ht_arrays(inp)  # converted once, outside the timing, as the tool does
    return [lambda: references.ht_objective(theta, us, data), None]


def particle():
    yield "w=0", {"w": 0.0}, ("rr", "ff", "fr", "rf"), None


def saddle():
    yield "w=0", {"start": [1.0, 1.0]}, ("rr", "ff", "fr", "rf"), None


def hello():
    """SPEC §3.1: a bare number in and out, no run fields; each input is the
    previous output (as the eval sends it), checked against the exact chain
    with numpy's isclose."""
    yield "chain", None, ("square", "double") * 4, None


HELLO_CHAIN = [1.0, 1.0, 2.0, 4.0, 8.0, 64.0, 128.0, 16384.0, 32768.0]

EVALS = {f.__name__: f for f in (hello, llsq, lse, ode, kmeans, gmm, ba, lstm, det, ht, particle, saddle)}


class Tool:
    """Delta's GradBench tool as a subprocess speaking the protocol: send()
    writes one message (numbered) and returns its response."""

    def __init__(self, command=None, env=None):
        command = command or [os.environ.get("GRADBENCH_TOOL", os.path.join(ROOT, "bench/gradbench/tool"))]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.ident = 0

    def send(self, message):
        self.process.stdin.write(json.dumps({"id": self.ident, **message}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the tool closed its output after message {self.ident}")
        response = json.loads(line)
        if response.get("id") != self.ident:
            raise RuntimeError(f"id {response.get('id')} answers message {self.ident}")
        self.ident += 1
        return response

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def mean_time(f, seconds=0.3):
    runs, total = 0, 0.0
    while runs < 1 or total < seconds:
        start = time.perf_counter()
        f()
        total += time.perf_counter() - start
        runs += 1
    return total / runs


def plain(value):
    """A reference's output as the JSON it stands for (arrays as lists are
    compared at once by references.Comparison, so they stay arrays)."""
    if isinstance(value, dict):
        return {key: plain(v) for key, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def main():
    args = sys.argv[1:]
    quick, check_only = "--quick" in args, "--check-only" in args
    names = [a for a in args if not a.startswith("--")] or list(EVALS)
    runs = {"min_runs": 1, "min_seconds": 0} if check_only else RUNS
    tool = Tool()
    send = tool.send

    started = time.perf_counter()
    failures = []  # (eval, workload, function, messages)
    summary = {}  # eval -> [workloads, failed, worst error, where, worst |a − e|/|e|, where]
    send({"kind": "start", "eval": "bench"})
    print("| eval | workload | function | Delta (ms) | NumPy (ms) | check |")
    print("| --- | --- | --- | ---: | ---: | --- |")
    for name in names:
        entry = summary.setdefault(name, [0, 0, 0.0, "", 0.0, ""])
        response = send({"kind": "define", "module": name})
        if not response.get("success"):
            print(f"| {name} | | | not defined | | FAIL |")
            failures.append((name, "", "define", [str(response.get("error"))]))
            entry[1] += 1
            continue
        workloads = list(EVALS[name]())
        if quick and name != "hello":
            workloads = workloads[: (len(workloads) + 1) // 2]
        for description, inp, functions, reference in workloads:
            entry[0] += 1
            workload_failed = False
            if name == "hello":
                expected = None
            else:
                expected = {key: plain(value) for key, value in references.expected_outputs(name, inp).items()}
            refs = reference() if reference and not check_only else [None] * len(functions)
            for step, (function, ref) in enumerate(zip(functions, refs + [None] * (len(functions) - len(refs)))):
                if name == "hello":
                    message_input = HELLO_CHAIN[0] if step == 0 else previous
                else:
                    message_input = {**inp, **runs}
                response = send({"kind": "evaluate", "module": name, "function": function, "input": message_input, "description": description})
                problems, check = [], ""
                if response.get("success"):
                    times = [t["nanoseconds"] for t in response.get("timings", []) if t.get("name") == "evaluate"]
                    delta = f"{np.mean(times) / 1e6:.3f}" if times else ""
                    wanted = 1 if name == "hello" else runs["min_runs"]
                    if len(times) < wanted:
                        problems.append(f"{len(times)} evaluate timings, expected at least {wanted}")
                    if "error" in response:
                        problems.append("a successful response carries an error")
                    output = response.get("output")
                    if name == "hello":
                        e = HELLO_CHAIN[step + 1]
                        ok = isinstance(output, (int, float)) and not isinstance(output, bool) and abs(output - e) <= 1e-8 + 1e-5 * abs(e)
                        problems += [] if ok else [f"output: {output!r} vs expected {e!r} (isclose)"]
                        check = "ok" if ok else "FAIL"
                        previous = output
                    else:
                        comparison = references.Comparison(output, expected[function])
                        problems += comparison.failures
                        worst = f"{comparison.worst:.1e} at {comparison.where}" if comparison.where else "exact"
                        check = (f"ok ({worst})" if not problems else f"FAIL ({len(problems)} problems; worst {worst})")
                        if comparison.where and (comparison.worst > entry[2] or not entry[3]):
                            entry[2], entry[3] = comparison.worst, f"{description} {function} {comparison.where}"
                        if comparison.relative_where and (comparison.relative > entry[4] or not entry[5]):
                            entry[4], entry[5] = comparison.relative, f"{description} {function} {comparison.relative_where}"
                    send({"kind": "analysis", "of": tool.ident - 1, "valid": not problems, **({"error": "; ".join(problems[:10])} if problems else {})})
                else:
                    delta = "failed"
                    problems.append("evaluate failed: " + str(response.get("error")))
                    check = "FAIL (evaluate failed)"
                if problems:
                    failures.append((name, description, function, problems))
                    workload_failed = True
                numpy = f"{mean_time(ref) * 1e3:.3f}" if ref else ""
                print(f"| {name} | {description} | {function} | {delta} | {numpy} | {check} |", flush=True)
            entry[1] += workload_failed
    tool.close()
    print()
    for name, description, function, problems in failures:
        print(f"FAIL {name} {description} {function}:")
        for problem in problems[:12]:
            print(f"    {problem}")
    print("| eval | workloads | failed | worst error by the rule (where) | worst \\|a − e\\|/\\|e\\| for \\|e\\| ≥ 1e-6·max\\|e\\| (where) |")
    print("| --- | ---: | ---: | --- | --- |")
    for name, (count, failed, worst, where, relative, relative_where) in summary.items():
        exact = "exact" if count > failed and name != "hello" else "-"
        print(f"| {name} | {count} | {failed} | {f'{worst:.1e} ({where})' if where else exact} "
              f"| {f'{relative:.1e} ({relative_where})' if relative_where else exact} |")
    print(f"\n{sum(s[0] for s in summary.values())} workloads, {sum(s[1] for s in summary.values())} failed, "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
