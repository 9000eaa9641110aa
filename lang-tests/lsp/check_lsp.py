#!/usr/bin/python3
"""A recorded LSP session against `dlc lsp`: initialize, didOpen (with an
error, then fixed by didChange), hover, definition, completion, document
symbols, formatting, references, rename, signature help, UTF-16 positions,
a change that AD rejects, shutdown and exit; every response is checked.
Usage:
check_lsp.py PATH/TO/dlc"""
import json
import os
import re
import subprocess
import sys

DOC = """import nn;
dim feat = 4;
dim batch = 2;

/// The square of x,
/// elementwise when lifted.
fn square(x: f32) -> f32 { x * x }

fn main() {
  let w = for j in feat { 0.5 };
  let xs = for b in batch, j in feat { f32(j) };
  let y = square(xs);
  print(sum(w * y, feat));
  print([batch: 1.0, 2.0]);
  print(nn.gelu(1.0));
}
"""
BROKEN = DOC.replace("square(xs)", "squar(xs)")
# Checks, but reverse mode cannot differentiate the reduction (E0508): the
# front half runs too, and its error has the reduction's range.
NOT_DIFFERENTIABLE = """dim n = 4;
fn shifted(x: f32[n], w: f32) -> f32 { reduce(|a: f32, b: f32| a + b - w, w, x, n) }
fn main() { print(grad(shifted, wrt: w)(for i in n { 1.0 }, 2.0)); }
"""
# Characters beyond ASCII before an error and a hovered name on one line:
# positions count UTF-16 code units (é is one, 𝔼 two), not bytes.
UNICODE = """import nn;
fn square(x: f32) -> f32 { x * x }
fn main() { print("é𝔼", squar(2.0), square(3.0)); }
"""
# A call being typed does not parse; signature help finds its callee in the
# last text that checked (UNICODE) and counts the commas before the cursor.
TYPING = UNICODE + "fn g(l: nn.Dense[a, b]) -> f32 { sum(nn.dense(l, "
URI = "file:///tmp/delta_lsp_test/doc.dl"


