#!/usr/bin/env python3
"""Writes random small Delta programs with gradcheck directives and runs
`dlc test` on them.

Each program composes the differentiable builtins (maps, reductions,
contractions, cumsum, indexing, where, if, loop) over small dims; its
functions are checked against f64 finite differences (docs/testing.md). The
seed fixes the programs, so a failure reproduces: the folder is kept and
its path printed.

  scripts/gen_random_ad_tests.py --dlc build/release/bin/dlc --count 40
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

# Types: "s" f32, "a" f32[a], "ab" f32[a, b].
PARAMS = {"s": ["s"], "a": ["x", "u"], "ab": ["y"]}


class Generator:
    def __init__(self, rng):
        self.rng = rng

    def pick(self, options):
        return self.rng.choice(options)

    def leaf(self, kind):
        if self.rng.random() < 0.2:
            constant = f"{self.rng.uniform(-1.5, 1.5):.2f}"
            if kind == "s":
                return constant
            return f"({self.leaf(kind)} * {constant})"
        return self.pick(PARAMS[kind])

    def expr(self, kind, depth):
        if depth <= 0:
            return self.leaf(kind)
        choice = self.rng.random()
        if choice < 0.3:
            return self.unary(self.expr(kind, depth - 1))
        if choice < 0.6:
            return self.binary(self.expr(kind, depth - 1),
                               self.expr(self.smaller(kind), depth - 1))
        if choice < 0.8:
            return self.reduce_to(kind, depth - 1)
        return self.control(kind, depth - 1)

    def smaller(self, kind):
        # Operands combine by name: f32[a] + f32[a, b] is f32[a, b].
        return self.pick({"s": ["s"], "a": ["s", "a"],
                          "ab": ["s", "a", "ab"]}[kind])

    def unary(self, e):
        # Compositions stay bounded, and log/sqrt/pow see positive values.
        return self.pick([
            f"sin({e})", f"cos({e})", f"tanh({e})", f"sigmoid({e})",
            f"exp(0.5 * tanh({e}))", f"log(1.5 + sin({e}))",
            f"sqrt(1.0 + {e} * {e})", f"abs({e})", f"relu({e})",
            f"tan(0.5 * tanh({e}))", f"({e}) ^ 2.0",
            f"pow(1.2 + sigmoid({e}), 0.7)", f"(-{e})",
        ])

    def binary(self, e1, e2):
        return self.pick([
            f"({e1} + {e2})", f"({e1} - {e2})", f"({e1} * {e2})",
            f"({e1} / (1.5 + sin({e2})))", f"max({e1}, {e2})",
            f"min({e1}, {e2})", f"where({e1} > {e2}, {e1} * {e2}, sin({e2}))",
            f"pow(1.2 + sigmoid({e1}), tanh({e2}))",
        ])

    def reduce_to(self, kind, depth):
        if kind == "s":
            a = self.expr("a", depth)
            return self.pick([
                f"sum({a})", f"mean({self.expr('ab', depth)})",
                f"max({a}, a)", f"min({a}, a)", f"prod(tanh({a}) + 1.2, a)",
                f"dot({a}, {self.expr('a', depth)}, a)",
                # Parenthesized: indexing binds tighter than `^`.
                f"({a})[a: {self.rng.randrange(3)}]", f"({a})[k]",
                f"sum(cumsum({a}, a) * x)",
            ])
        if kind == "a":
            ab = self.expr("ab", depth)
            return self.pick([
                f"sum({ab}, b)", f"mean({ab}, b)", f"max({ab}, b)",
                f"dot({ab}, {self.expr('ab', depth)}, b)",
                f"cumsum({self.expr('a', depth)}, a)",
                f"prod(sigmoid({ab}) + 0.5, b)",
            ])
        return (f"({self.expr('a', depth)} * "
                f"broadcast({self.expr('s', depth)}, b))")

    def control(self, kind, depth):
        e1, e2 = self.expr(kind, depth), self.expr(kind, depth)
        if self.rng.random() < 0.5:
            condition = self.expr("s", depth)
            return f"(if {condition} > 0.1 {{ {e1} }} else {{ {e2} }})"
        steps = self.rng.randrange(2, 8)
        return (f"(loop acc = {e1} for step in 0..{steps} "
                f"{{ tanh(0.8 * acc + 0.3 * {e2}) }})")


def program(rng, index):
    gen = Generator(rng)
    depth = rng.randrange(2, 4)
    scalar = gen.expr("s", depth)
    vector = gen.expr("a", depth)
    seed = rng.randrange(1, 1000)
    hvp = "-hvp" if rng.random() < 0.3 else ""
    return f"""// Random program {index} (scripts/gen_random_ad_tests.py).
dim a = 3;
dim b = 2;

fn f(x: f32[a], u: f32[a], y: f32[a, b], s: f32, k: a) -> f32 {{
  {scalar}
}}
// gradcheck{hvp}: f seed={seed}

fn g(x: f32[a], u: f32[a], y: f32[a, b], s: f32, k: a) -> f32[a] {{
  {vector}
}}
// gradcheck: g seed={seed + 1}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dlc", required=True, help="the dlc to test")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="folder for the programs (default: a "
                        "temporary one, removed if every check passes)")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    out = args.out or tempfile.mkdtemp(prefix="delta-random-ad-")
    os.makedirs(out, exist_ok=True)
    for index in range(args.count):
        with open(os.path.join(out, f"random_{index:03d}.dl"), "w") as f:
            f.write(program(rng, index))
    result = subprocess.run([args.dlc, "test", "--interp-only", out])
    if result.returncode != 0:
        print(f"the programs are in {out}", file=sys.stderr)
    elif not args.out:
        shutil.rmtree(out)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
