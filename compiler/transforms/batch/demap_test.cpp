// Unit tests of demap: Delta programs print the same through the
// interpreter before and after demap, and lose their maps.
#include "compiler/transforms/batch/demap.h"

#include <llvm/Support/Error.h>
#include <llvm/Support/SourceMgr.h>

#include <memory>
#include <string>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/lower/lower.h"
#include "compiler/sema/sema.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::transforms::testing;

namespace {

struct Lowered {
  sema::CheckResult checked;
  std::unique_ptr<ir::Module> module;
};

Lowered Lower(const std::string& source) {
  Lowered lowered;
  llvm::SourceMgr sources;
  std::string errors;
  llvm::raw_string_ostream err(errors);
  DiagnosticEngine diags(sources, err);
  lowered.checked = sema::CheckSource(source, "test.dl", sources, diags,
                                      sema::CheckOptions{});
  if (lowered.checked.ok && !diags.HasErrors())
    lowered.module = lower::LowerProgram(*lowered.checked.program, diags);
  if (!lowered.module) llvm::errs() << errors;
  return lowered;
}

std::string Run(const ir::Module& module) {
  std::string text;
  llvm::raw_string_ostream out(text);
  if (llvm::Error error = interpreter::RunMain(module, out))
    out << llvm::toString(std::move(error)) << "\n";
  return text;
}

// Demaps `source`'s module; its output must not change and `maps_left`
// maps must remain. Returns the demapped IR.
std::string CheckDemap(const std::string& source, size_t maps_left = 0) {
  Lowered lowered = Lower(source);
  REQUIRE(lowered.module);
  ir::Module& module = *lowered.module;
  std::string before = Run(module);
  batch::Demap(module);
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Run(module) == before);
  CHECK(Count(text, " map [") == maps_left);
  if (Count(text, " map [") != maps_left) llvm::errs() << text;
  return text;
}

}  // namespace

TEST_CASE("a lifted matvec becomes one contraction") {
  std::string text = CheckDemap(R"(
dim k = 3;
dim o = 2;
dim b = 4;
fn matvec(w: f32[o, k], x: f32[k]) -> f32[o] { sum(w * x, k) }
fn main() {
  let w = for i in o, j in k { f32(i64(i) * 3 + i64(j)) };
  let xs = for n in b, j in k { f32(i64(n) - i64(j)) };
  print(matvec(w, xs));
  print(vmap(|x: f32[k]| -> f32[o] { matvec(w, x) }, over: b)(xs));
}
)");
  CHECK(Count(text, "call") == 0);
  CHECK(Contains(text, "reduce.sum [k]"));
  CHECK(Contains(text, ": f32[k, o, b]\n"));
  CHECK(Count(text, "reduce.sum [k]") == 3);
}

TEST_CASE("elementwise ops, conversions and constants") {
  CheckDemap(R"(
dim d = 5;
fn f(x: f32, n: i64) -> f32 { exp(x) * 0.5 + f32(n % 3) - sqrt(abs(x)) }
fn main() {
  let xs = for i in d { f32(i64(i)) - 2.0 };
  let ns = for i in d { i64(i) * 7 };
  print(f(xs, ns));
  print(for i in d { f(xs[i], 4) });
  print(for i in d { max(xs[i], 0.0) + 1.0 });
}
)");
}

TEST_CASE("reductions, cumsum, broadcast and rename inside a map") {
  CheckDemap(R"(
dim d = 3;
dim e = 4;
dim e2 = e;
fn g(x: f32[e]) -> f32 {
  let c = cumsum(x, e);
  sum(c, e) + max(x, e) + f32(argmax(x, e)) + sum(rename(x, e, e2), e2)
}
fn main() {
  let xs = for i in d, j in e { f32((i64(i) * 5 + i64(j) * 3) % 7) };
  print(g(xs));
  print(for i in d { sum(broadcast(xs[i], d), d) });
}
)");
}

