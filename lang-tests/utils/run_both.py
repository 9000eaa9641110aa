#!/usr/bin/python3
"""Runs a Delta program twice, with the IR interpreter (the oracle) and with
native code (the JIT), and fails unless both give the same standard output,
the same first error line and the same exit status; then passes the
interpreter's output through, so that FileCheck checks one of them.

Usage: run_both.py DLC [--rtol=R] [--atol=A] [dlc run options…] FILE

With --rtol or --atol, numbers in the output may differ by up to
atol + rtol * max(|a|, |b|) (for -O3, whose vector math is not bitwise
libm's); infinities must match exactly, a NaN matches any NaN, and all
other text must be the same.
"""
import math
import re
import subprocess
import sys

NUMBER = re.compile(r"(?<![\w.])[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)(?!\w)")


def run(command):
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=600)
    return result.returncode, result.stdout, result.stderr


def first_error(stderr):
    """The first line that reports an error: warnings and the like may
    differ in number between the paths, the error itself must not."""
    for line in stderr.splitlines():
        if "error:" in line:
            return line
    return ""


def close(a, b, rtol, atol):
    """Whether outputs a and b differ only in numbers, each within the
    tolerance."""
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
        x, y = float(x), float(y)
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif math.isinf(x) or math.isinf(y):
            if x != y:
                return False
        elif abs(x - y) > atol + rtol * max(abs(x), abs(y)):
            return False
    return True


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: run_both.py DLC [--rtol=R] [--atol=A] [options…] FILE")
    dlc, arguments = sys.argv[1], sys.argv[2:]
    tolerance = {"--rtol": 0.0, "--atol": 0.0}
    while arguments and arguments[0].split("=")[0] in tolerance:
        name, value = arguments.pop(0).split("=", 1)
        tolerance[name] = float(value)
    interp = run([dlc, "run", "--interp", *arguments])
    native = run([dlc, "run", *arguments])
    if tolerance["--rtol"] or tolerance["--atol"]:
        same_output = close(interp[1], native[1], tolerance["--rtol"],
                            tolerance["--atol"])
    else:
        same_output = interp[1] == native[1]
    same = (interp[0] == native[0] and same_output and
            first_error(interp[2]) == first_error(native[2]))
    if not same:
        sys.stderr.write("interpreted and compiled runs differ\n")
        for name, (code, out, err) in (("interpreted", interp),
                                       ("compiled", native)):
            sys.stderr.write(f"--- {name}: exit {code}\n{out}{err}")
        sys.exit(3)
    sys.stdout.write(interp[1])
    sys.stderr.write(interp[2])
    sys.exit(interp[0])


if __name__ == "__main__":
    main()
