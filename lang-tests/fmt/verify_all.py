#!/usr/bin/python3
"""Every Delta source of the repository is formatted, and formatting it is
safe. The sources: the .dl files of lang-tests/, examples/, stdlib/ and
bench/ that parse (syntax fail_* tests are skipped) and the ```delta blocks
of docs/ and README.md that scripts/check_doc_examples.py checks.

1. `dlc fmt --verify` on all of them: formatting keeps the AST (same dump),
   is idempotent and keeps every comment.
2. `dlc fmt --check` on all of them: each is already in the canonical
   style.

Usage: verify_all.py PATH/TO/dlc SOURCE_ROOT [--write]
With --write, formats them instead (files in place, blocks in their
Markdown file): what to run after a change to the canonical style."""
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT_FOLDERS = ("lang-tests", "examples", "stdlib", "bench")

# Every source is checked. (The inputs of the formatter's own tests are
# lang-tests/fmt/Inputs/*.dl.in: data, messy on purpose, not sources.)
# --write skips the lang-tests that name source positions (LOCATION_RE):
# formatting would move their code away from the lines their CHECKs name,
# so such a test is formatted by hand, its CHECKs re-pointed, then checked.
LOCATION_RE = re.compile(
    r"@LINE|\.dl:(\d+|\{\{[^}]*\}\}):|:\d+:\d+\b|\bline \d+|// expect-")


def names_positions(root, path):
    return path.startswith("lang-tests/") and LOCATION_RE.search(
        (root / path).read_text(encoding="utf-8")) is not None


# A benchmark template: `dim n = @N@;` until bench/run.py fills it in.
TEMPLATE_RE = re.compile(r"@[A-Z][A-Z_0-9]*@")


def sources(root):
    """The .dl files that parse, as paths relative to `root`."""
    return sorted(
        str(path.relative_to(root)) for folder in ROOT_FOLDERS
        for path in (root / folder).rglob("*.dl")
        if not (path.parent.name == "syntax" and path.name.startswith("fail_"))
        and not TEMPLATE_RE.search(path.read_text(encoding="utf-8")))


# Put before a ```delta block of the docs (as the doc checker's markers
# are), this leaves it as written: `<!-- unformatted: it shows trailing
# commas -->`.
UNFORMATTED_BLOCK_RE = re.compile(r"^\s*<!--\s*unformatted:.*-->\s*$")


def doc_blocks(root):
    """(Markdown file, 0-based index of the block's first line, code) of
    each ```delta block that the doc checker runs, at the margin, unless
    marked unformatted."""
    sys.path.insert(0, str(root / "scripts"))
    import check_doc_examples  # pylint: disable=import-outside-toplevel
    paths = [root / "docs", root / "README.md"]
    for md in check_doc_examples.markdown_files(paths):
        lines = md.read_text(encoding="utf-8").splitlines()
        for line, marker, code in check_doc_examples.blocks(md):
            before = [text for text in lines[:line - 1] if text.strip()]
            if before and UNFORMATTED_BLOCK_RE.match(before[-1]):
                continue
            if marker is None and not lines[line - 1].startswith(" "):
                yield md, line, code


def fmt(dlc, flag, files, cwd):
    return subprocess.run([dlc, "fmt", *flag, *files], capture_output=True,
                          text=True, cwd=cwd)


def main():
    dlc, root = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    write = "--write" in sys.argv[3:]
    files = sources(root)
    with tempfile.TemporaryDirectory() as tmp:
        blocks = list(doc_blocks(root))
        block_files = []
        for i, (md, line, code) in enumerate(blocks):
            path = pathlib.Path(tmp) / f"{md.stem}_{line}_{i}.dl"
            path.write_text(code, encoding="utf-8")
            block_files.append(str(path))
        if write:
            return write_all(dlc, root, files, blocks, block_files)
        status = 0
        verify = fmt(dlc, ["--verify"], files + block_files, root)
        sys.stdout.write(verify.stdout + verify.stderr)
        print(f"fmt --verify: {len(files)} files, {len(blocks)} doc blocks, "
              f"exit status {verify.returncode}")
        status |= verify.returncode
        check = fmt(dlc, ["--check"], files + block_files, root)
        out = check.stdout + check.stderr
        for i, path in enumerate(block_files):
            md, line, _ = blocks[i]
            out = out.replace(path, f"{md.relative_to(root)}:{line} (block)")
        sys.stdout.write(out)
        print(f"fmt --check: {len(files)} files, {len(blocks)} doc blocks, "
              f"exit status {check.returncode}")
        return status | check.returncode


def write_all(dlc, root, files, blocks, block_files):
    run = fmt(dlc, [], [
        f for f in files if not names_positions(root, f)
    ] + block_files, root)
    sys.stdout.write(run.stdout + run.stderr)
    # Blocks from the last up, so that earlier blocks keep their lines.
    for (md, line, code), path in reversed(list(zip(blocks, block_files))):
        formatted = pathlib.Path(path).read_text(encoding="utf-8")
        if formatted == code:
            continue
        lines = md.read_text(encoding="utf-8").split("\n")
        count = len(code.rstrip("\n").split("\n"))
        lines[line:line + count] = formatted.rstrip("\n").split("\n")
        md.write_text("\n".join(lines), encoding="utf-8")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