TEST_CASE("gather with batched indices and a lane that has the map's dim") {
  CheckDemap(R"(
dim d = 4;
dim v = 6;
fn main() {
  let table = for j in v { f32(i64(j) * i64(j)) };
  let ids = for i in d { v((i64(i) * 5) % 6) };
  print(for i in d { table[ids[i]] + table[v: i64(i)] });
  let xs = for i in d { f32(i64(i)) };
  print(for i in d { sum(xs - f32(i64(i)) * xs, d) });
}
)");
}

TEST_CASE("if with a batched condition runs both branches") {
  std::string text = CheckDemap(R"(
dim d = 6;
fn f(x: f32) -> f32 { if x > 2.0 { x * 10.0 } else if x > 0.5 { -x } else { 0.0 } }
fn main() {
  let xs = for i in d { f32(i64(i)) * 0.75 };
  print(f(xs));
  let flag = true;
  print(for i in d { if flag { xs[i] } else { 1.0 } });
}
)");
  CHECK(Contains(text, "select"));
}

TEST_CASE("loop with batched state and with batched bounds") {
  CheckDemap(R"(
dim d = 4;
dim t = 5;
fn power(x: f32, n: i64) -> f32 { loop acc = 1.0 for k in 0..n { acc * x } }
fn scan(x: f32[t]) -> f32 { loop acc = 0.0 for s in t { acc * 0.5 + x[s] } }
fn main() {
  let xs = for i in d { f32(i64(i)) + 0.5 };
  let ns = for i in d { 3 - i64(i) };
  print(power(xs, 3));
  print(power(2.0, ns));
  print(power(xs, ns));
  let ys = for i in d, s in t { f32(i64(i) * i64(s)) };
  print(scan(ys));
}
)");
}

TEST_CASE("a vmapped while becomes one masked loop") {
  std::string text = CheckDemap(R"(
dim b = 5;
fn steps(x: i64) -> i64 {
  let (n, s) = loop (n, s) = (x, 0) while n > 1 {
    (if n % 2 == 0 { n / 2 } else { 3 * n + 1 }, s + 1)
  };
  s
}
fn main() {
  let xs = for i in b { i64(i) * 3 + 1 };
  print(vmap(steps, over: b)(xs));
}
)");
  CHECK(Count(text.substr(0, text.find("func @steps")), "while") == 1);
  CHECK(Contains(text, "reduce.max [b]"));
}

TEST_CASE("reduce with a custom combiner and nested maps") {
  CheckDemap(R"(
dim a = 3;
dim c = 4;
fn mul(x: f32, y: f32) -> f32 { x * y }
fn main() {
  let xs = for i in a, j in c { f32(i64(i) + i64(j)) * 0.5 + 1.0 };
  print(for i in a { reduce(mul, 1.0, xs[i], c) });
  print(for i in a { for j in c { xs[i, j] * f32(i64(i)) } });
  print(vmap(vmap(|x: f32| -> f32 { x * 2.0 }, over: a), over: c)(xs));
}
)");
}

TEST_CASE("a map that prints stays a map") {
  CheckDemap(R"(
dim d = 3;
fn main() {
  let xs = for i in d { f32(i64(i)) };
  print(xs);
}
)");
}

TEST_CASE("ops that could fail in lanes that skip them are guarded") {
  std::string text = CheckDemap(R"(
dim b = 4;
fn safe_div(n: i64) -> i64 { if n != 0 { 100 / n } else { 0 } }
fn harmonic(n: i64) -> i64 {
  let (k, s) = loop (k, s) = (n, 0) while k > 0 { (k - 1, s + 60 / k) };
  s
}
fn pick(n: i64) -> f32 {
  let xs = for i in b { f32(i64(i)) };
  if n < 4 { xs[b: n] } else { -1.0 }
}
fn main() {
  let ns = for i in b { i64(i) * 2 };
  print(safe_div(ns));
  print(harmonic(ns));
  print(pick(ns));
}
)");
  CHECK(Contains(text, "select"));
}
