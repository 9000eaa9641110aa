#!/usr/bin/env python3
"""Differential fuzzer: random well-typed Delta programs, each run by the IR
interpreter and compiled at -O0 and -O3, whose outputs must agree, and whose
forward- and reverse-mode derivatives must agree.

Each program has named dims, functions lifted over them, `loop`, `while`,
`if`, reductions, gathers, cumsum, a struct, and calls `grad` (with `wrt:`
in various orders), `value_and_grad`, `jvp`, `vjp` and `vmap`. Its inputs
are read from a `.npy` file (so that the optimizer cannot fold them) and
include NaN, infinities and signed zeros. Checks, for each program:

- the three runs exit alike, with the same first error line and the same
  output: the interpreter and -O0 exactly (a NaN matches any NaN, -0 does
  not match 0), -O3 within a small relative tolerance (vector math);
- within each run, where the inputs are finite: the jvp tangent equals the
  gradient (grad, value_and_grad, vjp) dotted with the tangent direction,
  and vmap, a comprehension and implicit lifting give the same values.

The seed fixes the programs. On a failure the program is kept in a folder
and the command that reproduces it is printed.

  scripts/fuzz_differential.py --dlc build/release/bin/dlc --count 30 --seed 1
"""
import argparse
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

# Constructs left out of the generated programs because of known bugs that
# are fixed elsewhere; remove an entry once its fix is on this branch.
KNOWN_BUGS = {
    # Not fixed yet: second derivatives (grad of a function that calls grad,
    # reverse over reverse) of some programs with dead loops are invalid:
    # "LLVM ERROR: codegen: @lambda.0.grad uses a value before its
    # definition" at -O0 (lang-tests/ad/xfail_grad_of_grad_dead_loop.dl;
    # also on branch issue30), and std::bad_alloc at -O0 for an `if` whose
    # branches hold a while loop and a comprehension (issue 30's grad(grad)
    # of a loop inside an if, which the issue30 build passes). Until then
    # the programs take no second derivatives.
    "second_derivatives",
}

NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)(?!\w)")

# dlc reports its own bugs with exit status 1 too: these are failures.
INTERNAL = re.compile(r"internal (compiler )?error|LLVM ERROR")
# A crash keeps its signal instead of becoming status 1 (driver.md).
ENV = dict(os.environ, DLC_KEEP_CRASH_SIGNALS="1")

DIM_SIZES = {"a": 3, "b": 2, "c": 2}
# The element kinds of values: "s" scalar, "a" T[a], "b" T[b], "ab" T[a, b].
UNION = {frozenset(): "s", frozenset("a"): "a", frozenset("b"): "b",
         frozenset("ab"): "ab"}
# Finite values and special ones, in the input file.
FINITE = [0.5, -1.25, 2.0, -0.75, 1.5, 0.25, -2.0, 1.0, -0.5, 0.125, 3.0,
          -1.5]  # tangent directions
SPECIAL = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0]


def dims_of(kind):
    return frozenset(kind) if kind != "s" else frozenset()


class Scope:
    """The leaves an expression may use, by kind."""

    def __init__(self, leaves, dims=(), params=True):
        self.leaves = {kind: list(names) for kind, names in leaves.items()}
        self.dims = set(dims)  # dims bound by enclosing comprehensions
        # Whether f's parameters k, ids and x are visible (not in helpers).
        self.params = params

    def child(self):
        return Scope(self.leaves, self.dims, self.params)

    def add(self, kind, name):
        self.leaves.setdefault(kind, []).append(name)


