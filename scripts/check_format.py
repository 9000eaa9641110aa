#!/usr/bin/python3
"""Fails if a C++ file of the compiler or runtime differs from clang-format's
output (.clang-format at the root; the test suite pins LLVM 19's binary)."""
import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = ["compiler", "runtime"]
SUFFIXES = {".h", ".cpp", ".c"}


def source_files():
    """Tracked files when in a git checkout (so scratch files do not count),
    every file of the folders otherwise."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--", *FOLDERS], cwd=ROOT, check=True,
            capture_output=True, text=True).stdout.split()
        files = [ROOT / name for name in listed]
    except (OSError, subprocess.CalledProcessError):
        files = [p for folder in FOLDERS for p in (ROOT / folder).rglob("*")]
    return sorted(p for p in files if p.suffix in SUFFIXES and p.is_file())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clang-format",
                        default="/usr/lib/llvm-19/bin/clang-format")
    parser.add_argument("--fix", action="store_true",
                        help="rewrite the files instead of checking them")
    args = parser.parse_args()
    files = source_files()
    if not files:
        return 0
    mode = ["-i"] if args.fix else ["--dry-run", "-Werror"]
    result = subprocess.run([args.clang_format, *mode, *map(str, files)],
                            cwd=ROOT)
    if result.returncode != 0 and not args.fix:
        print("Some files are not formatted; run scripts/check_format.py "
              "--fix", file=sys.stderr)
    return 1 if result.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
