"""The model cases: each names its Delta program and entry, its sizes, how
to make its inputs (numpy, seeded) and the JAX and PyTorch versions of the
same computation. Every implementation takes the same numpy inputs, in the
order of the Delta entry's parameters, and returns a tuple of arrays in the
order of its results. JAX and torch are imported only by the functions that
build their versions (worker.py runs one implementation per process)."""
import math

import numpy as np


def rng():
    return np.random.default_rng(22)


def normal(g, shape, scale):
    return (scale * g.standard_normal(shape)).astype(np.float32)


# ---------------------------------------------------------------- transformer

def transformer_inputs(s):
    g = rng()
    m, h, d, f, n = s["M"], s["H"], s["D"], s["F"], s["S"]
    ones, zeros = np.ones(m, np.float32), np.zeros(m, np.float32)
    return [ones + normal(g, m, 0.1), normal(g, m, 0.1),
            ones + normal(g, m, 0.1), normal(g, m, 0.1)] + \
        [normal(g, (m, h, d), 1 / math.sqrt(m)) for _ in range(4)] + \
        [normal(g, (m, f), 1 / math.sqrt(m)), normal(g, f, 0.1),
         normal(g, (m, f), 1 / math.sqrt(f)), zeros + normal(g, m, 0.1),
         normal(g, (n, m), 1.0)]


def transformer_param_shapes(s):
    m, h, d, f = s["M"], s["H"], s["D"], s["F"]
    return [(m,)] * 4 + [(m, h, d)] * 4 + [(m, f), (f,), (m, f), (m,)]


def block_ops(xp, row_max):
    """The block written once over an array module (jax.numpy or torch);
    row_max(t) is the maximum over the last axis, kept as an axis."""
    def layer_norm(x, g, b):
        c = x - x.mean(-1, keepdims=True)
        v = (c * c).mean(-1, keepdims=True)
        return g * c / xp.sqrt(v + 1e-5) + b

    def gelu(x):
        return 0.5 * x * (1.0 + xp.tanh(
            0.7978845608 * (x + 0.044715 * x * x * x)))

    def block(p, x):
        ln1g, ln1b, ln2g, ln2b, wq, wk, wv, wo, w1, b1, w2, b2 = p
        a = layer_norm(x, ln1g, ln1b)
        q = xp.einsum("sm,mhd->shd", a, wq)
        k = xp.einsum("sm,mhd->shd", a, wk)
        v = xp.einsum("sm,mhd->shd", a, wv)
        scores = xp.einsum("shd,khd->shk", q, k) / math.sqrt(wq.shape[2])
        scores = scores - row_max(scores)
        e = xp.exp(scores)
        w = e / e.sum(-1, keepdims=True)
        o = xp.einsum("shk,khd->shd", w, v)
        x1 = x + xp.einsum("shd,mhd->sm", o, wo)
        hidden = gelu(layer_norm(x1, ln2g, ln2b) @ w1 + b1)
        return x1 + hidden @ w2.T + b2

    def loss(p, x):
        y = block(p, x)
        return (y * y).mean()
    return block, loss


def transformer_jax(s, entry):
    import jax
    import jax.numpy as jnp
    block, loss = block_ops(jnp, lambda t: jnp.max(t, -1, keepdims=True))
    if entry == "forward":
        f = jax.jit(lambda *a: (block(a[:12], a[12]),))
    else:
        f = jax.jit(lambda *a: tuple(jax.grad(loss)(a[:12], a[12])))
    return f


def transformer_torch(s, entry, compiled):
    import torch
    block, loss = block_ops(torch,
                           lambda t: torch.amax(t, -1, keepdim=True))
    if entry == "forward":
        f = torch.compile(block) if compiled else block

        def run(*a):
            with torch.no_grad():
                return (f(a[:12], a[12]),)
        return run
    f = torch.compile(loss) if compiled else loss

    def run(*a):
        params = [t.requires_grad_() for t in a[:12]]
        return torch.autograd.grad(f(params, a[12]), params)
    return run


# ------------------------------------------------------------------------ cnn