class Generator:
    def __init__(self, rng, float_type):
        self.rng = rng
        self.t = float_type
        self.fresh_count = 0
        self.helpers = []  # module-level helper functions

    def pick(self, options):
        return self.rng.choice(options)

    def chance(self, p):
        return self.rng.random() < p

    def fresh(self, stem):
        self.fresh_count += 1
        return f"{stem}{self.fresh_count}"

    def constant(self):
        if self.chance(0.05):
            return "(-0.0)"
        value = self.pick(["0.5", "1.5", "0.25", "2.0", "0.75", "1.0", "3.0"])
        return f"(-{value})" if self.chance(0.3) else value

    # --- expressions ------------------------------------------------------

    def leaf(self, kind, scope):
        names = scope.leaves.get(kind, [])
        if names and not self.chance(0.15):
            return self.pick(names)
        if kind == "s":
            return self.constant()
        if kind == "ab" and self.chance(0.5):
            return f"({self.leaf('a', scope)} * {self.leaf('b', scope)})"
        dim = kind[-1]
        # A comprehension over the dim, from a scalar and the index.
        index = self.fresh("i")
        # Not symmetric around 0, so that cos and abs make no ties.
        return (f"(for {index} in {dim} {{ {self.t}({index}) * "
                f"{self.constant()} }} * {self.leaf(kind[:-1] or 's', scope)})"
                if kind == "ab" else
                f"(for {index} in {dim} {{ {self.t}({index}) * 0.61 - "
                f"{self.constant()} }})")

    def expr(self, kind, scope, depth):
        if depth <= 0:
            return self.leaf(kind, scope)
        roll = self.rng.random()
        if roll < 0.25:
            return self.unary(self.expr(kind, scope, depth - 1))
        if roll < 0.55:
            return self.binary(kind, scope, depth - 1)
        if roll < 0.75:
            return self.reduce_or_reshape(kind, scope, depth - 1)
        if roll < 0.92:
            return self.control(kind, scope, depth - 1)
        return self.call(kind, scope, depth - 1)

    def unary(self, e):
        options = [
            f"sin({e})", f"cos({e})", f"tanh({e})", f"sigmoid({e})",
            f"exp(0.5 * tanh({e}))", f"log(1.5 + sin({e}))",
            f"sqrt(1.0 + {e} * {e})", f"abs({e})", f"(-{e})",
            f"floor({e})", f"ceil({e})", f"({e}) ^ 2.0",
            f"pow(1.2 + sigmoid({e}), 0.7)", f"stop_gradient({e})",
            # Unbounded ones, for infinities and NaN from finite inputs.
            f"exp({e})", f"log({e})", f"sqrt({e})", f"({e} / {e})",
        ]
        if "relu_nan" not in KNOWN_BUGS:
            options.append(f"relu({e})")
        return self.pick(options)

    def operand_kinds(self, kind):
        """Two kinds whose union of dims is kind's."""
        target = dims_of(kind)
        pairs = [(k1, k2) for k1 in ("s", "a", "b", "ab")
                 for k2 in ("s", "a", "b", "ab")
                 if dims_of(k1) | dims_of(k2) == target]
        return self.pick(pairs)

    def binary(self, kind, scope, depth):
        k1, k2 = self.operand_kinds(kind)
        e1, e2 = self.expr(k1, scope, depth), self.expr(k2, scope, depth)
        options = [f"({e1} + {e2})", f"({e1} - {e2})", f"({e1} * {e2})",
                   f"({e1} / (1.5 + sin({e2})))", f"({e1} / {e2})",
                   f"where({e1} > {e2}, {e1} * {e2}, sin({e2}))",
                   f"where({e1} <= 0.5, {e1}, {e2})",
                   f"pow(1.2 + sigmoid({e1}), tanh({e2}))"]
        if "max_min_signed_zero" not in KNOWN_BUGS:
            options += [f"max({e1}, {e2})", f"min({e1}, {e2})"]
        return self.pick(options)

    def reduction(self, e, dim_list):
        options = ["sum", "mean", "prod"]
        if "max_min_signed_zero" not in KNOWN_BUGS:
            options += ["max", "min"]
        name = self.pick(options)
        if name == "prod":
            return f"prod(tanh({e}) + 1.1, {dim_list})"
        return f"{name}({e}, {dim_list})"

    def reduce_or_reshape(self, kind, scope, depth):
        e = lambda k: self.expr(k, scope, depth)  # noqa: E731
        if kind == "s":
            return self.pick([
                lambda: self.reduction(e("a"), "a"),
                lambda: self.reduction(e("b"), "b"),
                lambda: self.reduction(e("ab"), "a, b"),
                lambda: f"sum({e('ab')})", lambda: f"mean({e('a')})",
                lambda: f"dot({e('a')}, {e('a')}, a)",
                lambda: f"({e('a')})[{self.k(scope)}]",
                lambda: f"({e('a')})[a: {self.rng.randrange(3)}]",
                lambda: f"({e('b')})[b: {self.rng.randrange(2)}]",
                lambda: f"({e('ab')})[{self.k(scope)}, b: 1]",
                lambda: f"sum(cumsum({e('a')}, a) * {e('a')})",
                lambda: self.argmax_gather(scope, depth),
            ])()
        if kind == "a":
            return self.pick([
                lambda: self.reduction(e("ab"), "b"),
                lambda: f"dot({e('ab')}, {e('b')}, b)",
                lambda: f"cumsum({e('a')}, a)",
                lambda: f"({e('ab')})[b: {self.rng.randrange(2)}]",
                lambda: self.comprehension("a", scope, depth),
                lambda: f"broadcast({e('s')}, a)",
            ])()
        if kind == "b":
            return self.pick([
                lambda: self.reduction(e("ab"), "a"),
                lambda: f"dot({e('ab')}, {e('a')}, a)",
                lambda: f"cumsum({e('b')}, b)",
                lambda: f"({e('ab')})[{self.k(scope)}]",
                # A gather: ids is an index array a[b].
                lambda: (f"({e('a')})[ids]" if scope.params else
                         f"({e('a')})[a: 2] * {e('b')}"),
                lambda: self.comprehension("b", scope, depth),
            ])()
        return self.pick([
            lambda: f"cumsum({e('ab')}, {self.pick(['a', 'b'])})",
            lambda: f"broadcast({e('a')}, b)",
            lambda: f"rename(rename({e('ab')}, a, a2), a2, a)",
            lambda: self.comprehension("ab", scope, depth),
        ])()

    def k(self, scope):
        return "k" if scope.params else f"a: {self.rng.randrange(3)}"

    def argmax_gather(self, scope, depth):
        which = self.pick(["argmax", "argmin"])
        return (f"({self.expr('a', scope, depth)})"
                f"[{which}({self.expr('a', scope, depth)}, a)]")

    def comprehension(self, kind, scope, depth):
        """for i in d { … } where each lane sees the elements at i."""
        dim = self.pick([d for d in kind if d not in scope.dims] or [kind[0]])
        if dim in scope.dims:
            return self.expr(kind, scope, depth)
        index = self.fresh("i")
        inner = Scope({}, scope.dims | {dim}, scope.params)
        for k, names in scope.leaves.items():
            for name in names:
                if dim in k:
                    rest = k.replace(dim, "") or "s"
                    inner.add(rest, f"{name}[{index}]")
                else:
                    inner.add(k, name)
        inner.add("s", f"{self.t}({index})")
        rest = kind.replace(dim, "") or "s"
        return f"(for {index} in {dim} {{ {self.expr(rest, inner, depth)} }})"

    def control(self, kind, scope, depth):
        roll = self.rng.random()
        if roll < 0.4:
            condition = self.expr("s", scope, depth)
            then = self.block(kind, scope, depth)
            other = self.block(kind, scope, depth)
            return (f"(if {condition} > {self.constant()} {{ {then} }} "
                    f"else {{ {other} }})")
        if roll < 0.75:
            state = self.fresh("acc")
            step = self.fresh("t")
            inner = scope.child()
            inner.add(kind, state)
            inner.add("s", f"{self.t}({step})")
            start = self.expr(kind, scope, depth)
            body = self.expr(kind, inner, depth)
            steps = self.rng.randrange(0, 6)
            if self.chance(0.5):
                body = f"tanh(0.8 * {state} + 0.3 * {body})"
            return (f"(loop {state} = {start} for {step} in 0..{steps} "
                    f"{{ {body} }})")
        if roll < 0.85 and "a" in kind:
            # A loop over a dim in increasing order.
            state = self.fresh("acc")
            step = self.fresh("j")
            inner = scope.child()
            rest = kind.replace("a", "") or "s"
            inner.add(rest, state)
            inner.add("s", f"x[{step}]" if scope.params else
                      f"{self.t}({step})")
            start = self.expr(rest, scope, depth)
            body = self.expr(rest, inner, depth)
            scan = (f"(loop {state} = {start} for {step} in a "
                    f"{{ sin({state}) + {body} }})")
            return f"({scan} * {self.expr(kind, scope, depth)})"
        # while: a scalar state and a counter that bounds the trip count.
        state, count = self.fresh("w"), self.fresh("n")
        inner = scope.child()
        inner.add("s", state)
        start = self.expr("s", scope, depth)
        body = self.expr("s", inner, depth)
        limit = self.rng.randrange(1, 6)
        loop = (f"(loop ({state}, {count}) = ({start}, 0) while "
                f"{count} < {limit} && {state} < 4.0 "
                f"{{ ({state} + 0.5 + 0.25 * tanh({body}), {count} + 1) }})")
        value = f"{loop}.0"
        if kind == "s":
            return value
        return f"({value} * {self.expr(kind, scope, depth)})"

    def block(self, kind, scope, depth):
        if not self.chance(0.3):
            return self.expr(kind, scope, depth)
        name = self.fresh("v")
        bound = self.pick(["s", "a", "b", "ab"])
        value = self.expr(bound, scope, depth)
        inner = scope.child()
        inner.add(bound, name)
        # Typed: a bare literal would default to f32 in an f64 program.
        return (f"let {name}: {self.type_of(bound)} = {value}; "
                f"{self.expr(kind, inner, depth)}")

    def type_of(self, kind):
        dims = ", ".join(kind) if kind != "s" else ""
        return f"{self.t}[{dims}]" if dims else self.t

    def call(self, kind, scope, depth):
        """A call of a helper: a scalar function lifted over the argument's
        dims, or a function of a vector bound by name."""
        if kind == "s" or self.chance(0.5):
            name = self.scalar_helper()
            return f"{name}({self.expr(kind, scope, depth)})"
        dims = sorted(dims_of(kind))
        other = {"a": "b", "b": "a"}
        if len(dims) == 1:
            # A helper over a size parameter, applied to a T[d, e] and
            # lifted over e, or a vector helper applied to a T[d].
            dim = dims[0]
            if self.chance(0.5):
                name = self.vector_helper()
                return f"{name}[n: {dim}]({self.expr(kind, scope, depth)})"
            name = self.reducing_helper()
            return (f"{name}[n: {other[dim]}]"
                    f"({self.expr('ab', scope, depth)})")
        name = self.vector_helper()
        dim = self.pick(dims)
        return f"{name}[n: {dim}]({self.expr('ab', scope, depth)})"

    def scalar_helper(self):
        name = self.fresh("h")
        scope = Scope({"s": ["q"]}, params=False)
        body = self.expr("s", scope, self.rng.randrange(1, 3))
        self.helpers.append(
            f"fn {name}(q: {self.t}) -> {self.t} {{ {body} }}")
        return name

    def vector_helper(self):
        name = self.fresh("hv")
        body = self.pick([
            "let e = exp(v - sum(v, n) / T(size(n))); e / sum(e, n)",
            "cumsum(sin(v), n) * v",
            "v - mean(v, n)",
            "for i in n { v[i] * T(i) + v[n: 0] }",
            "loop acc = v for r in 0..2 { tanh(acc + 0.5 * v) }",
        ]).replace("T(", f"{self.t}(")
        self.helpers.append(
            f"fn {name}[n](v: {self.t}[n]) -> {self.t}[n] {{ {body} }}")
        return name

    def reducing_helper(self):
        name = self.fresh("hr")
        body = self.pick([
            "sum(tanh(v) * v, n)",
            "dot(v, cos(v), n) + v[n: 0]",
            "loop acc = 0.0 for i in n { acc * 0.5 + sin(v[i]) }",
            "mean(v, n) * prod(sigmoid(v), n)",
        ])
        self.helpers.append(
            f"fn {name}[n](v: {self.t}[n]) -> {self.t} {{ {body} }}")
        return name

    def body(self, kind, scope, depth):
        """A function body: some lets, then an expression."""
        lines = []
        inner = scope.child()
        for _ in range(self.rng.randrange(0, 3)):
            name = self.fresh("l")
            bound = self.pick(["s", "a", "b", "ab"])
            lines.append(f"  let {name}: {self.type_of(bound)} = "
                         f"{self.expr(bound, inner, depth)};")
            inner.add(bound, name)
        if self.chance(0.3):
            name = self.fresh("lam")
            lambda_body = self.expr("s", Scope({"s": ["r"]}), 1)
            lines.append(f"  let {name} = |r: {self.t}| -> {self.t} "
                         f"{{ {lambda_body} }};")
            lifted = self.pick(["s", "a", "b", "ab"])
            bound = self.fresh("l")
            lines.append(f"  let {bound} = {name}("
                         f"{self.expr(lifted, inner, depth)});")
            inner.add(lifted, bound)
        lines.append(f"  {self.expr(kind, inner, depth)}")
        return "\n".join(lines)


