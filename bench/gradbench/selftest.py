#!/usr/bin/python3
"""Self-test of the GradBench tool: speaks the protocol (SPEC.md) to the tool
on small inputs of every eval and checks its answers against independent
NumPy references written from the specification (finite differences where
there is no closed form handy), then sends malformed messages and inputs
that the modules' libraries reject, which must get `success: false` and an
error text, never a crash.

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


# --- comparison as the validator does it (SPEC §2) -------------------------


def mismatches(actual, expected, path="output"):
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            return [f"{path}: keys {sorted(actual) if isinstance(actual, dict) else type(actual)} vs {sorted(expected)}"]
        return [m for key in expected for m in mismatches(actual[key], expected[key], f"{path}.{key}")]
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: {type(actual).__name__} of length {len(actual) if isinstance(actual, list) else '-'} vs {len(expected)}"]
        return [m for i, (a, e) in enumerate(zip(actual, expected)) for m in mismatches(a, e, f"{path}[{i}]")]
    if isinstance(expected, bool) or isinstance(actual, bool):
        return [] if actual == expected else [f"{path}: {actual} vs {expected}"]
    if isinstance(expected, int) and isinstance(actual, int):
        return [] if actual == expected else [f"{path}: {actual} vs {expected}"]
    if not isinstance(actual, (int, float)) or actual is None:
        return [f"{path}: {actual!r} is not a number"]
    a, e = float(actual), float(expected)
    if math.isnan(a) or math.isinf(a):
        return [f"{path}: {a}"]
    if abs(a - e) / max(1.0, abs(a) + abs(e)) > 1e-4:
        return [f"{path}: {a} vs {e}"]
    return []


def tolist(value):
    return np.asarray(value, dtype=float).tolist()


def fd_gradient(f, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


# --- references ------------------------------------------------------------


def llsq_primal(x, n):
    t = np.array([-1 + (2 * i) / (n - 1) for i in range(n)])
    r = np.sign(t) - np.array([sum(x[j] * ti**j for j in range(len(x))) for ti in t])
    return 0.5 * np.sum(r * r), r, t


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


def ode_primal(x, s):
    def F(y):
        return x * np.concatenate([[1.0], y[:-1]])

    y, h = np.zeros_like(x), 2.0 / s
    for _ in range(s):
        k1 = F(y)
        k2 = F(y + h / 2 * k1)
        k3 = F(y + h / 2 * k2)
        k4 = F(y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y


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


def gmm_objective(x, alpha, mu, q, l, m, gamma):
    n, d = x.shape
    k = alpha.shape[0]

    def lse(v):
        a = v.max()
        return a + math.log(np.exp(v - a).sum())

    total = -n * d / 2 * math.log(2 * math.pi)
    factors = []
    for kk in range(k):
        Q = np.diag(np.exp(q[kk]))
        for c in range(d):
            for r in range(c + 1, d):
                Q[r, c] = l[kk][c * d - c * (c + 1) // 2 + (r - c - 1)]
        factors.append(Q)
    for i in range(n):
        beta = np.array([alpha[kk] + q[kk].sum() - 0.5 * np.sum((factors[kk] @ (x[i] - mu[kk])) ** 2) for kk in range(k)])
        total += lse(beta)
    total -= n * lse(alpha)
    nu = d + m + 1
    log_gamma_d = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(nu / 2 + (1 - j) / 2) for j in range(1, d + 1))
    c = nu * d * (math.log(gamma) - 0.5 * math.log(2)) - log_gamma_d
    total += k * c - sum(gamma**2 / 2 * (np.sum(np.exp(q[kk]) ** 2) + np.sum(l[kk] ** 2)) - m * q[kk].sum() for kk in range(k))
    return total


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


def ba_residual(params):
    cam, X, w, feat = params[:11], params[11:14], params[14], FEAT
    r, C, f, u0, v0, k1, k2 = cam[0:3], cam[3:6], cam[6], cam[7], cam[8], cam[9], cam[10]
    Y = X - C
    theta = np.linalg.norm(r)
    a = r / theta
    Z = Y * math.cos(theta) + np.cross(a, Y) * math.sin(theta) + a * a.dot(Y) * (1 - math.cos(theta))
    p = Z[:2] / Z[2]
    rho = p.dot(p)
    p = p * (1 + k1 * rho + k2 * rho * rho)
    return w * (f * p + np.array([u0, v0]) - feat)


FEAT = np.array([0.3, -0.2])


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


def lstm_objective(main, extra, state, seq):
    l, b = main.shape[0] // 2, main.shape[1] // 4
    sigmoid = lambda z: 1 / (1 + np.exp(-z))
    h = [state[2 * i].copy() for i in range(l)]
    c = [state[2 * i + 1].copy() for i in range(l)]
    total = 0.0
    for t in range(seq.shape[0] - 1):
        z = seq[t] * extra[0]
        for i in range(l):
            W, B = main[2 * i], main[2 * i + 1]
            blk = lambda v, g: v[g * b:(g + 1) * b]
            f = sigmoid(z * blk(W, 0) + blk(B, 0))
            ig = sigmoid(h[i] * blk(W, 1) + blk(B, 1))
            o = sigmoid(z * blk(W, 2) + blk(B, 2))
            g = np.tanh(h[i] * blk(W, 3) + blk(B, 3))
            c[i] = c[i] * f + ig * g
            h[i] = o * np.tanh(c[i])
            z = h[i]
        y = z * extra[1] + extra[2]
        lam = math.log(np.exp(y).sum() + 2)
        total += np.sum(seq[t + 1] * (y - lam))
    return -total / ((seq.shape[0] - 1) * b)


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


# ht (SPEC §3.8): a random rigged hand; the full-size one is what
# `selftest.py --ht-default` and bench.py use.


def ht_rotation(axis, t):
    c, s = math.cos(t), math.sin(t)
    return [np.array([[1, 0, 0], [0, c, -s], [0, s, c]]), np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])][axis]


def ht_angle_axis(a):
    nu = np.linalg.norm(a)
    if nu < 1e-4:
        return np.eye(3)
    x, y, z = a / nu
    s, c = math.sin(nu), math.cos(nu)
    return np.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                     [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                     [x * z * (1 - c) - y * s, y * z * (1 - c) + x * s, z * z + (1 - z * z) * c]])


def ht_vertices(theta, model):
    bones = model["bone_count"]
    pose = np.zeros((max(bones, 21) + 3, 3))
    pose[0], pose[1], pose[2] = theta[0:3], 1.0, theta[3:6]
    for f in range(5):
        pose[5 + 4 * f, :2] = theta[6 + 4 * f:8 + 4 * f]
        pose[6 + 4 * f, 0], pose[7 + 4 * f, 0] = theta[8 + 4 * f], theta[9 + 4 * f]
    relatives, inverses = np.array(model["base_relatives"]), np.array(model["inverse_base_absolutes"])
    absolutes = []
    for b in range(bones):
        a = pose[3 + b]
        euler = np.eye(4)
        euler[:3, :3] = ht_rotation(2, a[1]) @ ht_rotation(1, a[2]) @ ht_rotation(0, a[0])
        relative = relatives[b] @ euler
        parent = model["parents"][b]
        absolutes.append(relative if parent == -1 else absolutes[parent] @ relative)
    transforms = np.stack([absolutes[b] @ inverses[b] for b in range(bones)])[:, :3, :]  # B x 3 x 4
    positions = np.array(model["base_positions"])
    blended = (np.array(model["weights"]) @ transforms.reshape(bones, 12)).reshape(-1, 3, 4)
    s = np.einsum("vrc,vc->vr", blended, positions)
    if model["is_mirrored"]:
        s[:, 0] = -s[:, 0]
    return (ht_angle_axis(pose[0]) @ (pose[1][:, None] * s.T)).T + pose[2]


def ht_objective(theta, us, data):
    p = ht_vertices(theta, data["model"])
    corr, points = np.array(data["correspondences"]), np.array(data["points"])
    if len(us) == 0:
        return (points - p[corr]).ravel()
    tri, us = np.array(data["model"]["triangles"])[corr], np.array(us)
    u0, u1 = us[:, :1], us[:, 1:]
    return (points - (u0 * p[tri[:, 0]] + u1 * p[tri[:, 1]] + (1 - u0 - u1) * p[tri[:, 2]])).ravel()


def ht_jacobian(theta, us, data, eps=1e-6):
    """Central differences: by each theta, and (complicated) by every point's u_k
    at once, since a residual depends only on its own point's u."""
    theta, us = np.asarray(theta, dtype=float), np.asarray(us, dtype=float)
    columns = []
    for k in range(2 if len(us) else 0):
        step = np.zeros_like(us)
        step[:, k] = eps
        columns.append((ht_objective(theta, us + step, data) - ht_objective(theta, us - step, data)) / (2 * eps))
    for t in range(26):
        step = np.zeros(26)
        step[t] = eps
        columns.append((ht_objective(theta + step, us, data) - ht_objective(theta - step, us, data)) / (2 * eps))
    return np.stack(columns, 1)


