#!/usr/bin/env python3
"""Mutation fuzzer: mutates the lang-tests' programs at random and checks
that dlc never crashes, hangs, or exits with a status other than 0 or 1.

Each mutant is one of the lang-tests/**/*.dl files with one to three
mutations: tokens or lines deleted, duplicated or swapped; numbers made
huge, negative or zero; identifiers renamed; a bracket added or removed;
an expression or block nested deeply; a keyword or operator inserted. Every
mutant goes through `dlc check` and `dlc run --interp`, and some through
`dlc build`, each under a timeout and a memory limit. A mutant fails if any
of them is killed by a signal, exits with 2 or more, reports an internal
error, or times out. (A run of a mutant whose numbers were changed may
legitimately take long, say a loop of 10^18 steps, and so may a mutant of a
lang-test that itself takes long to interpret: such a timeout of `run` is
counted, not failed.)

The seed fixes the mutants. A failing mutant is written to a folder and
the command that reproduces it is printed.

  scripts/fuzz_mutations.py --dlc build/release/bin/dlc --count 300 --seed 1
"""
import argparse
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>(?:\d[\d_]*\.?[\d_]*|\.\d+)(?:[eE][-+]?\d+)?[a-z0-9]*)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<space>\s+)
  | (?P<punct>\.\.|->|==|!=|<=|>=|&&|\|\||.)