# Parameters of the generated functions f (scalar result) and g (T[a]):
# (name, type, kind of tangent or None for an index).
def parameters(t):
    return [("x", f"{t}[a]", "a"), ("u", f"{t}[a]", "a"),
            ("y", f"{t}[a, b]", "ab"), ("z", f"{t}[b]", "b"),
            ("s", t, "s"), ("k", "a", None), ("ids", "a[b]", None),
            ("p", "P", "P")]


def input_values(rng, special):
    """The input file's values: 24 primal values, then 24 directions."""
    # Distinct values with several digits: a tie (in argmax, a comparison)
    # would let -O3's vector math, a few ulp away from libm, take the other
    # side of a discontinuity, which is no bug.
    primal = [round(rng.uniform(-2.5, 2.5), 4) for _ in range(24)]
    if special:
        for _ in range(rng.randrange(1, 4)):
            primal[rng.randrange(24)] = rng.choice(SPECIAL)
    direction = [rng.choice(FINITE) for _ in range(24)]
    return primal + direction


def write_npy(path, values):
    header = ("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }"
              % len(values))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00")
        f.write(struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack(f"<{len(values)}f", *values))


def dot_expr(pairs, t):
    """sum over (cotangent, direction, kind) of their inner products."""
    terms = []
    for cot, direction, kind in pairs:
        if kind == "s":
            terms.append(f"{cot} * {direction}")
        elif kind == "P":
            terms.append(f"sum({cot}.w * {direction}.w) + "
                         f"{cot}.c * {direction}.c")
        else:
            terms.append(f"sum({cot} * {direction})")
    return " + ".join(terms) if terms else f"{t}(0.0)"


