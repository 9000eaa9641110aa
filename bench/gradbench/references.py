"""Independent NumPy references for the GradBench evals (SPEC.md §3) and the
validator's comparison rule (SPEC.md §2), shared by selftest.py (small
inputs) and bench.py (the default workloads).

Nothing here calls Delta. Derivatives come from methods other than the
tool's AD: central finite differences (`fd_gradient`, `ht_jacobian`,
`ht_jacobian_fourth_order`), the complex step (`ba`, `lstm`: Im f(x + ih)/h,
exact to rounding for analytic code), hand-derived adjoints or closed forms
(`ode`, `gmm`, `det`, `kmeans`). `expected_outputs(eval, input)` gives the
expected outputs of any default workload, computed from its input message
alone.
"""
import math

import numpy as np

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


class Comparison:
    """The §2 rule over a whole output, vectorized for large arrays: structural
    mismatches, numbers outside the tolerance, NaN/inf (which the validator
    itself would let through), and the worst relative error
    |a - e| / max(1, |a| + |e|) with where it is."""

    TOLERANCE = 1e-4

    def __init__(self, actual, expected):
        self.failures, self.worst, self.where, self.count = [], 0.0, "", 0
        # For information only (not the validator's rule): the plain relative
        # error |a − e| / |e|, which the rule's absolute floor hides for small
        # values (lse's softmax, ~1/n); over a scalar e ≠ 0, or over an
        # array's entries with |e| ≥ 1e-6 · max |e| (smaller ones are at the
        # level of a finite-difference reference's noise).
        self.relative, self.relative_where = 0.0, ""
        self.visit(actual, expected, "output")

    def ok(self):
        return not self.failures

    def fail(self, message):
        self.failures.append(message)

    def note(self, error, where):
        if not error <= self.worst:  # also takes NaN
            self.worst, self.where = error, where

    def visit(self, actual, expected, path):
        if isinstance(expected, dict):
            if not isinstance(actual, dict) or set(actual) != set(expected):
                return self.fail(f"{path}: keys {sorted(actual) if isinstance(actual, dict) else type(actual).__name__} vs {sorted(expected)}")
            for key in expected:
                self.visit(actual[key], expected[key], f"{path}.{key}")
            return
        if isinstance(expected, (list, tuple, np.ndarray)):
            if not isinstance(actual, list):
                return self.fail(f"{path}: {type(actual).__name__} where a list of {len(expected)} is expected")
            if self.visit_array(actual, np.asarray(expected), path):
                return
            if len(actual) != len(expected):
                return self.fail(f"{path}: length {len(actual)} vs {len(expected)}")
            for i, (a, e) in enumerate(zip(actual, expected)):
                self.visit(a, e, f"{path}[{i}]")
            return
        self.count += 1
        if isinstance(expected, (bool, np.bool_)) or isinstance(actual, bool):
            if not (isinstance(expected, (bool, np.bool_)) and isinstance(actual, bool)) or actual != expected:
                self.fail(f"{path}: {actual!r} vs {expected!r}")
            return
        if isinstance(expected, (int, np.integer)) and isinstance(actual, int):
            if actual != expected:
                self.fail(f"{path}: {actual} vs {expected} (integers)")
            return
        if not isinstance(actual, (int, float)):
            return self.fail(f"{path}: {actual!r} is not a number")
        a, e = float(actual), float(expected)
        if not math.isfinite(a):
            return self.fail(f"{path}: {a}")
        error = abs(a - e) / max(1.0, abs(a) + abs(e))
        self.note(error, path)
        if e != 0 and abs(a - e) / abs(e) > self.relative:
            self.relative, self.relative_where = abs(a - e) / abs(e), path
        if error > self.TOLERANCE:
            self.fail(f"{path}: {a!r} vs expected {e!r} (error {error:.3g})")

    def visit_array(self, actual, expected, path):
        """A rectangular numeric array at once; False to fall back to visiting
        element by element (ragged, mixed types, integers against floats)."""
        if expected.dtype.kind not in "fi":
            return False
        try:
            a = np.asarray(actual)
        except ValueError:
            return False
        if a.shape != expected.shape or a.dtype.kind not in "fi" or (expected.dtype.kind == "i" and a.dtype.kind != "i"):
            return False
        self.count += a.size
        index = lambda flat: path + "".join(f"[{i}]" for i in np.unravel_index(flat, a.shape))
        if a.dtype.kind == "i" and expected.dtype.kind == "i":
            for flat in np.flatnonzero(a != expected)[:10]:
                self.fail(f"{index(flat)}: {a.flat[flat]} vs {expected.flat[flat]} (integers)")
            return True
        a, e = a.astype(float), expected.astype(float)
        with np.errstate(invalid="ignore", over="ignore"):
            error = np.abs(a - e) / np.maximum(1.0, np.abs(a) + np.abs(e))
        bad = ~np.isfinite(a)
        for flat in np.flatnonzero(bad)[:10]:
            self.fail(f"{index(flat)}: {a.flat[flat]}")
        error[bad] = np.inf
        if error.size:
            flat = int(np.argmax(error))
            self.note(float(error.flat[flat]), index(flat))
            scale = np.abs(e).max()
            nonzero = np.flatnonzero((np.abs(e) >= 1e-6 * scale) & (e != 0) & ~bad)
            if nonzero.size:
                relative = np.abs(a.flat[nonzero] - e.flat[nonzero]) / np.abs(e.flat[nonzero])
                at = int(np.argmax(relative))
                if relative[at] > self.relative:
                    self.relative, self.relative_where = float(relative[at]), index(nonzero[at])
        for flat in np.flatnonzero((error > self.TOLERANCE) & ~bad)[:10]:
            self.fail(f"{index(flat)}: {a.flat[flat]!r} vs expected {e.flat[flat]!r} (error {error.flat[flat]:.3g})")
        extra = int(np.count_nonzero(error > self.TOLERANCE)) - min(10, int(np.count_nonzero(error > self.TOLERANCE)))
        if extra:
            self.fail(f"{path}: {extra} more entries outside the tolerance")
        return True


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


