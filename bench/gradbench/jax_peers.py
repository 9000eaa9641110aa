"""JAX versions of GradBench evals, timed on bench.py's workloads (same
data: seed 31337), for comparing Delta with JAX in the same run
(docs/gradbench.md). f64 (jax_enable_x64), jit-compiled per workload,
one thread; prints a Markdown table of the mean time per call in ms.

Usage: /work/main/build/bench-venv/bin/python bench/gradbench/jax_peers.py
       [--quick] [EVAL...]      EVAL: ode, kmeans
Pin it to a core (taskset -c 1) and run it alone.
"""
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the workloads)


def mean_time(f, seconds=1.0):
    jax.block_until_ready(f())  # compile
    runs, total = 0, 0.0
    while runs < 1 or total < seconds:
        start = time.perf_counter()
        jax.block_until_ready(f())
        total += time.perf_counter() - start
        runs += 1
    return total / runs


# --- ode: RK4 as a fori_loop over s steps (a scan: reverse-differentiable) --


def ode_solve(x, s):
    def F(y):
        return x * jnp.concatenate([jnp.ones(1), y[:-1]])

    h = 2.0 / s

    def step(_, y):
        k1 = F(y)
        k2 = F(y + h / 2 * k1)
        k3 = F(y + h / 2 * k2)
        k4 = F(y + h * k3)
        return y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6

    return jax.lax.fori_loop(0, s, step, jnp.zeros_like(x))


def ode(inp):
    x, s = jnp.asarray(inp["x"]), inp["s"]
    primal = jax.jit(lambda x: ode_solve(x, s))
    gradient = jax.jit(jax.grad(lambda x: ode_solve(x, s)[-1]))
    return {"primal": lambda: primal(x), "gradient": lambda: gradient(x)}


# --- kmeans: the cost and J / (H·1), H·1 by forward over reverse (jvp of grad)


def kmeans_cost(points, centroids):
    d = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(2)
    return d.min(1).sum()


def kmeans(inp):
    p, c = jnp.asarray(inp["points"]), jnp.asarray(inp["centroids"])
    cost = jax.jit(kmeans_cost)
    g = jax.grad(kmeans_cost, argnums=1)

    @jax.jit
    def direction(p, c):
        j, h = jax.jvp(lambda c: g(p, c), (c,), (jnp.ones_like(c),))
        return j / h

    return {"cost": lambda: cost(p, c), "dir": lambda: direction(p, c)}


PEERS = {"ode": ode, "kmeans": kmeans}


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    names = [a for a in args if not a.startswith("--")] or list(PEERS)
    print("| eval | workload | function | JAX (ms) |")
    print("| --- | --- | --- | ---: |")
    for name in names:
        workloads = list(bench.EVALS[name]())
        if quick:
            workloads = workloads[: (len(workloads) + 1) // 2]
        for description, inp, functions, _ in workloads:
            calls = PEERS[name](inp)
            for function in functions:
                ms = mean_time(calls[function]) * 1e3
                print(f"| {name} | {description} | {function} | {ms:.3f} |", flush=True)


if __name__ == "__main__":
    main()
