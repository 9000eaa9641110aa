#!/usr/bin/python3
"""Comments anywhere: copies of the repository's sources with comments
(`// c`, `/* b */`, one on a line of its own) inserted between random
tokens, then `dlc fmt --verify` on all of them at two widths: formatting
must keep the AST and every comment, and be idempotent. The seed fixes the
copies.
Usage: comment_placement.py PATH/TO/dlc SOURCE_ROOT OUT_DIR [COUNT [W,W…]]"""
import pathlib
import random
import re
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import verify_all  # pylint: disable=wrong-import-position

# Numbers whole (`0.5`, `1e-3`): a comment inside one would split it.
TOKEN_RE = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\s+|\d[\w.]*(?:(?<=[eE])[-+]\d+)?|\w+|.',
    re.S)
COMMENTS = [" // c\n", " /* b */ ", "\n// own line\n"]


def main():
    dlc, root, out = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 300
    widths = sys.argv[5].split(",") if len(sys.argv) > 5 else ["100", "40"]
    sources = verify_all.sources(root.resolve())
    paths = []
    for index in range(count):
        rng = random.Random(f"comments:{index}")
        tokens = TOKEN_RE.findall((root / rng.choice(sources)).read_text(
            encoding="utf-8"))
        for _ in range(rng.choice([1, 2, 4])):
            tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(COMMENTS))
        path = pathlib.Path(out) / f"mutant_{index}.dl"
        path.write_text("".join(tokens), encoding="utf-8")
        paths.append(str(path))
    status = 0
    for width in widths:
        run = subprocess.run([dlc, "fmt", "--verify", "--width", width, *paths],
                             capture_output=True, text=True)
        # A comment inside a token's place may break the syntax: that is
        # reported, and is no failure of the formatter.
        failures = [line for line in run.stderr.splitlines()
                    if line.endswith(("changed the AST", "not idempotent",
                                      "lost a comment"))]
        print("\n".join(failures))
        print(f"width {width}: {count} files, {len(failures)} failures")
        status |= bool(failures) or run.returncode not in (0, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