""", re.VERBOSE | re.DOTALL)

INTERNAL = re.compile(r"internal (compiler )?error|LLVM ERROR")
# A crash keeps its signal instead of becoming status 1 (driver.md).
ENV = dict(os.environ, DLC_KEEP_CRASH_SIGNALS="1")

KEYWORDS = ["fn", "export", "struct", "dim", "let", "loop", "for", "in",
            "while", "if", "else", "import", "as", "true", "false"]
BUILTINS = ["grad", "jvp", "vjp", "vmap", "sum", "max", "cumsum", "size",
            "rename", "broadcast", "reduce", "value_and_grad", "where",
            "print", "read_npy", "write_npy", "checkpoint", "stop_gradient",
            "f32", "f64", "i64", "i32", "main", "exp", "argmax"]
PUNCT = ["(", ")", "[", "]", "{", "}", ",", ";", ":", ".", "..", "->", "=",
         "+", "-", "*", "/", "%", "^", "<", ">", "==", "!", "&&", "||", "|",
         "@"]
NUMBERS = ["0", "-1", "1", "2", "-0.0", "0.0", "1e308", "1e-320", "nan",
           "9223372036854775807", "9223372036854775808",
           "-9223372036854775808", "4611686018427387905", "4294967296",
           "2147483648", "99999999999999999999999", "1e39", "3.4e38",
           "1_000_000_000", "65536", "0x10", "1e", "1.", ".5e+", "1f32",
           "3i32", "2.0f64", "7u8"]


def tokenize(text):
    return [(m.lastgroup, m.group()) for m in TOKEN.finditer(text)]


class Mutator:
    def __init__(self, rng):
        self.rng = rng
        self.changed_numbers = False

    def pick(self, options):
        return self.rng.choice(options)

    def mutate(self, text):
        name = self.pick(["delete_token", "duplicate_token", "swap_tokens",
                          "delete_line", "duplicate_line", "swap_lines",
                          "number", "number", "rename", "rename",
                          "bracket", "nest", "insert_token"])
        return name, getattr(self, name)(text)

    # Token-level mutations act on the tokens other than space and comments.
    def _tokens(self, text):
        tokens = tokenize(text)
        code = [i for i, (kind, _) in enumerate(tokens)
                if kind not in ("space", "comment")]
        return tokens, code

    @staticmethod
    def _join(tokens):
        return "".join(value for _, value in tokens)

    def delete_token(self, text):
        tokens, code = self._tokens(text)
        if code:
            del tokens[self.pick(code)]
        return self._join(tokens)

    def duplicate_token(self, text):
        tokens, code = self._tokens(text)
        if code:
            i = self.pick(code)
            tokens.insert(i, (tokens[i][0], tokens[i][1] + " "))
        return self._join(tokens)

    def swap_tokens(self, text):
        tokens, code = self._tokens(text)
        if len(code) >= 2:
            i = self.pick(code)
            # Mostly a neighbour, sometimes anywhere.
            nearby = [j for j in code if 0 < abs(j - i) <= 4]
            j = self.pick(nearby if nearby and self.rng.random() < 0.7
                          else code)
            tokens[i], tokens[j] = tokens[j], tokens[i]
        return self._join(tokens)

    def insert_token(self, text):
        tokens, code = self._tokens(text)
        if code:
            value = self.pick(KEYWORDS + BUILTINS + PUNCT + NUMBERS)
            tokens.insert(self.pick(code), ("punct", f" {value} "))
        return self._join(tokens)

    def _code_lines(self, lines):
        return [i for i, line in enumerate(lines)
                if line.strip() and not line.strip().startswith("//")]

    def delete_line(self, text):
        lines = text.split("\n")
        code = self._code_lines(lines)
        if code:
            del lines[self.pick(code)]
        return "\n".join(lines)

    def duplicate_line(self, text):
        lines = text.split("\n")
        code = self._code_lines(lines)
        if code:
            i = self.pick(code)
            lines.insert(i, lines[i])
        return "\n".join(lines)

    def swap_lines(self, text):
        lines = text.split("\n")
        code = self._code_lines(lines)
        if len(code) >= 2:
            i, j = self.rng.sample(code, 2)
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)

    def number(self, text):
        tokens, _ = self._tokens(text)
        numbers = [i for i, (kind, _) in enumerate(tokens) if kind == "number"]
        if not numbers:
            return self.insert_token(text)
        self.changed_numbers = True
        # Sometimes every occurrence of one number, e.g. a dim's size.
        chosen = self.pick(numbers)
        new = self.pick(NUMBERS + ["0", "-1", "-3", "10000000000"])
        targets = ([i for i in numbers if tokens[i][1] == tokens[chosen][1]]
                   if self.rng.random() < 0.3 else [chosen])
        for i in targets:
            tokens[i] = ("number", new)
        return self._join(tokens)

    def rename(self, text):
        tokens, _ = self._tokens(text)
        idents = sorted({value for kind, value in tokens if kind == "ident"})
        if not idents:
            return text
        old = self.pick(idents)
        new = self.pick(idents + KEYWORDS + BUILTINS + ["_", "x1", "a" * 300])
        everywhere = self.rng.random() < 0.5
        occurrences = [i for i, (kind, value) in enumerate(tokens)
                       if kind == "ident" and value == old]
        for i in (occurrences if everywhere else
                  [self.pick(occurrences)]):
            tokens[i] = ("ident", new)
        return self._join(tokens)

    def bracket(self, text):
        tokens, code = self._tokens(text)
        brackets = [i for i in code if tokens[i][1] in "()[]{}|"]
        if brackets and self.rng.random() < 0.5:
            del tokens[self.pick(brackets)]
        elif code:
            tokens.insert(self.pick(code), ("punct", self.pick("()[]{}")))
        return self._join(tokens)

    def nest(self, text):
        """Wraps a token or a block's content many levels deep."""
        tokens, code = self._tokens(text)
        operands = [i for i in code if tokens[i][0] in ("number", "ident")]
        if not operands:
            return text
        i = self.pick(operands)
        # Nesting a number changes its value (`20 + 20 + ...` as a dim's
        # size makes a loop of a thousand steps), as `number` does.
        self.changed_numbers |= tokens[i][0] == "number"
        depth = self.pick([50, 200, 300, 1000, 5000, 20000])
        value = tokens[i][1]
        # A nested number may take another value (`20 + 20 + ...` as a
        # dim's size), and a longer run is then no bug.
        self.changed_numbers |= tokens[i][0] == "number"
        style = self.pick(["parens", "negate", "call", "block", "index",
                           "binary", "if", "tuple", "lambda"])
        if style == "parens":
            value = "(" * depth + value + ")" * depth
        elif style == "negate":
            value = "-" * depth + value
        elif style == "call":
            fn = self.pick(["exp", "sum", "f32", "grad", "tanh"])
            value = f"{fn}(" * depth + value + ")" * depth
        elif style == "block":
            value = "if true { " * depth + value + " } else { 0 }" * depth
        elif style == "index":
            value = value + "[a: 0]" * depth
        elif style == "binary":
            value = " + ".join([value] * depth)
        elif style == "if":
            value = (f"if {value} > 0.0 {{ {value} }} else " * depth +
                     f"{{ {value} }}")
        elif style == "tuple":
            value = "(" * depth + value + ",)" * depth
        else:
            value = "|q| " * depth + value
        tokens[i] = (tokens[i][0], value)
        return self._join(tokens)


