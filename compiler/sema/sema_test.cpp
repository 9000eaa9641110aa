// Unit tests of semantic analysis: the types of well-typed programs and the
// diagnostics of ill-typed ones.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "compiler/sema/sema.h"

#include <doctest/doctest.h>

#include <string>

namespace {

struct Checked {
  bool ok = false;
  std::string types;        // PrintTypes with locals
  std::string diagnostics;  // rendered text
};

Checked Check(const std::string& source) {
  llvm::SourceMgr sources;
  std::string diagnostics;
  llvm::raw_string_ostream diag_stream(diagnostics);
  delta::DiagnosticEngine diags(sources, diag_stream);
  delta::sema::CheckOptions options;
  auto result =
      delta::sema::CheckSource(source, "test.dl", sources, diags, options);
  Checked checked;
  checked.ok = result.ok;
  llvm::raw_string_ostream types(checked.types);
  if (result.program)
    delta::sema::PrintTypes(*result.program, types, {.locals = true});
  checked.diagnostics = diagnostics;
  return checked;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("named contraction and lifting of a user function") {
  Checked c = Check(R"(
dim feat = 4;
fn square(x: f32) -> f32 { x * x }
export fn loss[n](w: f32[feat], x: f32[n, feat], y: f32[n]) -> f32 {
  let pred = sum(w * x, feat);
  mean(square(pred - y))
}
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
  CHECK(Has(c.types,
            "export fn loss[n](w: f32[feat], x: f32[feat, n], "
            "y: f32[n]) -> f32"));
  CHECK(Has(c.types, "  let pred: f32[n]"));
}

TEST_CASE("dims combine by union where values combine") {
  Checked c = Check(R"(
dim inp = 3;
dim out = 2;
fn f(a: f32[inp], b: f32[out]) -> f32[inp, out] { a + b }
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
}

TEST_CASE("dims differ where a type is expected, with a rename fix") {
  Checked c = Check(R"(
dim inp = 3;
dim out = 3;
fn f(x: f32[out]) -> f32[inp] { x }
)");
  CHECK_FALSE(c.ok);
  CHECK(Has(c.diagnostics,
            "dims differ: f32[inp] vs f32[out]; use rename(x, out, inp)"));
  CHECK(Has(c.diagnostics, "test.dl:4:"));
}

TEST_CASE("ambiguous lifting names the size parameter and the fix") {
  Checked c = Check(R"(
dim batch = 2;
dim classes = 3;
fn softmax[d](x: f32[d]) -> f32[d] { let e = exp(x - max(x, d)); e / sum(e, d) }
fn main() {
  let logits = for b in batch, c in classes { 1.0 };
  let bad = softmax(logits);
}
)");
  CHECK_FALSE(c.ok);
  CHECK(Has(c.diagnostics, "size parameter `d` could be"));
  CHECK(Has(c.diagnostics, "softmax[d: "));
  CHECK(Has(c.diagnostics, "[E0404]"));
}

// Every binding that an ambiguity error suggests (in its message and in the
// note of each candidate), put in place of the call's callee, checks.
void CheckEverySuggestionResolves(const std::string& source,
                                  const std::string& call,
                                  const std::string& callee, size_t notes) {
  Checked c = Check(source);
  INFO(c.diagnostics);
  REQUIRE_FALSE(c.ok);
  REQUIRE(Has(c.diagnostics, "[E0404]"));
  std::vector<std::string> fixes;
  for (size_t at = c.diagnostics.find(callee + "["); at != std::string::npos;
       at = c.diagnostics.find(callee + "[", at + 1)) {
    size_t end = c.diagnostics.find("](", at);
    REQUIRE(end != std::string::npos);
    fixes.push_back(c.diagnostics.substr(at, end + 1 - at));
  }
  CHECK(fixes.size() == notes + 1);  // the message's and one per candidate
  for (const std::string& fix : fixes) {
    std::string fixed = source;
    size_t at = fixed.find(call);
    REQUIRE(at != std::string::npos);
    fixed.replace(at, callee.size(), fix);
    Checked again = Check(fixed);
    INFO(fix);
    INFO(again.diagnostics);
    CHECK(again.ok);
  }
}

TEST_CASE("every suggested binding of an ambiguous call resolves it") {
  CheckEverySuggestionResolves(R"(
dim batch = 2;
dim classes = 3;
fn softmax[d](x: f32[d]) -> f32[d] { let e = exp(x - max(x, d)); e / sum(e, d) }
fn main() { print(softmax(for b in batch, c in classes { 1.0 })); }
)",
                               "softmax(for", "softmax", 2);
  CheckEverySuggestionResolves(R"(
dim batch = 2;
dim classes = 3;
dim c = 4;
fn mean_rows[n, m](x: f32[n, m]) -> f32[m] { sum(x, n) / f32(size(n)) }
fn g(x: f32[batch, classes, c]) -> f32 { sum(mean_rows(x)) }
)",
                               "mean_rows(x)", "mean_rows", 6);
  // Multi-head attention: `s` and `t` are used together (the scores are
  // f32[s, t]), so binding both to one dim is no candidate; two remain.
  CheckEverySuggestionResolves(R"(
dim seq = 4;
dim kseq = 4;
dim heads = 2;
dim hd = 3;
fn attention[s, t, e, f](q: f32[s, e], k: f32[t, e], v: f32[t, f]) -> f32[s, f] {
  let scores = sum(q * k, e) / sqrt(f32(size(e)));
  let w = exp(scores) / sum(exp(scores), t);
  sum(w * v, t)
}
fn g(q: f32[seq, heads, hd], k: f32[kseq, heads, hd], v: f32[kseq, heads, hd]) -> f32[seq, heads, hd] {
  attention(q, k, v)
}
)",
                               "attention(q, k, v)", "attention", 2);
}

TEST_CASE("size parameters used together cannot be bound to one dim") {
  // Explicitly, at the call.
  Checked c = Check(R"(
dim n = 3;
fn outer[s, t](x: f32[s], y: f32[t]) -> f32 { sum(x * y) }
fn main() { let x = for i in n { 1.0 }; print(outer[s: n, t: n](x, x)); }
)");
  CHECK_FALSE(c.ok);
  CHECK(Has(c.diagnostics,
            "its size parameters `s` and `t` would both be "
            "`n`, but it uses them together in f32[s, t]"));
  // Through a callee declared later, and through a generic wrapper: the
  // pairs reach `wrap` after the module's bodies are checked.
  Checked later = Check(R"(
dim n = 3;
fn wrap[a, b](x: f32[a], y: f32[b]) -> f32 { outer(x, y) }
fn main() { let x = for i in n { 1.0 }; print(wrap(x, x)); }
fn outer[s, t](x: f32[s], y: f32[t]) -> f32 { sum(x * y) }
)");
  CHECK_FALSE(later.ok);
  CHECK(Has(later.diagnostics,
            "dim n would appear twice: this call binds `wrap`'s size "
            "parameters `a` and `b` both to `n`"));
  CHECK(Has(later.diagnostics, "[E0303]"));
  // Size parameters never used together may name one dim.
  Checked apart = Check(R"(
dim n = 3;
fn both[a, b](x: f32[a], y: f32[b]) -> f32 { sum(x) + sum(y) }
fn main() { let x = for i in n { 1.0 }; print(both(x, x)); }
)");
  INFO(apart.diagnostics);
  CHECK(apart.ok);
}

TEST_CASE("a reduction over the wrong dim is named, with the fix") {
  Checked c = Check(R"(
dim inp = 3;
dim out = 2;
fn layer(w: f32[inp, out], x: f32[inp]) -> f32[out] { sum(w * x, out) }
)");
  CHECK(Has(c.diagnostics,
            "`sum(w * x, out)` reduces over `out` and keeps "
            "`inp`; reduce over `inp` instead: sum(w * x, inp)"));
  CHECK_FALSE(Has(c.diagnostics, "rename"));
  // Sizes that differ get no rename; equal sizes get one quoting the value.
  Checked sized = Check(R"(
dim a = 3;
dim b = 2;
dim c = 3;
fn f(x: f32[a]) -> f32[b] { x * 2.0 }
fn g(x: f32[a]) -> f32[c] { x * 2.0 }
)");
  CHECK(Has(sized.diagnostics,
            "`a` has size 3 and `b` has size 2, so no "
            "rename can turn one into the other"));
  CHECK(Has(sized.diagnostics, "use rename(x * 2.0, a, c)"));
}

TEST_CASE("binding a size parameter by name lifts over the rest") {
  Checked c = Check(R"(
dim batch = 2;
dim classes = 3;
fn softmax[d](x: f32[d]) -> f32[d] { let e = exp(x - max(x, d)); e / sum(e, d) }
fn main() {
  let logits = for b in batch, c in classes { 1.0 };
  let p = softmax[d: classes](logits);
}
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
  CHECK(Has(c.types, "  let p: f32[batch, classes]"));
}

TEST_CASE("literal types are solved across a statement") {
  Checked c = Check(R"(
fn main() {
  let z = 1.0f64;
  let a = 2.5 * z;
  let b = 1;
  let c = 0.5;
  let d = f32(1 / 2);
  let e = 3 * 0.5;
}
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
  CHECK(Has(c.types, "  let a: f64"));
  CHECK(Has(c.types, "  let b: i64"));
  CHECK(Has(c.types, "  let c: f32"));
  CHECK(Has(c.types, "  let d: f32"));
  CHECK(Has(c.types, "  let e: f32"));
}

TEST_CASE("structs, lifting of structs and vector-space arithmetic") {
  Checked c = Check(R"(
dim feat = 4;
dim hidden = 3;
dim classes = 2;
dim batch = 5;
struct Dense[i, o] { w: f32[i, o], b: f32[o] }
struct Mlp { l1: Dense[feat, hidden], l2: Dense[hidden, classes] }
fn step(p: Mlp, g: Mlp) -> Mlp { p - 0.1 * g }
fn avg(ps: Mlp[batch]) -> Mlp { mean(ps, batch) }
fn first(p: Mlp) -> f32[feat, hidden] { p.l1.w }
fn update(p: Mlp, l: Dense[feat, hidden]) -> Mlp { Mlp { l1: l, ..p } }
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
  CHECK(Has(c.types, "struct Dense[i, o] { w: f32[i, o], b: f32[o] }"));
  CHECK(Has(c.types, "fn avg(ps: Mlp[batch]) -> Mlp"));
}

TEST_CASE("loops, comprehensions, indices and local dims") {
  Checked c = Check(R"(
dim feat = 4;
dim time = 6;
fn shift[t](x: f32[t]) -> f32 {
  dim t1 = size(t) - 1;
  sum(for i in t1 { x[t: i64(i) + 1] - x[t: i64(i)] })
}
fn main() {
  let sq = for i in feat { f32(i) * f32(i) };
  let s = loop acc = 0.0 for k in 0..10 { acc + f32(k) };
  let (a, b) = loop (a, b) = (0.0, 1.0) while a < 100.0 { (b, a + b) };
  let h = loop st = 0.0 for t in time { st + sq[feat: 1] };
  let y = if s > 0.0 { s } else if s > -1.0 { 0.5 * s } else { 0.0 };
}
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
  CHECK(Has(c.types, "  let sq: f32[feat]"));
  CHECK(Has(c.types, "  let s: f32"));
  CHECK(Has(c.types, "  let a: f32"));
}

TEST_CASE("array literals: element types combine, dims by union") {
  Checked c = Check(R"(
dim k = 3;
dim n = 2;
dim m = 4;
fn f(x: f32[n], y: f32[m], z: f64) {
  let a = [k: x, y, 1];
  let b = [k: z, 0.5, 2];
  let c = [n: (1, true), (2, false)];
  let d = [k: 1, 2, 3];
}
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
  CHECK(Has(c.types, "  let a: f32[k, n, m]"));
  CHECK(Has(c.types, "  let b: f64[k]"));
  CHECK(Has(c.types, "  let c: (i64[n], bool[n])"));
  CHECK(Has(c.types, "  let d: i64[k]"));
}

TEST_CASE("array literals: size, element and dim errors") {
  Checked c = Check(R"(
dim k = 3;
fn f(x: f32, i: i32) -> f32 { sum([k: x, x]) + sum([k: x, i, x]) }
)");
  CHECK_FALSE(c.ok);
  CHECK(Has(c.diagnostics,
            "has 2 elements, but dim `k` has size 3; give 3 elements"));
  CHECK(Has(c.diagnostics, "element 2 is i32 and element 1 is f32"));
}

TEST_CASE("gather with an index array and matched dims") {
  Checked c = Check(R"(
dim batch = 2;
dim classes = 3;
dim vocab = 10;
dim emb_dim = 4;
fn pick(logp: f32[batch, classes], labels: classes[batch]) -> f32[batch] {
  logp[labels]
}
fn embed(emb: f32[vocab, emb_dim], tok: vocab[batch]) -> f32[batch, emb_dim] {
  emb[tok]
}
fn embed_ids(emb: f32[vocab, emb_dim], ids: i64[batch]) -> f32[batch, emb_dim] {
  emb[vocab: ids]
}
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
}

TEST_CASE("per-example gradients through lifting of grad") {
  Checked c = Check(R"(
dim feat = 3;
dim batch = 4;
fn loss1(w: f32[feat], x: f32[feat], y: f32) -> f32 { let e = dot(w, x, feat) - y; e * e }
fn main() {
  let w = for j in feat { 0.1 };
  let xs = for b in batch, j in feat { f32(i64(b) + i64(j)) };
  let ys = for b in batch { 1.0 };
  let per_example = grad(loss1)(w, xs, ys);
  let step = w - 0.01 * mean(per_example, batch);
  print(step);
}
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
  CHECK(Has(c.types, "  let per_example: f32[feat, batch]"));
  CHECK(Has(c.types, "  let step: f32[feat]"));
}

TEST_CASE("transformations: jvp, vjp, vmap, value_and_grad, wrt") {
  Checked c = Check(R"(
dim n = 3;
dim b = 2;
fn f(x: f32[n], y: f32) -> f32 { sum(x * y) }
fn g(x: f32) -> f32 { x * x }
fn main() {
  let x = for i in n { 1.0 };
  let (v, t) = jvp(f, (x, 2.0), (x, 1.0));
  let (y, pb) = vjp(f, x, 2.0);
  let (dx, dy) = pb(1.0);
  let gs = grad(f, wrt: (x, y))(x, 2.0);
  let vg = value_and_grad(g)(3.0);
  let batched = vmap(g, over: b)(for k in b { 1.0 });
  let hvp = jvp(grad(g), 1.0, 1.0);
  let gg = grad(grad(g))(1.0);
}
)");
  INFO(c.diagnostics);
  CHECK(c.ok);
  CHECK(Has(c.types, "  let dx: f32[n]"));
  CHECK(Has(c.types, "  let gs: (f32[n], f32)"));
  CHECK(Has(c.types, "  let vg: (f32, f32)"));
  CHECK(Has(c.types, "  let batched: f32[b]"));
  CHECK(Has(c.types, "  let gg: f32"));
}

TEST_CASE("custom vjp rules are checked against their function") {
  Checked good = Check(R"(
fn logsumexp[d](x: f32[d]) -> f32 { let m = max(x, d); m + log(sum(exp(x - m), d)) }
@vjp(logsumexp)
fn logsumexp_vjp[d](x: f32[d], y: f32, dy: f32) -> f32[d] { dy * exp(x - y) }
)");
  INFO(good.diagnostics);
  CHECK(good.ok);
  Checked bad = Check(R"(
fn sq(x: f32) -> f32 { x * x }
@vjp(sq)
fn sq_vjp(x: f32, dy: f32) -> f32 { dy }
)");
  CHECK_FALSE(bad.ok);
  CHECK(Has(bad.diagnostics, "[E0505]"));
}

TEST_CASE("errors: names, shadowing, print, recursion, grad") {
  CHECK(Has(Check("fn f() -> f32 { undefined_name }").diagnostics,
            "unknown name `undefined_name`"));
  CHECK(
      Has(Check("dim n = 2;\nfn f(x: f32) -> f32 { let n = x; n }").diagnostics,
          "[E0203]"));
  CHECK(
      Has(Check("fn f(x: f32) -> f32 { print(x); x }").diagnostics, "[E0408]"));
  CHECK(Has(Check("fn f(x: f32) -> f32 { f(x) }").diagnostics, "[E0409]"));
  CHECK(Has(Check("dim n = 2;\nfn f(x: f32[n]) -> f32[n] { x }\n"
                  "fn main() { let g = grad(f); }")
                .diagnostics,
            "[E0502]"));
  CHECK(
      Has(Check("fn f(x: f32) -> f32 { x + 1.0f64 }").diagnostics, "[E0304]"));
  CHECK(Has(Check("fn f32(x: f32) -> f32 { x }").diagnostics,
            "`f32` is a built-in type name"));
}

TEST_CASE("a 2,000-line file checks quickly") {
  std::string source = "dim n = 8;\n";
  for (int i = 0; i < 400; ++i) {
    std::string k = std::to_string(i);
    source += "fn g" + k + "(x: f32[n], y: f32) -> f32 {\n";
    source += "  let a = x * y + 1.0;\n";
    source += "  let b = for i in n { a[i] * 2.0 };\n";
    source += "  sum(b, n) / f32(size(n))\n";
    source += "}\n";
  }
  Checked c = Check(source);
  INFO(c.diagnostics);
  CHECK(c.ok);
}