def ht_input(rng, bones, verts, tris, pts, complicated, mirrored):
    parents = [-1] + [int(rng.integers(0, b)) for b in range(1, bones)]
    relatives, absolutes = [], []
    for b in range(bones):
        relative = np.eye(4)
        relative[:3, :3], relative[:3, 3] = ht_angle_axis(rng.normal(size=3)), rng.normal(size=3) * 0.5
        relatives.append(relative)
        absolutes.append(relative if parents[b] == -1 else absolutes[parents[b]] @ relative)
    weights = rng.random((verts, bones)) ** 8
    model = {"bone_count": bones, "bone_names": [f"bone{b}" for b in range(bones)], "parents": parents,
             "base_relatives": tolist(relatives), "inverse_base_absolutes": tolist([np.linalg.inv(a) for a in absolutes]),
             "base_positions": tolist(np.concatenate([rng.normal(size=(verts, 3)), np.ones((verts, 1))], 1)),
             "weights": tolist(weights / weights.sum(1, keepdims=True)),
             "triangles": rng.integers(0, verts, size=(tris, 3)).tolist(), "is_mirrored": mirrored}
    corr = rng.integers(0, tris if complicated else verts, size=pts).tolist()
    us = tolist(rng.random((pts, 2)) * 0.5) if complicated else []
    data = {"model": model, "correspondences": corr, "points": tolist(rng.normal(size=(pts, 3)))}
    return {"theta": tolist(rng.normal(size=26) * 0.5), "data": data, "us": us}


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


HT_DEFAULT_POINTS = [100, 192, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 100000]


def ht_default_input(pts):
    """A workload of SPEC §3.8's defaults: complicated variant, the big model's
    sizes (B = 22, V = 10 000, T = 1 084), P points."""
    return ht_input(np.random.default_rng(31337), 22, 10000, 1084, pts, True, False)


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