# A dlc built with AddressSanitizer reserves terabytes of address space for
# its shadow memory, so it cannot run under an address-space limit: its
# allocations are limited through ASan's options instead (--sanitized).
SANITIZED = False
ASAN_ALLOCATION_FAILED = re.compile(
    r"AddressSanitizer: (out of memory|requested allocation size|"
    r"allocation-size-too-big)")


def limit_memory():
    # 4 GiB of address space: a mutant's huge array fails to allocate
    # instead of taking the machine's memory.
    if not SANITIZED:
        limit = 4 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(command, folder, timeout):
    try:
        result = subprocess.run(command, cwd=folder, capture_output=True,
                                text=True, errors="replace", timeout=timeout,
                                preexec_fn=limit_memory, env=ENV)
        return result.returncode, result.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def lang_tests():
    files = []
    for folder, _, names in os.walk(os.path.join(ROOT, "lang-tests")):
        files += [os.path.join(folder, name) for name in names
                  if name.endswith(".dl")]
    return sorted(files)


def check_mutant(dlc, folder, build, timeout, changed_numbers, slow_source):
    """The problems of the mutant in folder, whether `run` timed out
    legitimately (after a number changed, or because the unmutated program
    itself takes long: slow_source()), and whether the mutant passed `check`
    and was run."""
    steps = [("check", [dlc, "check", "mutant.dl"])]
    steps.append(("run", [dlc, "run", "--interp", "mutant.dl"]))
    if build:
        steps.append(("build", [dlc, "build", "--no-cache", "mutant.dl", "-o",
                                "mutant"]))
    # Compiling with LLVM takes longer than checking.
    limits = {"check": timeout, "run": timeout, "build": 3 * timeout}
    problems, slow, ran = [], False, False
    for name, command in steps:
        code, stderr = run(command, folder, limits[name])
        ran = ran or name == "run"
        if code == "timeout":
            if name == "run" and (changed_numbers or slow_source()):
                slow = True
                continue
            problems.append(f"dlc {name}: timed out after {timeout} s")
        elif code < 0 and SANITIZED and ASAN_ALLOCATION_FAILED.search(stderr):
            # The address-space limit's counterpart: ASan aborts a throwing
            # `new` beyond max_allocation_size_mb even with
            # allocator_may_return_null, where the limit gives bad_alloc.
            continue
        elif code < 0:
            problems.append(f"dlc {name}: killed by signal {-code}\n"
                            f"{stderr[-1500:]}")
        elif code not in (0, 1):
            problems.append(f"dlc {name}: exit {code}\n{stderr[-1500:]}")
        elif INTERNAL.search(stderr):
            # dlc reports its own bugs with exit status 1 too.
            problems.append(f"dlc {name}: {stderr[-1500:]}")
        if name == "check" and code != 0:
            break  # a program that does not check is not run
    return problems, slow, ran


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dlc", required=True, help="the dlc to test")
    parser.add_argument("--count", type=int, default=300,
                        help="how many mutants (default 300)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", type=int, default=0,
                        help="the index of the first mutant (to reproduce "
                        "one: --first N --count 1)")
    parser.add_argument("--time-limit", type=float, default=0,
                        help="stop starting mutants after this many seconds")
    parser.add_argument("--timeout", type=float, default=10,
                        help="seconds one run of dlc may take (default 10)")
    parser.add_argument("--build-fraction", type=float, default=0.05,
                        help="the share of mutants also built (default 0.05)")
    parser.add_argument("--out", help="folder for failing mutants "
                        "(default: a temporary one)")
    parser.add_argument("--keep-going", action="store_true")
    parser.add_argument("--sanitized", action="store_true",
                        help="dlc is an AddressSanitizer build: limit its "
                        "allocations with ASAN_OPTIONS, not the address "
                        "space")
    args = parser.parse_args()
    if args.sanitized:
        global SANITIZED
        SANITIZED = True
        options = ENV.get("ASAN_OPTIONS", "")
        ENV["ASAN_OPTIONS"] = ":".join(
            part for part in (options, "allocator_may_return_null=1",
                              "max_allocation_size_mb=4096") if part)
    dlc = os.path.abspath(args.dlc)
    sources = lang_tests()

    out = args.out or tempfile.mkdtemp(prefix="delta-fuzz-mutations-")
    start = time.monotonic()
    tried = failed = slow_runs = ran = 0
    source_seconds = {}
    for index in range(args.first, args.first + args.count):
        if args.time_limit and time.monotonic() - start > args.time_limit:
            break
        rng = random.Random(f"{args.seed}:{index}")
        source = rng.choice(sources)
        with open(source, encoding="utf-8", errors="replace") as f:
            text = f.read()
        mutator = Mutator(rng)
        applied = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            name, text = mutator.mutate(text)
            applied.append(name)
        build = rng.random() < args.build_fraction
        folder = os.path.join(out, f"mutant_{args.seed}_{index:05d}")
        os.makedirs(folder, exist_ok=True)
        # Data files and modules that the program reads sit beside it: a
        # copy, since a mutant may write where the original reads.
        inputs = os.path.join(os.path.dirname(source), "Inputs")
        if os.path.isdir(inputs):
            shutil.copytree(inputs, os.path.join(folder, "Inputs"),
                            symlinks=True)
        with open(os.path.join(folder, "mutant.dl"), "w") as f:
            f.write(text)
        def slow_source():
            # Whether the unmutated program's own run takes a quarter of the
            # timeout or more (the interpreter is slow on some lang-tests,
            # and the machine may be busy): then a mutant's timeout is no bug.
            if source not in source_seconds:
                began = time.monotonic()
                run([dlc, "run", "--interp", source],
                    os.path.dirname(source), args.timeout)
                source_seconds[source] = time.monotonic() - began
            return source_seconds[source] >= args.timeout / 4

        problems, slow, was_run = check_mutant(dlc, folder, build,
                                               args.timeout,
                                               mutator.changed_numbers,
                                               slow_source)
        tried += 1
        ran += was_run
        slow_runs += slow
        if not problems:
            shutil.rmtree(folder)
            continue
        failed += 1
        relative = os.path.relpath(source, ROOT)
        print(f"FAIL mutant {index} of {relative} ({', '.join(applied)}):",
              file=sys.stderr)
        for problem in problems:
            print("  " + problem.replace("\n", "\n  "), file=sys.stderr)
        print(f"  mutant: {folder}/mutant.dl", file=sys.stderr)
        print(f"  reproduce: {sys.argv[0]} --dlc {dlc} --seed {args.seed} "
              f"--first {index} --count 1 --keep-going --out DIR",
              file=sys.stderr)
        if not args.keep_going:
            break
    elapsed = time.monotonic() - start
    print(f"{tried} mutants of {len(sources)} lang-tests ({ran} passed "
          f"check and were run), {failed} failed, "
          f"{slow_runs} runs stopped at the timeout after a number changed "
          f"or on a slow lang-test, "
          f"{elapsed:.0f} s")
    if not failed and not args.out:
        shutil.rmtree(out, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