# --- llsq, lse (§3.2, §3.3) ------------------------------------------------


def llsq_primal(x, n):
    t = np.array([-1 + (2 * i) / (n - 1) for i in range(n)])
    r = np.sign(t) - np.array([sum(x[j] * ti**j for j in range(len(x))) for ti in t])
    return 0.5 * np.sum(r * r), r, t


def llsq_vectorized(x, n):
    """(primal, gradient), with t_i^j as powers of the float t."""
    x = np.asarray(x, dtype=float)
    t = -1 + (2 * np.arange(n)) / (n - 1)
    powers = t[:, None] ** np.arange(len(x), dtype=float)[None, :]
    r = np.sign(t) - powers @ x
    return 0.5 * r.dot(r), -(r @ powers)


def lse_reference(x):
    x = np.asarray(x, dtype=float)
    a = x.max()
    e = np.exp(x - a)
    return a + math.log(e.sum()), e / e.sum()


# --- ode (§3.5) ------------------------------------------------------------


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


def ode_gradient(x, s):
    """∂y_{n-1}/∂x of the RK4 primal, by a hand-written adjoint of the loop
    (F(u) = x ⊙ shift(u), so F's adjoint sends k̄ to ū = unshift(x ⊙ k̄) and
    x̄ += k̄ ⊙ shift(u))."""
    x = np.asarray(x, dtype=float)
    shift = lambda u: np.concatenate([[1.0], u[:-1]])
    unshift = lambda v: np.concatenate([v[1:], [0.0]])
    h = 2.0 / s
    ys = [np.zeros_like(x)]
    for _ in range(s - 1):
        ys.append(ode_step(x, ys[-1], h))
    ybar, xbar = np.zeros_like(x), np.zeros_like(x)
    ybar[-1] = 1.0
    for y in reversed(ys):
        k1 = x * shift(y)
        a2 = y + h / 2 * k1
        k2 = x * shift(a2)
        a3 = y + h / 2 * k2
        k3 = x * shift(a3)
        a4 = y + h * k3
        k1b, k2b, k3b, k4b = h / 6 * ybar, h / 3 * ybar, h / 3 * ybar, h / 6 * ybar
        ynew = ybar.copy()
        a4b = unshift(x * k4b)
        xbar += k4b * shift(a4)
        ynew += a4b
        k3b = k3b + h * a4b
        a3b = unshift(x * k3b)
        xbar += k3b * shift(a3)
        ynew += a3b
        k2b = k2b + h / 2 * a3b
        a2b = unshift(x * k2b)
        xbar += k2b * shift(a2)
        ynew += a2b
        k1b = k1b + h / 2 * a2b
        ynew += unshift(x * k1b)
        xbar += k1b * shift(y)
        ybar = ynew
    return xbar