def cnn_inputs(s):
    g = rng()
    b, c = s["B"], s["C"]
    return [normal(g, (c, 3, 3), 1 / 3), normal(g, c, 0.1),
            normal(g, (c, 13, 13, 10), 1 / math.sqrt(c * 169)),
            normal(g, 10, 0.1), g.random((b, 28, 28)).astype(np.float32),
            g.integers(0, 10, b).astype(np.int64)]


def cnn_shapes(s):
    c = s["C"]
    return [(c, 3, 3), (c,), (c, 13, 13, 10), (10,)]


def cnn_jax(s, entry):
    import jax
    import jax.numpy as jnp

    def loss(p, xs, labels):
        k, kb, wd, bd = p
        y = jax.lax.conv_general_dilated(xs[:, None], k[:, None], (1, 1),
                                         "VALID")
        r = jax.nn.relu(y + kb[None, :, None, None])
        pooled = jax.lax.reduce_window(r, -jnp.inf, jax.lax.max,
                                       (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        logits = jnp.einsum("bopq,opqc->bc", pooled, wd) + bd
        lse = jax.nn.logsumexp(logits, axis=1)
        return jnp.mean(lse - jnp.take_along_axis(
            logits, labels[:, None], axis=1)[:, 0])
    return jax.jit(lambda k, kb, wd, bd, xs, labels: tuple(
        jax.grad(loss)((k, kb, wd, bd), xs, labels)))


def cnn_torch(s, entry, compiled):
    import torch
    import torch.nn.functional as F

    def loss(k, kb, wd, bd, xs, labels):
        y = F.conv2d(xs[:, None], k[:, None], kb)
        pooled = F.max_pool2d(F.relu(y), 2)
        logits = torch.einsum("bopq,opqc->bc", pooled, wd) + bd
        return F.cross_entropy(logits, labels)
    f = torch.compile(loss) if compiled else loss

    def run(k, kb, wd, bd, xs, labels):
        params = [t.requires_grad_() for t in (k, kb, wd, bd)]
        return torch.autograd.grad(f(*params, xs, labels), params)
    return run


# ----------------------------------------------------------------------- lstm

def lstm_inputs(s):
    g = rng()
    t, b, h = s["T"], s["B"], s["H"]
    return [normal(g, (64, 4, h), 0.1), normal(g, (4, h, h), 1 / math.sqrt(h)),
            normal(g, (4, h), 0.1), normal(g, (64, h), 1 / math.sqrt(h)),
            normal(g, 64, 0.1), g.integers(0, 64, (t, b)).astype(np.int64),
            g.integers(0, 64, (t, b)).astype(np.int64)]


def lstm_shapes(s):
    h = s["H"]
    return [(64, 4, h), (4, h, h), (4, h), (64, h), (64,)]


def lstm_jax(s, entry):
    import jax
    import jax.numpy as jnp

    def loss(p, tokens, targets):
        wx, wh, b, wy, by = p
        zero = jnp.zeros((tokens.shape[1], wh.shape[1]), jnp.float32)

        def step(carry, xs):
            h, c, total = carry
            token, target = xs
            z = wx[token] + jnp.einsum("ghp,lp->lgh", wh, h) + b
            c2 = jax.nn.sigmoid(z[:, 1]) * c + \
                jax.nn.sigmoid(z[:, 0]) * jnp.tanh(z[:, 3])
            h2 = jax.nn.sigmoid(z[:, 2]) * jnp.tanh(c2)
            logits = h2 @ wy.T + by
            ce = jax.nn.logsumexp(logits, axis=1) - jnp.take_along_axis(
                logits, target[:, None], axis=1)[:, 0]
            return (h2, c2, total + ce.sum()), None
        (_, _, total), _ = jax.lax.scan(step, (zero, zero, 0.0),
                                        (tokens, targets))
        return total / tokens.size
    return jax.jit(lambda *a: tuple(jax.grad(loss)(a[:5], a[5], a[6])))


def lstm_torch(s, entry, compiled):
    import torch

    def loss(wx, wh, b, wy, by, tokens, targets):
        h = torch.zeros(tokens.shape[1], wh.shape[1])
        c = h
        total = 0.0
        for t in range(tokens.shape[0]):
            z = wx[tokens[t]] + torch.einsum("ghp,lp->lgh", wh, h) + b
            c = torch.sigmoid(z[:, 1]) * c + \
                torch.sigmoid(z[:, 0]) * torch.tanh(z[:, 3])
            h = torch.sigmoid(z[:, 2]) * torch.tanh(c)
            logits = h @ wy.T + by
            total = total + torch.nn.functional.cross_entropy(
                logits, targets[t], reduction="sum")
        return total / tokens.numel()
    f = torch.compile(loss) if compiled else loss

    def run(*a):
        params = [t.requires_grad_() for t in a[:5]]
        return torch.autograd.grad(f(*params, a[5], a[6]), params)
    return run


# ---------------------------------------------------------------------- dpsgd

def dpsgd_inputs(s):
    g = rng()
    n, f = s["N"], s["F"]
    return [normal(g, f, 0.1), np.float32(0.1), normal(g, (n, f), 1.0),
            (g.random(n) < 0.5).astype(np.float32), normal(g, f, 1.0),
            np.float32(0.5)]


def dpsgd_shapes(s):
    return [(s["F"],), ()]


def dpsgd_jax(s, entry):
    import jax
    import jax.numpy as jnp

    def example_loss(w, b, x, y):
        z = jnp.dot(w, x) + b
        return jnp.maximum(z, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(z))) - y * z

    def step(w, b, xs, ys, noise, noise_b):
        gw, gb = jax.vmap(jax.grad(example_loss, argnums=(0, 1)),
                          in_axes=(None, None, 0, 0))(w, b, xs, ys)
        norm = jnp.sqrt(jnp.sum(gw * gw, axis=1) + gb * gb)
        scale = 1.0 / jnp.maximum(1.0, norm)
        n = xs.shape[0]
        mw = (jnp.sum(gw * scale[:, None], axis=0) + noise) / n
        mb = (jnp.sum(gb * scale) + noise_b) / n
        return w - 0.1 * mw, b - 0.1 * mb
    return jax.jit(step)


def dpsgd_torch(s, entry, compiled):
    import torch
    from torch.func import grad, vmap

    def example_loss(w, b, x, y):
        z = torch.dot(w, x) + b
        return torch.clamp(z, min=0.0) + torch.log1p(torch.exp(-z.abs())) \
            - y * z

    def step(w, b, xs, ys, noise, noise_b):
        gw, gb = vmap(grad(example_loss, argnums=(0, 1)),
                      in_dims=(None, None, 0, 0))(w, b, xs, ys)
        norm = torch.sqrt((gw * gw).sum(1) + gb * gb)
        scale = 1.0 / torch.clamp(norm, min=1.0)
        n = xs.shape[0]
        mw = ((gw * scale[:, None]).sum(0) + noise) / n
        mb = ((gb * scale).sum() + noise_b) / n
        return w - 0.1 * mw, b - 0.1 * mb
    f = torch.compile(step) if compiled else step

    def run(w, b, xs, ys, noise, noise_b):
        with torch.no_grad():
            return f(w, torch.tensor(b), xs, ys, noise, torch.tensor(noise_b))
    return run


def torch_value_and_grad(f):
    """f's value and its gradient with respect to its first argument."""
    import torch

    def run(x, *rest):
        x = x.requires_grad_()
        value = f(x, *rest)
        return value.detach(), torch.autograd.grad(value, x)[0]
    return run


# ---------------------------------------------------------------------- nbody

def nbody_inputs(s):
    g = rng()
    n = s["N"]
    return [normal(g, (n, 3), 1.0), normal(g, (n, 3), 0.1),
            (0.5 + g.random(n)).astype(np.float32)]


def nbody_shapes(s):
    return [(), (s["N"], 3)]


def nbody_energy(xp, pos, vel, mass):
    kinetic = 0.5 * (mass * (vel * vel).sum(1)).sum()
    d = pos[:, None, :] - pos[None, :, :]
    r = xp.sqrt((d * d).sum(2) + 0.01)
    return kinetic - 0.5 * (mass[:, None] * mass[None, :] / r).sum()


def nbody_jax(s, entry):
    import jax
    import jax.numpy as jnp
    return jax.jit(lambda pos, vel, mass: jax.value_and_grad(
        lambda p: nbody_energy(jnp, p, vel, mass))(pos))


def nbody_torch(s, entry, compiled):
    import torch

    def energy(pos, vel, mass):
        return nbody_energy(torch, pos, vel, mass)
    return torch_value_and_grad(torch.compile(energy) if compiled else energy)


# ------------------------------------------------------------------------ ode

def ode_inputs(s):
    g = rng()
    b = s["B"]
    return [np.array([1.1, 0.4, 0.1, 0.4], np.float32),
            (5 + 5 * g.random(b)).astype(np.float32),
            (2 + 3 * g.random(b)).astype(np.float32)]


def ode_shapes(s):
    return [(), (4,)]


def ode_final_loss(theta, x, y, steps, loop):
    h = 0.01

    def field(x, y):
        return (theta[0] * x - theta[1] * x * y,
                theta[2] * x * y - theta[3] * y)

    def rk4(x, y):
        k1x, k1y = field(x, y)
        k2x, k2y = field(x + 0.5 * h * k1x, y + 0.5 * h * k1y)
        k3x, k3y = field(x + 0.5 * h * k2x, y + 0.5 * h * k2y)
        k4x, k4y = field(x + h * k3x, y + h * k3y)
        return (x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x),
                y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y))
    x, y = loop(rk4, x, y, steps)
    return (x * x + y * y).mean()


