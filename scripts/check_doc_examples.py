#!/usr/bin/python3
"""Runs `dlc check` on every ```delta code block of the given Markdown files
(folders are searched for **/*.md).

A block preceded by `<!-- expect-error -->` must fail with exit status 1;
one preceded by `<!-- no-test -->` is skipped. Every other block must check
cleanly (exit 0). Any other exit status (a crash, a usage error) fails.
"""
import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

FENCE_RE = re.compile(r"^(\s*)(```+|~~~+)\s*(\S*)\s*$")
MARKER_RE = re.compile(r"^\s*<!--\s*(expect-error|no-test)\s*-->\s*$")


def blocks(path):
    """Yields (first line number, marker or None, code) of each delta block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE_RE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang = match.group(2), match.group(3)
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if lang != "delta":
            continue
        marker = None
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            found = MARKER_RE.match(lines[j])
            marker = found.group(1) if found else None
        yield start + 1, marker, "\n".join(body) + "\n"


def markdown_files(paths):
    for path in map(pathlib.Path, paths):
        if path.is_dir():
            yield from sorted(path.rglob("*.md"))
        elif path.exists():
            yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dlc", required=True, help="the dlc to run")
    parser.add_argument("paths", nargs="+", help="Markdown files or folders")
    args = parser.parse_args()

    failures = checked = skipped = 0
    with tempfile.TemporaryDirectory(prefix="delta-doc-examples-") as tmp:
        for md in markdown_files(args.paths):
            for line, marker, code in blocks(md):
                if marker == "no-test":
                    skipped += 1
                    continue
                checked += 1
                # The file name says where the block came from in diagnostics.
                name = re.sub(r"[^A-Za-z0-9_]", "_", f"{md.stem}_{line}")
                source = pathlib.Path(tmp) / f"{name}.dl"
                source.write_text(code, encoding="utf-8")
                result = subprocess.run(
                    [args.dlc, "check", "--color=never", str(source)],
                    capture_output=True, text=True, timeout=60)
                expected = 1 if marker == "expect-error" else 0
                if result.returncode != expected:
                    failures += 1
                    print(f"{md}:{line}: expected exit {expected}, got "
                          f"{result.returncode}\n{result.stderr}",
                          file=sys.stderr)
    print(f"doc examples: {checked} checked, {skipped} skipped, "
          f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
