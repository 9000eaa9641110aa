#!/usr/bin/python3
"""Runs a Delta program twice, with the IR interpreter (the oracle) and with
native code (the JIT), and fails unless both give the same standard output,
the same first error line and the same exit status; then passes the
interpreter's output through, so that FileCheck checks one of them.

Usage: run_both.py DLC [dlc run options…] FILE
"""
import subprocess
import sys


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


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: run_both.py DLC [options…] FILE")
    dlc, arguments = sys.argv[1], sys.argv[2:]
    interp = run([dlc, "run", "--interp", *arguments])
    native = run([dlc, "run", *arguments])
    same = (interp[0] == native[0] and interp[1] == native[1] and
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