def ode_jax(s, entry):
    import jax

    def loop(rk4, x, y, steps):
        return jax.lax.fori_loop(0, steps, lambda k, xy: rk4(*xy), (x, y))

    def loss(theta, x0, y0):
        return ode_final_loss(theta, x0, y0, s["K"], loop)
    return jax.jit(jax.value_and_grad(loss))


def ode_torch(s, entry, compiled):
    import torch

    def loop(rk4, x, y, steps):
        for _ in range(steps):
            x, y = rk4(x, y)
        return x, y

    def loss(theta, x0, y0):
        return ode_final_loss(theta, x0, y0, s["K"], loop)
    return torch_value_and_grad(loss)


# ----------------------------------------------------------------- mandelbrot

def mandelbrot_inputs(s):
    r = s["R"]
    return [np.linspace(-2.0, 0.5, r, dtype=np.float32),
            np.linspace(-1.25, 1.25, r, dtype=np.float32)]


def mandelbrot_shapes(s):
    return [(s["R"], s["R"])]


def mandelbrot_jax(s, entry):
    import jax
    import jax.numpy as jnp

    def counts(cr, ci):
        cr, ci = cr[None, :], ci[:, None]
        zero = jnp.zeros((ci.shape[0], cr.shape[1]), jnp.float32)

        def cond(state):
            zr, zi, n, k = state
            return (k < 256) & jnp.any((n == k) & (zr * zr + zi * zi <= 4.0))

        def body(state):
            zr, zi, n, k = state
            live = (n == k) & (zr * zr + zi * zi <= 4.0)
            zr2 = jnp.where(live, zr * zr - zi * zi + cr, zr)
            zi2 = jnp.where(live, 2.0 * zr * zi + ci, zi)
            return zr2, zi2, jnp.where(live, n + 1, n), k + 1
        _, _, n, _ = jax.lax.while_loop(
            cond, body, (zero, zero, jnp.zeros(zero.shape, jnp.int32), 0))
        return (n.astype(jnp.float32),)
    return jax.jit(counts)