def ode_step(x, y, h):
    F = lambda u: x * np.concatenate([[1.0], u[:-1]])
    k1 = F(y)
    k2 = F(y + h / 2 * k1)
    k3 = F(y + h / 2 * k2)
    k4 = F(y + h * k3)
    return y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6


# --- kmeans (§3.10) --------------------------------------------------------


def kmeans_reference(points, centroids, chunk=256):
    """(cost, dir) with exact squared distances Σ (C_j − P_i)², by blocks of
    points; ties go to the lowest j (argmin's first)."""
    points, centroids = np.asarray(points, dtype=float), np.asarray(centroids, dtype=float)
    k = centroids.shape[0]
    nearest, best = [], []
    for start in range(0, points.shape[0], chunk):
        block = points[start:start + chunk]
        dist = ((block[:, None, :] - centroids[None, :, :]) ** 2).sum(-1)
        nearest.append(dist.argmin(1))
        best.append(dist.min(1))
    nearest = np.concatenate(nearest)
    sums = np.zeros_like(centroids)
    np.add.at(sums, nearest, points)
    counts = np.bincount(nearest, minlength=k)[:, None]
    return np.concatenate(best).sum(), centroids - sums / counts


# --- gmm (§3.6) ------------------------------------------------------------


def gmm_wishart_constant(d, m, gamma):
    """C of the Wishart prior's log density (§3.6), per component."""
    nu = d + m + 1
    log_gamma_d = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(nu / 2 + (1 - j) / 2) for j in range(1, d + 1))
    return nu * d * (math.log(gamma) - 0.5 * math.log(2)) - log_gamma_d


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
    c = gmm_wishart_constant(d, m, gamma)
    total += k * c - sum(gamma**2 / 2 * (np.sum(np.exp(q[kk]) ** 2) + np.sum(l[kk] ** 2)) - m * q[kk].sum() for kk in range(k))
    return total


