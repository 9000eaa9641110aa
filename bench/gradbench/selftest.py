#!/usr/bin/python3
"""Self-test of the GradBench tool: speaks the protocol (SPEC.md) to the tool
on small inputs of every eval and checks its answers against independent
NumPy references written from the specification (references.py; finite
differences where there is no closed form handy), then sends malformed
messages and inputs that the modules' libraries reject, which must get
`success: false` and an error text, never a crash.

Usage: selftest.py [TOOL] [EVAL...]   (TOOL defaults to bench/gradbench/tool)
       selftest.py [TOOL] --ht-default [MAX_POINTS]   (ht on its default
       workload sizes, up to MAX_POINTS points; slow, not run by ctest)
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

# The comparison (SPEC §2) and the references, shared with bench.py.
import references
from references import (HT_DEFAULT_POINTS, fd_gradient, gmm_objective, ht_default_input, ht_input, ht_jacobian,
                        ht_objective, llsq_primal, lstm_objective, mismatches, ode_primal, tolist)

RNG = np.random.default_rng(31337)
RUNS = {"min_runs": 2, "min_seconds": 0}


class Tool:
    def __init__(self, command):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.next_id = 0

    def send_line(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        response = self.process.stdout.readline()
        if not response:
            raise RuntimeError(f"the tool closed its output after {line[:100]!r}")
        return json.loads(response)

    def send(self, message):
        message = {"id": self.next_id, **message}
        self.next_id += 1
        response = self.send_line(json.dumps(message))
        if response.get("id") != message["id"]:
            raise RuntimeError(f"id {response.get('id')} answers message {message['id']}")
        return response

    def close(self):
        self.process.stdin.close()
        status = self.process.wait(timeout=30)
        if status != 0:
            raise RuntimeError(f"the tool exited with status {status} on EOF")


def llsq_case():
    x, n = RNG.random(5), 9
    y, r, t = llsq_primal(x, n)
    g = [-np.sum(r * t**j) for j in range(len(x))]
    inp = {"x": tolist(x), "n": n, **RUNS}
    return [("primal", inp, float(y)), ("gradient", inp, tolist(g))]


def lse_case():
    x = RNG.random(7) * 3
    a = x.max()
    s = np.exp(x - a).sum()
    inp = {"x": tolist(x), **RUNS}
    return [("primal", inp, float(a + math.log(s))), ("gradient", inp, tolist(np.exp(x - a) / s))]


def ode_case():
    x, s = RNG.random(5) + 0.5, 3
    inp = {"x": tolist(x), "s": s, **RUNS}
    g = fd_gradient(lambda v: ode_primal(v, s)[-1], x)
    return [("primal", inp, tolist(ode_primal(x, s))), ("gradient", inp, tolist(g))]


def kmeans_case():
    points = RNG.random((12, 3))
    centroids = points[-4:].copy()
    dist = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(-1)
    nearest = dist.argmin(1)
    cost = dist.min(1).sum()
    direction = np.array([centroids[j] - points[nearest == j].mean(0) for j in range(4)])
    inp = {"points": tolist(points), "centroids": tolist(centroids), **RUNS}
    return [("cost", inp, float(cost)), ("dir", inp, tolist(direction))]


def gmm_case():
    d, k, n, m, gamma = 3, 2, 5, 1, 1.3
    x, alpha = RNG.normal(size=(n, d)), RNG.normal(size=k)
    mu, q, l = RNG.random((k, d)), RNG.normal(size=(k, d)) * 0.3, RNG.normal(size=(k, d * (d - 1) // 2))
    args = dict(x=x, alpha=alpha, mu=mu, q=q, l=l, m=m, gamma=gamma)
    jac = {}
    for key in ("alpha", "mu", "q", "l"):
        jac[key] = tolist(fd_gradient(lambda v: gmm_objective(**{**args, key: v}), args[key]))
    inp = {"d": d, "k": k, "n": n, "x": tolist(x), "m": m, "gamma": gamma, "alpha": tolist(alpha),
           "mu": tolist(mu), "q": tolist(q), "l": tolist(l), **RUNS}
    return [("objective", inp, float(gmm_objective(**args))), ("jacobian", inp, jac)]


FEAT = np.array([0.3, -0.2])


def ba_residual(params):
    return references.ba_residual(params, FEAT)


def ba_case():
    n, m, p = 3, 4, 17
    cam = np.array([0.1, -0.2, 0.15, 0.3, -0.1, -4.0, 1.2, 0.05, -0.04, 0.01, -0.002])
    X, w = np.array([0.5, -0.3, 1.0]), 0.8
    params = np.concatenate([cam, X, [w]])
    e = ba_residual(params)
    J = np.stack([fd_gradient(lambda v: ba_residual(v)[c], params) for c in range(2)])  # 2 x 15
    rows, cols, vals = [0], [], []
    for i in range(p):
        for c in range(2):
            cols += list(range(11 * (i % n), 11 * (i % n) + 11)) + [11 * n + 3 * (i % m) + t for t in range(3)] + [11 * n + 3 * m + i]
            vals += list(J[c])
            rows.append(rows[-1] + 15)
    for i in range(p):
        cols.append(11 * n + 3 * m + i)
        vals.append(-2 * w)
        rows.append(rows[-1] + 1)
    truncate = lambda v: v[:30] + [v[-1]]
    inp = {"n": n, "m": m, "p": p, "cam": tolist(cam), "x": tolist(X), "w": w, "feat": tolist(FEAT), **RUNS}
    objective = {"reproj_error": {"elements": tolist(e), "repeated": p}, "w_err": {"element": 1 - w * w, "repeated": p}}
    jacobian = {"rows": truncate(rows), "cols": truncate(cols), "vals": truncate(tolist(vals))}
    return [("objective", inp, objective), ("jacobian", inp, jacobian)]


def lstm_case():
    l, b, c = 2, 3, 5
    main, extra, state = RNG.random((2 * l, 4 * b)), RNG.random((3, b)), RNG.random((2 * l, b))
    seq = RNG.integers(0, 2, size=(c, b)).astype(float)
    gm = fd_gradient(lambda v: lstm_objective(v, extra, state, seq), main)
    ge = fd_gradient(lambda v: lstm_objective(main, v, state, seq), extra)
    inp = {"main_params": tolist(main), "extra_params": tolist(extra), "state": tolist(state), "sequence": tolist(seq), **RUNS}
    return [("objective", inp, float(lstm_objective(main, extra, state, seq))),
            ("jacobian", inp, tolist(np.concatenate([gm.ravel(), ge.ravel()])))]


def det_case():
    ell = 4
    A = RNG.random((ell, ell))
    cof = np.array([[(-1) ** (r + c) * np.linalg.det(np.delete(np.delete(A, r, 0), c, 1)) for c in range(ell)] for r in range(ell)])
    inp = {"A": tolist(A.ravel()), "ell": ell, **RUNS}
    return [("primal", inp, float(np.linalg.det(A))), ("gradient", inp, tolist(cof.ravel()))]


# ht (SPEC §3.8): a random rigged hand (references.ht_input); the full-size
# one is what `selftest.py --ht-default` and bench.py use.


def ht_case():
    cases = []
    for complicated, mirrored in ((False, True), (True, False)):
        inp = {**ht_input(RNG, 22, 40, 30, 9, complicated, mirrored), **RUNS}
        theta, us, data = np.array(inp["theta"]), inp["us"], inp["data"]
        cases += [("objective", inp, tolist(ht_objective(theta, us, data))),
                  ("jacobian", inp, tolist(ht_jacobian(theta, us, data)))]
    return cases


def nested_case(key, value, expected):
    inp = {key: value, **RUNS}
    return [(mode, inp, expected) for mode in ("rr", "ff", "fr", "rf")]


CASES = {
    "hello": lambda: [("square", 3.0, 9.0), ("double", 3.0, 6.0), ("square", 1.5, 2.25)],
    "llsq": llsq_case,
    "lse": lse_case,
    "ode": ode_case,
    "kmeans": kmeans_case,
    "gmm": gmm_case,
    "ba": ba_case,
    "lstm": lstm_case,
    "det": det_case,
    "ht": ht_case,
    "particle": lambda: nested_case("w", 0.0, 0.2071918746486116),
    "saddle": lambda: nested_case("start", [1.0, 1.0], [8.246324826140356e-06] * 4),
}


def check_eval(tool, name):
    errors = []
    response = tool.send({"kind": "define", "module": name})
    if not response.get("success"):
        return [f"define failed: {response.get('error')}"]
    for function, inp, expected in CASES[name]():
        response = tool.send({"kind": "evaluate", "module": name, "function": function, "input": inp, "description": "selftest"})
        if not response.get("success"):
            errors.append(f"{function}: {response.get('error')}")
            continue
        if "error" in response:
            errors.append(f"{function}: a successful response carries an error")
        timings = [t for t in response.get("timings", []) if t.get("name") == "evaluate"]
        wanted = inp["min_runs"] if isinstance(inp, dict) else 1
        if len(timings) < wanted or not all(isinstance(t["nanoseconds"], int) and t["nanoseconds"] >= 0 for t in timings):
            errors.append(f"{function}: {len(timings)} evaluate timings, expected at least {wanted}")
        errors += [f"{function}: {m}" for m in mismatches(response.get("output"), expected)[:10]]
        tool.send({"kind": "analysis", "of": tool.next_id - 1, "valid": True})
    return errors


def check_malformed(tool):
    errors = []

    def expect_failure(line, what):
        response = tool.send_line(line)
        if response.get("success") is not False or not isinstance(response.get("error"), str):
            errors.append(f"{what}: {response}")

    expect_failure("this is not json", "malformed JSON")
    expect_failure("[1, 2, 3]", "a list, not an object")
    expect_failure('{"id": 100, "kind": "evaluate"', "a truncated line")
    base = {"kind": "evaluate", "module": "llsq", "function": "primal"}
    for what, message in [
        ("undefined module", {"kind": "evaluate", "module": "nothing", "function": "f", "input": {}}),
        ("unsupported module", {"kind": "define", "module": "nothing"}),
        ("missing input", base),
        ("wrong input type", {**base, "input": {"x": "abc", "n": 3, **RUNS}}),
        ("missing field", {**base, "input": {"x": [1.0], **RUNS}}),
        ("ragged list", {"kind": "evaluate", "module": "kmeans", "function": "cost", "input": {"points": [[1.0, 2.0], [3.0]], "centroids": [[1.0, 2.0]], **RUNS}}),
        ("unknown function", {**base, "function": "nothing", "input": {"x": [1.0], "n": 3, **RUNS}}),
        ("bad min_runs", {**base, "input": {"x": [1.0], "n": 3, "min_runs": "x", "min_seconds": 0}}),
    ]:
        response = tool.send(message)
        if response.get("success") is not False or not isinstance(response.get("error"), str):
            errors.append(f"{what}: {response}")
    # Errors that the module's library finds and reports through its C ABI
    # (a status and the context's message): the answer carries both.
    tool.send({"kind": "define", "module": "kmeans"})
    for what, message, expected in [
        ("sizes the library rejects",
         {"kind": "evaluate", "module": "kmeans", "function": "cost",
          "input": {"points": [[1.0, 2.0]], "centroids": [[1.0, 2.0, 3.0]], **RUNS}},
         "size mismatch: kmeans_cost: "),
        ("a run-time error of the module", {**base, "input": {"x": [1.0], "n": -3, **RUNS}},
         "run-time error: "),
    ]:
        response = tool.send(message)
        if response.get("success") is not False or not str(response.get("error")).startswith(expected):
            errors.append(f"{what}: {response}")
    response = tool.send({"kind": "something new"})
    if set(response) != {"id"}:
        errors.append(f"unknown kind: {response}")
    return errors


def check_ht_default(tool, max_points):
    """The default workload sizes against the reference (slow: not in ctest)."""
    failed = 0
    tool.send({"kind": "define", "module": "ht"})
    for i, pts in enumerate(p for p in HT_DEFAULT_POINTS if p <= max_points):
        inp = {**ht_default_input(pts), "min_runs": 1, "min_seconds": 0}
        theta, us, data = np.array(inp["theta"]), inp["us"], inp["data"]
        for function, reference in (("objective", ht_objective), ("jacobian", ht_jacobian)):
            response = tool.send({"kind": "evaluate", "module": "ht", "function": function, "input": inp,
                                  "description": f"hand{i + 1}_t26_c{pts}"})
            errors = mismatches(response.get("output"), tolist(reference(theta, us, data))) if response.get("success") \
                else [str(response.get("error"))]
            ms = sum(t["nanoseconds"] for t in response.get("timings", []) if t["name"] == "evaluate") / 1e6
            print(f"{'PASS' if not errors else 'FAIL'} ht P={pts} {function} ({ms:.1f} ms)", flush=True)
            for error in errors[:10]:
                print(f"    {error}")
            failed += bool(errors)
    return failed


def main():
    args = sys.argv[1:]
    if "--ht-default" in args:
        # selftest.py [TOOL] --ht-default [MAX_POINTS]
        at = args.index("--ht-default")
        command = args[:at] or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "tool")]
        tool = Tool(command)
        tool.send({"kind": "start", "eval": "ht"})
        failed = check_ht_default(tool, int(args[at + 1]) if len(args) > at + 1 else HT_DEFAULT_POINTS[-1])
        tool.close()
        print(f"{failed} failed")
        return 1 if failed else 0
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    command = [args.pop(0)] if args and not args[0] in CASES else [os.path.join(root, "bench/gradbench/tool")]
    names = args or list(CASES)
    tool = Tool(command)
    failed = 0
    response = tool.send({"kind": "start", "eval": "selftest"})
    assert set(response) >= {"id"}, response
    if "llsq" not in names:
        tool.send({"kind": "define", "module": "llsq"})
    for name in names:
        errors = check_eval(tool, name)
        print(f"{'PASS' if not errors else 'FAIL'} {name}")
        for error in errors:
            print(f"    {error}")
        failed += bool(errors)
    errors = check_malformed(tool)
    print(f"{'PASS' if not errors else 'FAIL'} malformed messages")
    for error in errors:
        print(f"    {error}")
    failed += bool(errors)
    tool.close()
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