def second_derivatives(t):
    """Reverse over reverse and forward over reverse, in main."""
    return [
        f"  let ds1 = |x: {t}[a], s: {t}| -> {t} "
        "{ grad(fw1, wrt: s)(x, s) };",
        "  print(\"second grad\", grad(ds1, wrt: s)(x, s));",
        "  print(\"second jvp\", jvp(ds1, (x, s), (x * 0.0, 1.0)).1);",
    ]


def program(rng, index):
    t = rng.choice(["f32", "f64"])
    gen = Generator(rng, t)
    scope = Scope({"s": ["s", "p.c"], "a": ["x", "u", "p.w"], "b": ["z"],
                   "ab": ["y"]})
    depth = rng.randrange(2, 4)
    f_body = gen.body("s", scope, depth)
    g_body = gen.body("a", scope, depth)
    params = parameters(t)
    signature = ", ".join(f"{name}: {ty}" for name, ty, _ in params)
    args = ", ".join(name for name, _, _ in params)
    differentiable = [(n, k) for n, _, k in params if k]

    # Which parameters the derivatives are taken with respect to, and in
    # what order (parameter order while wrt_any_order is a known bug).
    wrt = rng.sample(differentiable, rng.randrange(1, len(differentiable) + 1))
    if "wrt_any_order" in KNOWN_BUGS:
        wrt.sort(key=lambda item: differentiable.index(item))
    wrt_names = [n for n, _ in wrt]
    wrt_list = wrt_names[0] if len(wrt) == 1 else f"({', '.join(wrt_names)})"

    def take(offset, kind):
        # An input of the kind read from data at offset.
        at = {"s": f"data[nin: {offset}]",
              "a": f"data[nin: {offset} + i64(i)]",
              "b": f"data[nin: {offset} + i64(j)]",
              "ab": f"data[nin: {offset} + 2 * i64(i) + i64(j)]"}[kind]
        domain = {"s": "", "a": "for i in a ", "b": "for j in b ",
                  "ab": "for i in a, j in b "}[kind]
        value = f"{t}({at})"
        return f"{domain}{{ {value} }}" if domain else value

    layout = {"x": (0, "a"), "u": (3, "a"), "y": (6, "ab"), "z": (12, "b"),
              "s": (14, "s"), "pw": (15, "a"), "pc": (18, "s")}
    lines = []
    for name, (offset, kind) in layout.items():
        lines.append(f"  let {name} = {take(offset, kind)};")
        direction = "" if name in ("pw", "pc") else name
        if name not in ("pw", "pc"):
            lines.append(f"  let d{direction} = {take(24 + offset, kind)};")
    lines.append(f"  let dpw = {take(24 + 15, 'a')};")
    lines.append(f"  let dpc = {take(24 + 18, 's')};")
    lines.append("  let p = P { w: pw, c: pc };")
    lines.append("  let dp = P { w: dpw, c: dpc };")
    k_value = rng.randrange(3)
    lines.append(f"  let k = a({k_value});")
    lines.append(f"  let ids = for j in b {{ a((i64(j) * 2 + {k_value}) % 3) }};")
    lines.append(f"  print(\"f\", f({args}));")
    lines.append(f"  print(\"g\", g({args}));")

    # Forward mode: directions only for the wrt parameters.
    tangents = []
    for name, _, kind in params:
        if kind is None:
            tangents.append("()")
        elif name in wrt_names:
            tangents.append(f"d{name}")
        elif kind == "P":
            tangents.append("(dp * 0.0)")
        else:
            tangents.append(f"(d{name} * 0.0)")
    lines.append(f"  let (fv, ft) = jvp(f, ({args}), ({', '.join(tangents)}));")
    lines.append("  print(\"f.jvp\", fv);")
    lines.append("  print(\"deriv jvp\", ft);")
    # Reverse mode: grad with wrt, value_and_grad, vjp.
    gr = "gr" if len(wrt) == 1 else None
    lines.append(f"  let gr = grad(f, wrt: {wrt_list})({args});")
    pairs = [(gr or f"gr.{i}", f"d{n}", k) for i, (n, k) in enumerate(wrt)]
    lines.append(f"  print(\"deriv grad\", {dot_expr(pairs, t)});")
    lines.append(f"  let (fw, vg) = value_and_grad(f, wrt: {wrt_list})({args});")
    pairs = [("vg" if gr else f"vg.{i}", f"d{n}", k)
             for i, (n, k) in enumerate(wrt)]
    lines.append("  print(\"f.vg\", fw);")
    lines.append(f"  print(\"deriv value_and_grad\", {dot_expr(pairs, t)});")
    lines.append(f"  let (fy, pb) = vjp(f, {args});")
    lines.append("  let ct = pb(1.0);")
    pairs = [(f"ct.{i}", f"d{n}", k) for i, (n, _, k) in enumerate(params)
             if n in wrt_names]
    lines.append("  print(\"f.vjp\", fy);")
    lines.append(f"  print(\"deriv vjp\", {dot_expr(pairs, t)});")
    # The vector function: <w, J d> against <J^T w, d>.
    lines.append(f"  let (gv, gt) = jvp(g, ({args}), ({', '.join(tangents)}));")
    lines.append("  print(\"g.jvp\", gv);")
    lines.append("  let cw = for i in a { dx[i] + 0.5 };")
    lines.append("  print(\"gderiv jvp\", sum(cw * gt));")
    lines.append(f"  let (gy, gpb) = vjp(g, {args});")
    lines.append("  let gct = gpb(cw);")
    pairs = [(f"gct.{i}", f"d{n}", k) for i, (n, _, k) in enumerate(params)
             if n in wrt_names]
    lines.append("  print(\"g.vjp\", gy);")
    lines.append(f"  print(\"gderiv vjp\", {dot_expr(pairs, t)});")
    # vmap, a comprehension and implicit lifting over c.
    lines.append("  let xc = for q in c { x * (1.0 - 0.5 * "
                 f"{t}(q)) }};")
    lines.append(f"  let sc = for q in c {{ s + {t}(q) }};")
    lines.append("  let uc = broadcast(u, c);")
    lines.append(f"  let yc = for q in c {{ y - {t}(q) }};")
    lines.append("  let zc = broadcast(z, c);")
    lines.append("  print(\"batch vmap\", vmap(gw, over: c)(xc, uc, yc, zc, "
                 "sc));")
    lines.append("  print(\"batch for\", for q in c { gw(xc[q], uc[q], "
                 "yc[q], zc[q], sc[q]) });")
    lines.append("  print(\"batch lift\", gw(xc, u, yc, z, sc));")
    lines.append("  print(\"pgrad vmap\", vmap(grad(fw1), over: c)(xc, sc));")
    lines.append("  print(\"pgrad for\", for q in c { grad(fw1)(xc[q], "
                 "sc[q]) });")
    # Second derivatives: reverse over reverse against forward over reverse.
    if "second_derivatives" not in KNOWN_BUGS:
        lines += second_derivatives(t)
    main = "\n".join(lines)
    helpers = "\n".join(gen.helpers)
    return t, f"""// Random program {index} (scripts/fuzz_differential.py).
dim a = 3;
dim b = 2;
dim c = 2;
dim a2 = a;
dim nin = 48;

struct P {{ w: {t}[a], c: {t} }}

{helpers}

fn f({signature}) -> {t} {{
{f_body}
}}

fn g({signature}) -> {t}[a] {{
{g_body}
}}

// g and f of the float parameters alone, for vmap.
fn gw(x: {t}[a], u: {t}[a], y: {t}[a, b], z: {t}[b], s: {t}) -> {t}[a] {{
  g(x, u, y, z, s, a(1), for j in b {{ a(i64(j)) }}, P {{ w: u, c: s }})
}}
fn fw1(x: {t}[a], s: {t}) -> {t} {{
  f(x, x, for i in a, j in b {{ x[i] * {t}(j) }}, for j in b {{ s }}, s,
    a(2), for j in b {{ a(2 - i64(j)) }}, P {{ w: x, c: s }})
}}

fn main() {{
  let data = read_npy("in.npy", nin);
{main}
}}
"""


