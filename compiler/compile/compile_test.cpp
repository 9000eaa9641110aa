// Unit tests of the Compile step: a program compiles, and what it cannot
// compile is reported as a diagnostic at the source that causes it.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "compiler/compile/compile.h"

#include <doctest/doctest.h>

#include <string>

#include "compiler/sema/sema.h"

namespace {

using delta::DiagKind;

struct Compiled {
  std::unique_ptr<delta::ir::Module> module;
  std::vector<delta::Diagnostic> diagnostics;
  std::string text;   // the rendered diagnostics
  unsigned line = 0;  // the line of the first diagnostic, 0 without a span
};

Compiled Compile(const std::string& source,
                 const delta::compile::CompileOptions& options = {}) {
  llvm::SourceMgr sources;
  Compiled compiled;
  llvm::raw_string_ostream text(compiled.text);
  delta::DiagnosticEngine diags(sources, text);
  auto checked = delta::sema::CheckSource(source, "test.dl", sources, diags,
                                          delta::sema::CheckOptions{});
  REQUIRE(checked.ok);
  compiled.module = delta::compile::Compile(*checked.program, diags, options);
  compiled.diagnostics = diags.emitted();
  if (!compiled.diagnostics.empty() &&
      compiled.diagnostics.front().span.IsValid())
    compiled.line =
        sources.FindLineNumber(compiled.diagnostics.front().span.Start());
  return compiled;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("a program compiles, with the hook called after lowering") {
  int calls = 0;
  delta::compile::CompileOptions options;
  options.optimize = false;
  options.after_lower = [&](delta::ir::Module& module) {
    ++calls;
    CHECK(module.FindFunction("main") != nullptr);
  };
  Compiled compiled = Compile(
      "fn f(x: f32) -> f32 { x * x }\n"
      "fn main() { print(grad(f)(3.0)); }\n",
      options);
  CHECK(compiled.module != nullptr);
  CHECK(compiled.diagnostics.empty());
  CHECK(calls == 1);
}

TEST_CASE("what reverse mode cannot differentiate is reported at its op") {
  Compiled compiled = Compile(
      "dim n = 4;\n"
      "fn shifted(x: f32[n], w: f32) -> f32 {\n"
      "  reduce(|a: f32, b: f32| a + b - w, w, x, n)\n"
      "}\n"
      "fn main() { print(grad(shifted, wrt: w)(for i in n { 1.0 }, 2.0)); }\n");
  CHECK(compiled.module == nullptr);
  REQUIRE(compiled.diagnostics.size() == 1);
  CHECK(compiled.diagnostics[0].kind == DiagKind::CannotDifferentiateYet);
  CHECK(compiled.line == 3);
  // The location is the diagnostic's, not pasted into its message.
  CHECK(!Has(compiled.diagnostics[0].message, "test.dl"));
  CHECK(Has(compiled.text, "test.dl:3:"));
  CHECK(Has(compiled.text, "error: reverse-mode AD cannot differentiate"));
  CHECK(Has(compiled.text, "[E0508]"));
  CHECK(Has(compiled.text, "^"));
}

TEST_CASE("a @vjp rule that differentiates its own function is a cycle") {
  Compiled compiled = Compile(
      "fn f(x: f32) -> f32 { x * x }\n"
      "@vjp(f)\n"
      "fn f_vjp(x: f32, y: f32, dy: f32) -> f32 { dy * grad(f)(x) }\n"
      "fn main() { print(grad(f)(3.0)); }\n");
  CHECK(compiled.module == nullptr);
  REQUIRE(!compiled.diagnostics.empty());
  CHECK(compiled.diagnostics[0].kind == DiagKind::Recursion);
  CHECK(compiled.line == 3);
}

}  // namespace
