#!/usr/bin/python3
"""Tests the editor support files against the compiler.

1. The TextMate grammar (editors/vscode/syntaxes/delta.tmLanguage.json) is
   well-formed JSON, every include resolves and every regex compiles.
2. Its keyword and builtin lists are exactly the lexer's keywords
   (compiler/syntax/lexer.h) and the builtins of compiler/sema/builtins.def
   (with the math builtins it takes from compiler/ir/ops.def);
   the Vim syntax and the Emacs mode name every one of them too.
3. A small TextMate tokenizer (first match wins, begin/end rules nest, as
   in VS Code) runs the grammar over every .dl file of lang-tests/,
   examples/ and stdlib/: no file may produce an `invalid` token, except
   the syntax tests that are about invalid characters (syntax/fail_*).

Python's `re` stands in for Oniguruma: the grammar keeps to their common
subset (no possessive quantifiers, fixed-width lookbehind).
Usage: check_grammar.py [SOURCE_ROOT]"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parent.parent)
GRAMMAR = ROOT / "editors/vscode/syntaxes/delta.tmLanguage.json"
failures = []


def fail(message):
    failures.append(message)


def compiler_keywords():
    text = (ROOT / "compiler/syntax/lexer.h").read_text()
    return set(re.findall(r"X\(Kw\w+,\s*\"'(\w+)'\"\)", text))


def compiler_builtins():
    """builtins.def's rows and the math builtins it takes from ops.def."""
    text = (ROOT / "compiler/sema/builtins.def").read_text()
    ops = (ROOT / "compiler/ir/ops.def").read_text()
    return set(re.findall(r"^DELTA_BUILTIN\(\w+,\s*\"(\w+)\"\)", text, re.M)) | set(
        re.findall(r"^DELTA_MATH_OP2?\(\w+,\s*\"(\w+)\"", ops, re.M))


def alternatives(regex):
    """The words of a `\\b(a|b|c)\\b` regex."""
    found = re.search(r"\(([\w|]+)\)", regex)
    return set(found.group(1).split("|")) if found else set()


class Grammar:
    def __init__(self, data):
        self.repository = data.get("repository", {})
        self.top = self.flatten(data["patterns"], set())

    def flatten(self, patterns, seen):
        rules = []
        for pattern in patterns:
            include = pattern.get("include")
            if include:
                name = include.lstrip("#")
                if name not in self.repository:
                    fail(f"grammar: unresolved include {include}")
                    continue
                if name in seen:
                    continue
                rules.extend(self.flatten([self.repository[name]], seen | {name}))
            elif "match" in pattern or "begin" in pattern:
                rule = dict(pattern)
                for key in ("match", "begin", "end"):
                    if key in rule:
                        try:
                            rule[key + "_re"] = re.compile(rule[key])
                        except re.error as error:
                            fail(f"grammar: regex {rule[key]!r}: {error}")
                            rule[key + "_re"] = re.compile(r"(?!)")
                if "begin" in rule:
                    rule["inner"] = pattern.get("patterns", [])
                rules.append(rule)
            elif "patterns" in pattern:
                rules.extend(self.flatten(pattern["patterns"], seen))
        return rules

    def tokenize(self, text):
        """Yields (scope name, token text) for every match."""
        stack = []  # open begin/end rules
        for line in text.split("\n"):
            line += "\n"
            pos = 0
            while pos < len(line):
                if stack:
                    rule = stack[-1]
                    candidates = [("end", rule["end_re"], rule)] + [
                        ("rule", r.get("match_re") or r["begin_re"], r)
                        for r in self.flatten(rule["inner"], set())]
                else:
                    candidates = [("rule", r.get("match_re") or r["begin_re"], r)
                                  for r in self.top]
                best = None
                for kind, regex, rule in candidates:
                    found = regex.search(line, pos)
                    if found and (best is None or found.start() < best[1].start()):
                        best = (kind, found, rule)
                if best is None:
                    break
                kind, found, rule = best
                if kind == "end":
                    stack.pop()
                elif "begin" in rule:
                    stack.append(rule)
                    yield rule.get("name", ""), found.group(0)
                else:
                    yield rule.get("name", ""), found.group(0)
                pos = max(found.end(), pos + (found.end() == pos))


def main():
    try:
        data = json.loads(GRAMMAR.read_text())
    except (OSError, json.JSONDecodeError) as error:
        print(f"FAIL: {GRAMMAR}: {error}")
        return 1
    grammar = Grammar(data)
    for key in ("name", "scopeName", "patterns", "repository"):
        if key not in data:
            fail(f"grammar: no {key!r}")

    keywords, builtins = compiler_keywords(), compiler_builtins()
    if len(keywords) < 10 or len(builtins) < 20:
        fail("could not read the compiler's keywords or builtins")
    repo = data["repository"]
    grammar_keywords = set()
    for pattern in repo["keywords"]["patterns"]:
        grammar_keywords |= alternatives(pattern["match"])
    if grammar_keywords != keywords:
        fail(f"grammar keywords differ from the lexer's: "
             f"missing {sorted(keywords - grammar_keywords)}, "
             f"extra {sorted(grammar_keywords - keywords)}")
    # The conversions f32(…) etc. are builtins that the grammar colours as
    # the scalar types they are named after.
    grammar_builtins = alternatives(repo["builtins"]["match"]) | (
        alternatives(repo["types"]["match"]) & builtins)
    if grammar_builtins != builtins:
        fail(f"grammar builtins differ from builtins.def: "
             f"missing {sorted(builtins - grammar_builtins)}, "
             f"extra {sorted(grammar_builtins - builtins)}")
    vim = (ROOT / "editors/vim/syntax/delta.vim").read_text()
    vim_words = set(re.findall(r"\w+", " ".join(
        line for line in vim.splitlines() if line.startswith("syn keyword"))))
    emacs = (ROOT / "editors/emacs/delta-mode.el").read_text()
    emacs_words = set(re.findall(r'"(\w+)"', emacs))
    for name, words in (("vim syntax", vim_words), ("emacs mode", emacs_words)):
        missing = (keywords | builtins) - words
        if missing:
            fail(f"{name} lacks {sorted(missing)}")

    files = sorted(path for folder in ("lang-tests", "examples", "stdlib")
                   for path in (ROOT / folder).rglob("*.dl"))
    checked = 0
    caught = 0  # files with invalid tokens: proves the tokenizer looks
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        invalid = [token for scope, token in grammar.tokenize(text)
                   if scope.startswith("invalid")]
        expected = path.parent.name == "syntax" and path.name.startswith("fail_")
        caught += bool(invalid)
        if invalid and not expected:
            fail(f"{path.relative_to(ROOT)}: invalid tokens {invalid[:5]}")
        checked += 1
    if caught == 0:
        fail("no syntax/fail_* test produced an invalid token")
    for failure in failures:
        print("FAIL:", failure)
    print(f"grammar: {checked} files tokenized, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