def utf16_position(text, needle, offset=0):
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    start = text.rfind("\n", 0, index) + 1
    return {"line": line,
            "character": len(text[start:index].encode("utf-16-le")) // 2}


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_messages(data):
    messages = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        messages.append(json.loads(rest[:length]))
        data = rest[length:]
    return messages


def position_of(text, needle, offset=0):
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    return {"line": line, "character": index - (text.rfind("\n", 0, index) + 1)}


def main():
    dlc = sys.argv[1]
    doc = {"uri": URI}
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": None, "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen",
         "params": {"textDocument": {"uri": URI, "languageId": "delta",
                                     "version": 1, "text": BROKEN}}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange",
         "params": {"textDocument": {"uri": URI, "version": 2},
                    "contentChanges": [{"text": DOC}]}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "xs);", 0)}},
        {"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "w * y", 2)}},
        {"jsonrpc": "2.0", "id": 4, "method": "textDocument/definition",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "square(xs)", 1)}},
        {"jsonrpc": "2.0", "id": 5, "method": "textDocument/completion",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "print(")}},
        {"jsonrpc": "2.0", "id": 6, "method": "textDocument/hover",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "feat));", 1)}},
        {"jsonrpc": "2.0", "id": 7, "method": "no/suchMethod", "params": {}},
        {"jsonrpc": "2.0", "id": 9, "method": "textDocument/hover",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "batch: 1.0", 1)}},
        {"jsonrpc": "2.0", "id": 10, "method": "textDocument/hover",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "[batch: 1.0")}},
        {"jsonrpc": "2.0", "id": 12, "method": "textDocument/completion",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "nn.gelu", 3)}},
        {"jsonrpc": "2.0", "id": 14, "method": "textDocument/documentSymbol",
         "params": {"textDocument": doc}},
        {"jsonrpc": "2.0", "id": 15, "method": "textDocument/formatting",
         "params": {"textDocument": doc,
                    "options": {"tabSize": 2, "insertSpaces": True}}},
        {"jsonrpc": "2.0", "id": 16, "method": "textDocument/references",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "square(xs)", 2),
                    "context": {"includeDeclaration": True}}},
        {"jsonrpc": "2.0", "id": 17, "method": "textDocument/rename",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "w * y"),
                    "newName": "weights"}},
        {"jsonrpc": "2.0", "id": 18, "method": "textDocument/rename",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "w * y"),
                    "newName": "let"}},
        {"jsonrpc": "2.0", "id": 21, "method": "textDocument/hover",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "sum(w", 1)}},
        {"jsonrpc": "2.0", "id": 11, "method": "textDocument/hover",
         "params": {"textDocument": doc,
                    "position": position_of(DOC, "square(xs)", 1)}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange",
         "params": {"textDocument": {"uri": URI, "version": 3},
                    "contentChanges": [{"text": NOT_DIFFERENTIABLE}]}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange",
         "params": {"textDocument": {"uri": URI, "version": 4},
                    "contentChanges": [{"text": UNICODE}]}},
        {"jsonrpc": "2.0", "id": 13, "method": "textDocument/hover",
         "params": {"textDocument": doc,
                    "position": utf16_position(UNICODE, "square(3", 1)}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange",
         "params": {"textDocument": {"uri": URI, "version": 5},
                    "contentChanges": [{"text": TYPING}]}},
        {"jsonrpc": "2.0", "id": 19, "method": "textDocument/signatureHelp",
         "params": {"textDocument": doc,
                    "position": utf16_position(TYPING, "l, ", 3)}},
        {"jsonrpc": "2.0", "id": 8, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    stdin = b"".join(frame(r) for r in requests)
    run = subprocess.run([dlc, "lsp"], input=stdin, capture_output=True,
                         timeout=60)
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    expect(run.returncode == 0, f"exit status {run.returncode} after shutdown")
    messages = read_messages(run.stdout)
    by_id = {m["id"]: m for m in messages if "id" in m}
    diagnostics = [m["params"] for m in messages
                   if m.get("method") == "textDocument/publishDiagnostics"]

    caps = by_id[1]["result"]["capabilities"]
    expect(caps.get("hoverProvider") and caps.get("definitionProvider")
           and "completionProvider" in caps
           and caps.get("documentSymbolProvider")
           and caps.get("documentFormattingProvider")
           and caps.get("referencesProvider") and caps.get("renameProvider")
           and "signatureHelpProvider" in caps,
           f"capabilities: {caps}")
    # As you type: the typo is reported at its range, then cleared.
    expect(len(diagnostics) == 5, f"five publishDiagnostics: {diagnostics}")
    first = diagnostics[0]["diagnostics"]
    expect(len(first) >= 1 and "squar" in first[0]["message"]
           and first[0]["range"]["start"] == position_of(BROKEN, "squar(xs)")
           and first[0]["code"] == "E0201", f"typo diagnostic: {first}")
    expect(diagnostics[1]["diagnostics"] == [], "fixed text has no errors")
    third = diagnostics[2]["diagnostics"] if len(diagnostics) > 2 else []
    expect(len(third) == 1 and third[0]["code"] == "E0508"
           and third[0]["range"]["start"]
           == position_of(NOT_DIFFERENTIABLE, "reduce(")
           and "reverse-mode AD cannot differentiate" in third[0]["message"]
           and "doc.dl" not in third[0]["message"],
           f"AD diagnostic: {third}")
    hover = by_id[2]["result"]["contents"]["value"]
    expect("xs: f32[feat, batch]" in hover or "xs: f32[batch, feat]" in hover,
           f"hover on xs: {hover}")
    hover = by_id[3]["result"]["contents"]["value"]
    expect("f32[feat" in hover and "batch" in hover, f"hover on w * y: {hover}")
    definition = by_id[4]["result"]
    expect(definition["uri"] == URI and definition["range"]["start"] ==
           position_of(DOC, "square(x:"), f"definition of square: {definition}")
    labels = {item["label"] for item in by_id[5]["result"]["items"]}
    for name in ["feat", "batch", "square", "w", "xs", "sum", "let", "grad"]:
        expect(name in labels, f"completion lacks {name}")
    hover = by_id[6]["result"]["contents"]["value"]
    expect("dim feat = 4" in hover, f"hover on a dim: {hover}")
    hover = by_id[9]["result"]["contents"]["value"]
    expect("dim batch = 2" in hover, f"hover on an array literal's dim: {hover}")
    hover = by_id[10]["result"]["contents"]["value"]
    expect("f32[batch]" in hover, f"hover on an array literal: {hover}")
    # UTF-16 positions: the error's range and a hover after non-ASCII text.
    fourth = diagnostics[3]["diagnostics"] if len(diagnostics) > 3 else []
    expect(len(fourth) == 1 and fourth[0]["range"]["start"]
           == utf16_position(UNICODE, "squar(2"),
           f"range after non-ASCII text: {fourth}")
    hover = (by_id[13].get("result") or {}).get("contents", {}).get("value", "")
    expect("fn square(x: f32) -> f32" in hover,
           f"hover after non-ASCII text: {hover}")
    # The document's declarations, each with its whole range and its name's.
    symbols = {s["name"]: s for s in by_id[14]["result"]}
    expect(set(symbols) == {"nn", "feat", "batch", "square", "main"}
           and symbols["square"]["kind"] == 12
           and symbols["square"]["selectionRange"]["start"]
           == position_of(DOC, "square(x:")
           and "fn square(x: f32) -> f32" in symbols["square"]["detail"],
           f"documentSymbol: {by_id[14]}")
    # Formatting: one edit replacing the document with `dlc fmt`'s text.
    edits = by_id[15]["result"]
    expect(len(edits) == 1 and edits[0]["range"]["start"]
           == {"line": 0, "character": 0}
           and "fn square(x: f32) -> f32 { x * x }" in edits[0]["newText"]
           and "print(nn.gelu(1.0));" in edits[0]["newText"],
           f"formatting: {edits}")
    # References of square: its declaration and its call; a rename of w
    # edits its let and its use, and refuses a keyword.
    starts = sorted((r["range"]["start"]["line"], r["range"]["start"]["character"])
                    for r in by_id[16]["result"])
    expect(starts == sorted([tuple(position_of(DOC, p).values())
                             for p in ("square(x:", "square(xs)")]),
           f"references of square: {by_id[16]}")
    edits = by_id[17]["result"]["changes"][URI]
    expect(sorted((e["range"]["start"]["line"], e["range"]["start"]["character"])
                  for e in edits)
           == sorted([tuple(position_of(DOC, p).values())
                      for p in ("w = for", "w * y")])
           and all(e["newText"] == "weights" for e in edits),
           f"rename of w: {by_id[17]}")
    expect("error" in by_id[18], f"rename to a keyword: {by_id[18]}")
    # Signature help inside `nn.dense(l, `: the second parameter is active.
    help_ = by_id[19].get("result") or {}
    signatures = help_.get("signatures", [])
    expect(len(signatures) == 1 and signatures[0]["label"].startswith("fn dense")
           and len(signatures[0]["parameters"]) == 2
           and help_.get("activeParameter") == 1,
           f"signatureHelp: {by_id[19]}")
    # A builtin: its forms and what it does; every builtin has a row.
    hover = by_id[21]["result"]["contents"]["value"]
    expect("sum(x, d)" in hover and "the sum over the named dims" in hover,
           f"hover on a builtin: {hover}")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    names = set()
    for path, pattern in (("compiler/sema/builtins.def",
                           r'DELTA_BUILTIN\((?!Name\b)\w+, "(\w+)"\)'),
                          ("compiler/ir/ops.def",
                           r'DELTA_MATH_OP2?\((?!Name\b)\w+, "(\w+)"')):
        names |= set(re.findall(pattern, open(os.path.join(root, path)).read()))
    documented = set(re.findall(
        r'\{"(\w+)", "', open(os.path.join(root, "compiler/lsp/builtin_docs.h"))
        .read()))
    expect(names and names <= documented,
           f"builtins without hover docs: {sorted(names - documented)}")
    # After `nn.`: nn's members, not the modules nn itself imports.
    labels = {item["label"] for item in by_id[12]["result"]["items"]}
    expect("dense" in labels and "gelu" in labels
           and "math" not in labels and "random" not in labels,
           f"completion after nn.: {sorted(labels)}")
    # A function: its signature with parameter names, then its doc comment.
    hover = by_id[11]["result"]["contents"]["value"]
    expect("fn square(x: f32) -> f32" in hover
           and "The square of x, elementwise when lifted." in hover,
           f"hover on a function: {hover}")
    expect(by_id[7].get("error", {}).get("code") == -32601,
           "unknown methods are answered MethodNotFound")
    expect(by_id[8].get("result", 1) is None, "shutdown answers null")
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        print(run.stdout.decode(errors="replace"))
        print(run.stderr.decode(errors="replace"))
        return 1
    print("lsp session: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