# --- running and comparing -----------------------------------------------

def run(dlc, mode, folder, timeout):
    # --no-cache: each program is compiled, which is what is being tested
    # (and the cache would fill with programs never seen again).
    command = [dlc, "run", "--no-cache", *mode, "program.dl"]
    try:
        result = subprocess.run(command, cwd=folder, capture_output=True,
                                text=True, timeout=timeout, env=ENV)
        return result.returncode, result.stdout, result.stderr
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def first_error(stderr):
    for line in stderr.splitlines():
        if "error:" in line:
            return line
    return ""


def numbers(text):
    return [float(x) for x in NUMBER.findall(text)]


def numbers_close(x, y, rtol, atol):
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    if rtol == 0 and atol == 0:
        return x == y and math.copysign(1, x) == math.copysign(1, y)
    return abs(x - y) <= atol + rtol * max(abs(x), abs(y))


def outputs_match(a, b, rtol, atol):
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    return all(numbers_close(x, y, rtol, atol)
               for x, y in zip(numbers(a), numbers(b)))


# Above this magnitude of f, its derivatives are not compared (see below).
ILL_CONDITIONED = 1e5


def internal_checks(stdout, float_type, vector_math):
    """Within one run's output: derivatives and batching agree. Returns the
    problems found, and how many comparisons were skipped (non-finite or
    ill-conditioned)."""
    groups = {}
    for line in stdout.splitlines():
        label, _, rest = line.partition(" ")
        if label in ("deriv", "gderiv", "batch", "pgrad", "second"):
            how, _, values = rest.partition(" ")
            groups.setdefault(label, []).append((how, numbers(values)))
        elif label.startswith("f.") or label == "f":
            groups.setdefault("fvalue", []).append((label, numbers(rest)))
        elif label.startswith("g.") or label == "g":
            groups.setdefault("gvalue", []).append((label, numbers(rest)))
    tolerance = {"f32": (2e-3, 2e-3), "f64": (1e-9, 1e-9)}[float_type]
    problems, skipped = [], 0
    # A huge primal is a division by a sum that cancels (`c / sum(y -
    # mean(y))`): its derivative is rounding noise over a tiny square, a
    # different noise in each mode (seed 1313, program 82: jvp 1.4e6,
    # reverse 0), so f's derivatives are not compared.
    f_values = [v for _, values in groups.get("fvalue", []) for v in values]
    ill_conditioned = any(abs(v) > ILL_CONDITIONED for v in f_values)
    for label, entries in groups.items():
        first_how, first = entries[0]
        for how, values in entries[1:]:
            if label in ("fvalue", "gvalue"):
                # The primal value is the same whatever computes it, but for
                # the rounding of vector math, inlined differently at -O3.
                rtol, atol = ((1e-5, 1e-6) if float_type == "f32" else
                              (1e-12, 1e-14) if vector_math else (0, 0))
            else:
                rtol, atol = tolerance
            if len(values) != len(first):
                problems.append(f"{label}: {first_how} has {len(first)} "
                                f"values, {how} {len(values)}")
                continue
            of_f = label in ("deriv", "second")
            non_finite = label in ("deriv", "gderiv", "second") and not all(
                math.isfinite(v) for v in first + values)
            if non_finite or (of_f and ill_conditioned):
                skipped += 1
                continue
            if label in ("fvalue", "gvalue", "batch", "pgrad"):
                ok = all(numbers_close(x, y, rtol, atol)
                         for x, y in zip(first, values))
            else:
                # An inner product: scale the tolerance by the magnitude of
                # what it sums, which can cancel.
                ok = all(abs(x - y) <= atol + rtol * max(abs(x), abs(y), 1.0)
                         for x, y in zip(first, values))
            if not ok:
                problems.append(f"{label}: {first_how} {first} vs {how} "
                                f"{values}")
    return problems, skipped