def mandelbrot_torch(s, entry, compiled):
    import torch

    def counts(cr, ci):
        cr, ci = cr[None, :], ci[:, None]
        zr = torch.zeros(ci.shape[0], cr.shape[1])
        zi = torch.zeros_like(zr)
        n = torch.zeros_like(zr)
        live = torch.ones_like(zr, dtype=torch.bool)
        for _ in range(256):
            live = live & (zr * zr + zi * zi <= 4.0)
            if not bool(live.any()):
                break
            zr, zi = (torch.where(live, zr * zr - zi * zi + cr, zr),
                      torch.where(live, 2.0 * zr * zi + ci, zi))
            n = n + live
        return (n,)
    return counts


# ---------------------------------------------------------------------- table

class Case:
    def __init__(self, name, dl, entry, sizes, smoke, inputs, shapes, jax_fn,
                 torch_fn, compile_torch=True, tolerance=2e-3,
                 count_mismatches=False):
        self.name, self.dl, self.entry = name, dl, entry
        self.sizes = sizes          # label -> {"S": 128, ...}
        self.smoke = smoke          # tiny sizes for the test suite (smoke.py)
        self.inputs, self.shapes = inputs, shapes
        self.jax, self.torch = jax_fn, torch_fn
        self.compile_torch = compile_torch
        # max |a - b| / max |b| per result, or with count_mismatches the
        # fraction of elements that differ (Mandelbrot's counts near the
        # boundary depend on the last bit of the arithmetic).
        self.tolerance = tolerance
        self.count_mismatches = count_mismatches


