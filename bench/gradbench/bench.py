#!/usr/bin/python3
"""Times the GradBench tool on the default workloads of SPEC.md and, where
there is one, a vectorized NumPy reference of the same function; prints a
Markdown table (docs/gradbench.md). Not part of the test suite.

Usage: bench.py [--quick] [EVAL...]   (--quick: the smaller half of each eval's sizes)
"""
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

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
    def primal():
        y, h = np.zeros_like(x), 2.0 / s
        F = lambda y: x * np.concatenate([[1.0], y[:-1]])
        for _ in range(s):
            k1 = F(y)
            k2 = F(y + h / 2 * k1)
            k3 = F(y + h / 2 * k2)
            k4 = F(y + h * k3)
            y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        return y

    return [primal, None]


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
    import selftest  # the hand model and the reference live beside it

    for i, pts in enumerate(selftest.HT_DEFAULT_POINTS):
        inp = selftest.ht_default_input(pts)
        yield f"hand{i + 1}_t26_c{pts}", inp, ("objective", "jacobian"), lambda inp=inp: ht_ref(selftest, inp)


def ht_ref(selftest, inp):
    # Arrays converted once, outside the timing, as the tool does.
    data = {"model": {key: np.asarray(value) for key, value in inp["data"]["model"].items()},
            **{key: np.asarray(inp["data"][key]) for key in ("correspondences", "points")}}
    theta, us = np.asarray(inp["theta"]), np.asarray(inp["us"])
    return [lambda: selftest.ht_objective(theta, us, data), None]


def particle():
    yield "w=0", {"w": 0.0}, ("rr", "ff", "fr", "rf"), None


def saddle():
    yield "w=0", {"start": [1.0, 1.0]}, ("rr", "ff", "fr", "rf"), None


EVALS = {f.__name__: f for f in (llsq, lse, ode, kmeans, gmm, ba, lstm, det, ht, particle, saddle)}


def mean_time(f, seconds=0.3):
    runs, total = 0, 0.0
    while runs < 1 or total < seconds:
        start = time.perf_counter()
        f()
        total += time.perf_counter() - start
        runs += 1
    return total / runs


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    names = [a for a in args if a != "--quick"] or list(EVALS)
    tool = subprocess.Popen([os.environ.get("GRADBENCH_TOOL", os.path.join(ROOT, "bench/gradbench/tool"))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ident = 0

    def send(message):
        nonlocal ident
        tool.stdin.write(json.dumps({"id": ident, **message}) + "\n")
        tool.stdin.flush()
        ident += 1
        return json.loads(tool.stdout.readline())

    send({"kind": "start", "eval": "bench"})
    print("| eval | workload | function | Delta (ms) | NumPy (ms) |")
    print("| --- | --- | --- | ---: | ---: |")
    for name in names:
        if not send({"kind": "define", "module": name}).get("success"):
            print(f"| {name} | | | not defined | |")
            continue
        workloads = list(EVALS[name]())
        if quick:
            workloads = workloads[: (len(workloads) + 1) // 2]
        for description, inp, functions, reference in workloads:
            refs = reference() if reference else [None] * len(functions)
            for function, ref in zip(functions, refs + [None] * (len(functions) - len(refs))):
                response = send({"kind": "evaluate", "module": name, "function": function, "input": {**inp, **RUNS}, "description": description})
                if response.get("success"):
                    times = [t["nanoseconds"] for t in response["timings"] if t["name"] == "evaluate"]
                    delta = f"{np.mean(times) / 1e6:.3f}"
                else:
                    delta = "failed: " + response.get("error", "")[:60]
                numpy = f"{mean_time(ref) * 1e3:.3f}" if ref else ""
                print(f"| {name} | {description} | {function} | {delta} | {numpy} |", flush=True)
    tool.stdin.close()
    tool.wait()


if __name__ == "__main__":
    main()
