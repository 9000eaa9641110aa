#!/usr/bin/python3
"""Runs the compiler itself under valgrind (memcheck) on the AD language
tests that stress it most (grad of grad, loops in conditionals, tapes,
custom rules): `dlc build --emit=obj` must finish with no invalid read or
write and no use of uninitialized memory. Issue 30 found a use-after-free
here that the generated code's own tests could not see.

valgrind 3.19 cannot read the DWARF 5 line tables of a clang-19 build, so
the compiler is checked as a copy without debug info (objcopy
--strip-debug); reports then name functions, not lines. Leaks are not
checked: LLVM keeps some objects until exit by design.

Prints one line per program and `N passed, M failed`; SKIPPED when valgrind
or objcopy is missing. Usage: valgrind_compiler.py --dlc PATH [FILE...]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = [os.path.join(SOURCE, "lang-tests", "ad", name) for name in (
    "grad_of_grad.dl", "grad_of_grad_loop_in_if.dl", "hvp.dl",
    "residual_tape.dl", "custom_vjp.dl", "while.dl")]
VALGRIND_ERROR = 99  # valgrind's exit status when it found an error


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dlc", required=True)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    valgrind = shutil.which("valgrind")
    objcopy = shutil.which("objcopy") or shutil.which("llvm-objcopy-19")
    if valgrind is None or objcopy is None:
        print("valgrind_compiler: SKIPPED: valgrind or objcopy is missing")
        return 0
    passed = failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        dlc = os.path.join(scratch, "dlc")
        subprocess.run([objcopy, "--strip-debug", args.dlc, dlc], check=True)
        for path in args.files or PROGRAMS:
            run = subprocess.run(
                [valgrind, "-q", f"--error-exitcode={VALGRIND_ERROR}",
                 "--leak-check=no", dlc, "build", "--emit=obj", path, "-o",
                 os.path.join(scratch, "out.o")],
                capture_output=True, text=True, timeout=600)
            name = os.path.relpath(path, SOURCE)
            if run.returncode == 0:
                passed += 1
                print(f"PASS {name}")
            else:
                failed += 1
                print(f"FAIL {name} (exit {run.returncode})\n{run.stderr}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