def transformer_sizes():
    return {"s128 m256 h4": {"S": 128, "M": 256, "H": 4, "D": 64, "F": 1024},
            "s256 m512 h8": {"S": 256, "M": 512, "H": 8, "D": 64, "F": 2048}}


TRANSFORMER_SMOKE = {"S": 4, "M": 8, "H": 2, "D": 4, "F": 16}

CASES = [
    Case("transformer_fwd", "transformer.dl", "forward", transformer_sizes(),
         TRANSFORMER_SMOKE, transformer_inputs, lambda s: [(s["S"], s["M"])],
         transformer_jax, transformer_torch),
    Case("transformer_grad", "transformer.dl", "gradient",
         transformer_sizes(), TRANSFORMER_SMOKE, transformer_inputs,
         transformer_param_shapes,
         transformer_jax, transformer_torch),
    Case("cnn_grad", "cnn.dl", "gradient",
         {"b64 c8": {"B": 64, "C": 8}, "b256 c16": {"B": 256, "C": 16}},
         {"B": 2, "C": 2},
         cnn_inputs, cnn_shapes, cnn_jax, cnn_torch),
    Case("lstm_step", "lstm.dl", "gradient",
         {"t32 b16 h128": {"T": 32, "B": 16, "H": 128},
          "t64 b32 h256": {"T": 64, "B": 32, "H": 256}},
         {"T": 3, "B": 2, "H": 4},
         lstm_inputs, lstm_shapes, lstm_jax, lstm_torch),
    Case("dpsgd_step", "dpsgd.dl", "step",
         {"n1024 f256": {"N": 1024, "F": 256},
          "n4096 f1024": {"N": 4096, "F": 1024}}, {"N": 4, "F": 3},
         dpsgd_inputs, dpsgd_shapes, dpsgd_jax, dpsgd_torch),
    Case("nbody_grad", "nbody.dl", "energy_gradient",
         {"n512": {"N": 512}, "n2048": {"N": 2048}}, {"N": 5},
         nbody_inputs, nbody_shapes, nbody_jax, nbody_torch),
    Case("ode_rk4_grad", "ode.dl", "loss_gradient",
         {"b256 k500": {"B": 256, "K": 500},
          "b4096 k200": {"B": 4096, "K": 200}}, {"B": 3, "K": 4},
         ode_inputs, ode_shapes, ode_jax, ode_torch, compile_torch=False),
    Case("mandelbrot", "mandelbrot.dl", "counts",
         {"r256": {"R": 256}, "r768": {"R": 768}}, {"R": 8},
         mandelbrot_inputs, mandelbrot_shapes, mandelbrot_jax,
         mandelbrot_torch, compile_torch=False, tolerance=0.01,
         count_mismatches=True),
]