MODES = [("interp", ["--interp"]), ("O0", ["-O0"]), ("O3", ["-O3"])]


def check_program(dlc, folder, float_type, timeout):
    """The problems of the program in folder, and skipped comparisons."""
    results = {name: run(dlc, mode, folder, timeout) for name, mode in MODES}
    problems, skipped = [], 0
    base = results["interp"]
    for name, result in results.items():
        if result[0] == "timeout":
            problems.append(f"{name}: timed out after {timeout} s")
        elif result[0] not in (0, 1):
            problems.append(f"{name}: exit {result[0]}\n{result[2][-2000:]}")
        elif INTERNAL.search(result[2]):
            problems.append(f"{name}: {result[2][-2000:]}")
    if problems:
        return problems, results, skipped
    if base[0] != 0:
        problems.append("the interpreter failed:\n" + base[2][-2000:])
    for name, tol in (("O0", (0, 0)), ("O3", (1e-4, 1e-5))):
        result = results[name]
        if (result[0] != base[0] or first_error(result[2]) !=
                first_error(base[2])):
            problems.append(f"{name}: exit {result[0]} "
                            f"({first_error(result[2])}) where the "
                            f"interpreter gives {base[0]} "
                            f"({first_error(base[2])})")
        elif not outputs_match(base[1], result[1], *tol):
            diff = [f"  interp: {x}\n  {name}: {y}" for x, y in
                    zip(base[1].splitlines(), result[1].splitlines())
                    if not outputs_match(x, y, *tol)]
            problems.append(f"{name} differs from the interpreter:\n" +
                            "\n".join(diff[:6]))
    for name, result in results.items():
        found, skip = internal_checks(result[1], float_type, name == "O3")
        skipped += skip
        problems += [f"{name}: {p}" for p in found]
    return problems, results, skipped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dlc", required=True, help="the dlc to test")
    parser.add_argument("--count", type=int, default=30,
                        help="how many programs (default 30)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", type=int, default=0,
                        help="the index of the first program (to reproduce "
                        "one: --first N --count 1)")
    parser.add_argument("--time-limit", type=float, default=0,
                        help="stop starting programs after this many "
                        "seconds (default: no limit)")
    parser.add_argument("--timeout", type=float, default=60,
                        help="seconds one run of dlc may take")
    parser.add_argument("--out", help="folder for failing programs "
                        "(default: a temporary one)")
    parser.add_argument("--keep-going", action="store_true",
                        help="report every failing program, not the first")
    args = parser.parse_args()
    dlc = os.path.abspath(args.dlc)

    out = args.out or tempfile.mkdtemp(prefix="delta-fuzz-differential-")
    start = time.monotonic()
    tried = failed = skipped = special_inputs = 0
    for index in range(args.first, args.first + args.count):
        if args.time_limit and time.monotonic() - start > args.time_limit:
            break
        # One generator per program, so that any one reproduces alone.
        rng = random.Random(f"{args.seed}:{index}")
        special = rng.random() < 0.5
        float_type, text = program(rng, index)
        folder = os.path.join(out, f"program_{args.seed}_{index:04d}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "program.dl"), "w") as f:
            f.write(text)
        write_npy(os.path.join(folder, "in.npy"), input_values(rng, special))
        problems, _, skip = check_program(dlc, folder, float_type,
                                          args.timeout)
        tried += 1
        special_inputs += special
        skipped += skip
        if not problems:
            shutil.rmtree(folder)
            continue
        failed += 1
        print(f"FAIL program {index} (seed {args.seed}):", file=sys.stderr)
        for problem in problems:
            print("  " + problem.replace("\n", "\n  "), file=sys.stderr)
        print(f"  reproduce: cd {folder} && {dlc} run --interp program.dl; "
              f"{dlc} run -O0 program.dl; {dlc} run -O3 program.dl",
              file=sys.stderr)
        print(f"  or: {sys.argv[0]} --dlc {dlc} --seed {args.seed} "
              f"--first {index} --count 1", file=sys.stderr)
        if not args.keep_going:
            break
    elapsed = time.monotonic() - start
    print(f"{tried} programs ({special_inputs} with NaN/inf/-0 inputs), "
          f"{failed} failed, {skipped} derivative comparisons skipped "
          f"(non-finite or ill-conditioned), {elapsed:.0f} s")
    if not failed and not args.out:
        shutil.rmtree(out, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