def gmm_reference(inp):
    """(objective, jacobian) vectorized, with the gradient derived by hand:
    r = softmax_k β (responsibilities), y_ik = Q_k(x_i − μ_k),
    ∂F/∂α = Σ_i r_i − N softmax(α), ∂F/∂μ_k = Q_kᵀ Σ_i r_ik y_ik,
    ∂F/∂Q_k = G_k = −Σ_i r_ik y_ik (x_i − μ_k)ᵀ, whose diagonal (times exp q,
    plus Σ_i r_ik from Σ_j q_kj) gives q and whose lower part gives l; then
    the prior's terms."""
    x, alpha, mu, q, l = (np.asarray(inp[key], dtype=float) for key in ("x", "alpha", "mu", "q", "l"))
    m, gamma = inp["m"], float(inp["gamma"])
    n, d = x.shape
    k = alpha.shape[0]
    l = l.reshape(k, d * (d - 1) // 2)
    rows, cols = np.tril_indices(d, -1)
    order = np.lexsort((rows, cols))  # column by column
    rows, cols = rows[order], cols[order]
    Q = np.zeros((k, d, d))
    Q[:, np.arange(d), np.arange(d)] = np.exp(q)
    Q[:, rows, cols] = l
    beta = np.empty((n, k))
    for kk in range(k):
        y = (x - mu[kk]) @ Q[kk].T
        beta[:, kk] = alpha[kk] + q[kk].sum() - 0.5 * (y * y).sum(1)
    top = beta.max(1, keepdims=True)
    e = np.exp(beta - top)
    resp = e / e.sum(1, keepdims=True)
    lse_beta = (top[:, 0] + np.log(e.sum(1))).sum()
    top_alpha = alpha.max()
    lse_alpha = top_alpha + math.log(np.exp(alpha - top_alpha).sum())
    c = gmm_wishart_constant(d, m, gamma)
    objective = -n * d / 2 * math.log(2 * math.pi) + lse_beta - n * lse_alpha + k * c \
        - (gamma**2 / 2 * ((np.exp(q) ** 2).sum() + (l * l).sum()) - m * q.sum())
    g_alpha = resp.sum(0) - n * np.exp(alpha - lse_alpha)
    g_mu, g_q, g_l = np.empty_like(mu), np.empty_like(q), np.empty_like(l)
    for kk in range(k):
        diff = x - mu[kk]
        y = diff @ Q[kk].T
        weighted = resp[:, kk:kk + 1] * y
        g_mu[kk] = Q[kk].T @ weighted.sum(0)
        G = -(weighted.T @ diff)
        g_q[kk] = resp[:, kk].sum() + np.diag(G) * np.exp(q[kk]) - gamma**2 * np.exp(2 * q[kk]) + m
        g_l[kk] = G[rows, cols] - gamma**2 * l[kk]
    return objective, {"alpha": g_alpha, "mu": g_mu, "q": g_q, "l": g_l}


# --- ba (§3.7) -------------------------------------------------------------


def ba_residual(params, feat):
    """e (2 numbers) for params = cam (11), X (3), w, written with analytic
    operations only, so that it also runs on complex numbers (complex step)."""
    cam, X, w = params[:11], params[11:14], params[14]
    r, C, f, u0, v0, k1, k2 = cam[0:3], cam[3:6], cam[6], cam[7], cam[8], cam[9], cam[10]
    Y = X - C
    theta2 = r.dot(r)
    if np.real(theta2) != 0:
        theta = np.sqrt(theta2)
        a = r / theta
        Z = Y * np.cos(theta) + np.cross(a, Y) * np.sin(theta) + a * a.dot(Y) * (1 - np.cos(theta))
    else:
        Z = Y + np.cross(r, Y)
    p = Z[:2] / Z[2]
    rho = p.dot(p)
    p = p * (1 + k1 * rho + k2 * rho * rho)
    return w * (f * p + np.array([u0, v0]) - np.asarray(feat))


def complex_step_jacobian(f, x, h=1e-30):
    x = np.asarray(x, dtype=float)
    columns = []
    for i in range(x.size):
        xc = x.astype(complex)
        xc[i] += 1j * h
        columns.append(np.imag(f(xc)) / h)
    return np.stack(columns, 1)


def ba_reference(inp):
    """(objective, jacobian): one observation's residual and its 2 × 15
    Jacobian block by the complex step, laid out as SPEC §3.7's truncated CSR
    (the first 30 and the last entry of rows, cols, vals)."""
    n, m, p = inp["n"], inp["m"], inp["p"]
    cam, X, w, feat = (np.asarray(inp[key], dtype=float) for key in ("cam", "x", "w", "feat"))
    params = np.concatenate([cam, X, [w]])
    e = ba_residual(params, feat)
    J = complex_step_jacobian(lambda v: ba_residual(v, feat), params)  # 2 x 15
    objective = {"reproj_error": {"elements": e, "repeated": p}, "w_err": {"element": float(1 - w * w), "repeated": p}}

    def row_pointer(r):
        return 15 * r if r <= 2 * p else 30 * p + (r - 2 * p)

    def entries():  # (col, val) in CSR order, as long as needed
        for i in range(p):
            for c in range(2):
                cols = list(range(11 * (i % n), 11 * (i % n) + 11)) + [11 * n + 3 * (i % m) + t for t in range(3)] + [11 * n + 3 * m + i]
                yield from zip(cols, J[c])
        for i in range(p):
            yield 11 * n + 3 * m + i, -2 * w

    first = []
    for entry in entries():
        if len(first) == 30:
            break
        first.append(entry)
    last = (11 * n + 3 * m + p - 1, -2 * w)  # the ω row of observation p − 1
    jacobian = {"rows": np.array([row_pointer(r) for r in range(min(30, 3 * p + 1))] + [row_pointer(3 * p)]),
                "cols": np.array([c for c, _ in first] + [last[0]]),
                "vals": np.array([v for _, v in first] + [last[1]], dtype=float)}
    return objective, jacobian


# --- lstm (§3.9) -----------------------------------------------------------


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


def lstm_reference(inp, h=1e-30):
    """(objective, jacobian) by the complex step. The lanes of the diagonal
    LSTM never mix before the loss, so ŷ_j depends only on lane j's 8l + 3
    parameters: one complex pass per parameter *slot* (main row r, gate g;
    extra row e), perturbing that slot in all b lanes at once, gives every
    ∂ŷ_j/∂p_{slot,j} as Im ŷ_j / h; the loss's coupling through
    λ = log(Σ exp ŷ + 2) is then applied by the chain rule. The slots run as
    a batch dim, so it is one pass over the sequence."""
    main, extra, state, seq = (np.asarray(inp[key], dtype=float) for key in ("main_params", "extra_params", "state", "sequence"))
    layers, b = main.shape[0] // 2, main.shape[1] // 4
    slots = 8 * layers + 3
    M = np.repeat(main.astype(complex)[None], slots, 0)
    E = np.repeat(extra.astype(complex)[None], slots, 0)
    for r in range(2 * layers):
        for g in range(4):
            M[4 * r + g, r, g * b:(g + 1) * b] += 1j * h
    for e in range(3):
        E[8 * layers + e, e, :] += 1j * h
    gates = [[M[:, 2 * i + w, g * b:(g + 1) * b] for w in (0, 1) for g in range(4)] for i in range(layers)]
    e_in, e_out, e_b = E[:, 0, :], E[:, 1, :], E[:, 2, :]
    hs = [np.repeat(state[2 * i].astype(complex)[None], slots, 0) for i in range(layers)]
    cs = [np.repeat(state[2 * i + 1].astype(complex)[None], slots, 0) for i in range(layers)]
    sigmoid = lambda z: 1 / (1 + np.exp(-z))
    total, grad = 0.0, np.zeros((slots, b))
    for t in range(seq.shape[0] - 1):
        z = seq[t] * e_in
        for i in range(layers):
            wf, wi, wo, wc, bf, bi, bo, bc = gates[i]
            f = sigmoid(z * wf + bf)
            ig = sigmoid(hs[i] * wi + bi)
            o = sigmoid(z * wo + bo)
            g = np.tanh(hs[i] * wc + bc)
            cs[i] = cs[i] * f + ig * g
            hs[i] = o * np.tanh(cs[i])
            z = hs[i]
        y = z * e_out + e_b
        value = y[0].real
        ex = np.exp(value)
        s = ex.sum() + 2
        target = seq[t + 1]
        total += np.sum(target * (value - math.log(s)))
        grad += (target - target.sum() * ex / s) * (y.imag / h)
    scale = -1.0 / ((seq.shape[0] - 1) * b)
    return total * scale, np.concatenate([grad[:8 * layers].ravel(), grad[8 * layers:].ravel()]) * scale


# --- det (§3.4) ------------------------------------------------------------


def det_reference(A, ell):
    """(det, cofactors): LU determinants (np.linalg.det) of A and of each
    (ℓ−1)-minor; the value is the cofactor expansion's up to rounding."""
    A = np.asarray(A, dtype=float).reshape(ell, ell)
    cof = np.array([[(-1) ** (r + c) * np.linalg.det(np.delete(np.delete(A, r, 0), c, 1)) for c in range(ell)] for r in range(ell)])
    return np.linalg.det(A), cof.ravel()


# --- ht (§3.8): a random rigged hand; the full-size one is what
# `selftest.py --ht-default` and bench.py use. ---------------------------------


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


def ht_jacobian_fourth_order(theta, us, data, eps=1e-3):
    """As ht_jacobian, with the fourth-order central stencil
    (−f(2ε) + 8f(ε) − 8f(−ε) + f(−2ε)) / 12ε: about 1e-12 absolute error on
    the default hand instead of 1e-9 (bench.py)."""
    theta, us = np.asarray(theta, dtype=float), np.asarray(us, dtype=float)
    directions = []
    for k in range(2 if len(us) else 0):
        step = np.zeros_like(us)
        step[:, k] = eps
        directions.append(lambda c, step=step: ht_objective(theta, us + c * step, data))
    for t in range(26):
        step = np.zeros(26)
        step[t] = eps
        directions.append(lambda c, step=step: ht_objective(theta + c * step, us, data))
    return np.stack([(-f(2) + 8 * f(1) - 8 * f(-1) + f(-2)) / (12 * eps) for f in directions], 1)


def ht_input(rng, bones, verts, tris, pts, complicated, mirrored, parents=None):
    """A synthetic model: random parents (each earlier than its child) unless
    `parents` is given."""
    if parents is None:
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


HT_DEFAULT_POINTS = [100, 192, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 100000]


# The hand's bone tree, as in GradBench's hand model (SPEC §3.8's pose
# order): the wrist (0) is the root; each finger is a chain of four bones
# 4f + 1 .. 4f + 4 hanging from the wrist; the forearm (21) hangs from it too.
# GradBench's `manual` Jacobian relies on this shape (manual.py).
HT_HAND_PARENTS = [-1] + [0 if b % 4 == 1 else b - 1 for b in range(1, 21)] + [0]


def ht_default_input(pts):
    """A workload of SPEC §3.8's defaults: complicated variant, the big model's
    sizes (B = 22, V = 10 000, T = 1 084) and bone tree, P points."""
    return ht_input(np.random.default_rng(31337), 22, 10000, 1084, pts, True, False, HT_HAND_PARENTS)


def ht_arrays(inp):
    """theta, us and data with the lists converted once (the FD Jacobian
    evaluates the objective 56 or 112 times)."""
    data = {"model": {key: np.asarray(value) for key, value in inp["data"]["model"].items()},
            **{key: np.asarray(inp["data"][key]) for key in ("correspondences", "points")}}
    return np.asarray(inp["theta"], dtype=float), np.asarray(inp["us"], dtype=float), data


# --- every eval's default workloads ---------------------------------------

PARTICLE = 0.2071918746486116
SADDLE = 8.246324826140356e-06


def expected_outputs(name, inp):
    """{function: expected output} for one workload's input message."""
    if name == "llsq":
        return dict(zip(("primal", "gradient"), llsq_vectorized(inp["x"], inp["n"])))
    if name == "lse":
        return dict(zip(("primal", "gradient"), lse_reference(inp["x"])))
    if name == "ode":
        x = np.asarray(inp["x"], dtype=float)
        return {"primal": ode_primal(x, inp["s"]), "gradient": ode_gradient(x, inp["s"])}
    if name == "kmeans":
        return dict(zip(("cost", "dir"), kmeans_reference(inp["points"], inp["centroids"])))
    if name == "gmm":
        return dict(zip(("objective", "jacobian"), gmm_reference(inp)))
    if name == "ba":
        return dict(zip(("objective", "jacobian"), ba_reference(inp)))
    if name == "lstm":
        return dict(zip(("objective", "jacobian"), lstm_reference(inp)))
    if name == "det":
        return dict(zip(("primal", "gradient"), det_reference(inp["A"], inp["ell"])))
    if name == "ht":
        theta, us, data = ht_arrays(inp)
        return {"objective": ht_objective(theta, us, data), "jacobian": ht_jacobian_fourth_order(theta, us, data)}
    if name == "particle":
        return {mode: PARTICLE for mode in ("rr", "ff", "fr", "rf")}
    if name == "saddle":
        return {mode: [SADDLE] * 4 for mode in ("rr", "ff", "fr", "rf")}
    raise KeyError(name)
